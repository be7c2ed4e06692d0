// Tests `widelab-cli corpus bible` (app/cli/CorpusCommand): the pairs file written from the real
// SWORD modules (packaging/install-deps.sh installs them), its counts, --keys and --list, and
// its errors: an unknown Bible, a missing option, an --out that cannot be written, and mod2imp
// missing (the real widelab-cli run with a PATH without it), each a message, never a crash.
// And `widelab-cli corpus bible-sections` (a Bible's chapters by section, counted by hand) and
// `bible-text` (the same chapters as plain text), and
// `widelab-cli corpus fortunes` on Debian's fortunes: the classification file and its counts
// (those of Python's re.split over the same files), --list, and its errors.
#include "CliTestSupport.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace widelab;
using namespace widelab::clitest;

namespace {

QStringList fileLines(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

}  // namespace

class TestCliCorpus : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void writesPairs();
    void keysColumn();
    void listsBibles();
    void usageErrors_data();
    void usageErrors();
    void unwritableOut();
    void mod2impMissing();
    void moduleMissing();
    void writesFortunes();
    void writesBibleSections();
    void writesBibleText();
    void fortunesErrors_data();
    void fortunesErrors();
};

void TestCliCorpus::writesPairs()
{
    QTemporaryDir dir;
    const QString file = dir.filePath("web-sparv.tsv");
    const CliResult result = cli({"corpus", "bible", "--from", "web", "--to", "sparv", "--out", file});
    QVERIFY2(result.code == 0, qPrintable(result.err));
    QVERIFY2(result.out.contains(QRegularExpression(R"(wrote .*: 3\d,\d\d\d pairs web -> sparv)")), qPrintable(result.out));
    QVERIFY2(result.out.contains(QRegularExpression(R"(; \d+\.\d s\n)")), qPrintable(result.out));
    const QStringList lines = fileLines(file);
    QVERIFY2(lines.size() > 30500 && lines.size() <= 31102, qPrintable(QString::number(lines.size())));
    QCOMPARE(lines.front(), QStringLiteral("In the beginning, God created the heavens and the earth.\t"
                                           "EN el principio crió Dios los cielos y la tierra."));
    for (const QString& line : lines) {
        QCOMPARE(line.count(QLatin1Char('\t')), 1);
        QVERIFY2(!line.contains('<') && !line.contains('>'), qPrintable(line));
    }
    QVERIFY(QDir(dir.path()).entryList(QDir::Files).size() == 1);  // no temporary left beside it
}

void TestCliCorpus::keysColumn()
{
    QTemporaryDir dir;
    const QString file = dir.filePath("kjv-web.tsv");
    const CliResult result = cli({"corpus", "bible", "--from", "kjv", "--to", "web", "--out", file, "--keys"});
    QVERIFY2(result.code == 0, qPrintable(result.err));
    const QStringList lines = fileLines(file);
    QVERIFY(lines.size() > 30500);
    bool wept = false;
    for (const QString& line : lines)
        if (line.endsWith("\tJohn 11:35")) {
            QCOMPARE(line, QStringLiteral("Jesus wept.\tJesus wept.\tJohn 11:35"));
            wept = true;
        }
    QVERIFY(wept);
}

void TestCliCorpus::listsBibles()
{
    const CliResult result = cli({"corpus", "bible", "--list"});
    QCOMPARE(result.code, 0);
    for (const char* text : {"web\tengWEB2015eb", "sparv\tspaRV1909eb", "kjv\tengKJV2006eb", "libsword-utils"})
        QVERIFY2(result.out.contains(QLatin1String(text)), qPrintable(result.out));
}

void TestCliCorpus::writesFortunes()
{
    if (!QFile::exists(QStringLiteral("/usr/share/games/fortunes/science.dat")))
        QSKIP("Debian's fortunes is not installed (packaging/install-deps.sh installs it)");
    QTemporaryDir dir;
    const QString tsv = dir.filePath("texts.tsv");
    const CliResult result = cli({"corpus", "fortunes", "--categories", "science,work", "--out", tsv});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.out.contains("1,255 fortunes (category, text) in 2 categories: science 625, work 630"),
             qPrintable(result.out));
    const QStringList lines = fileLines(tsv);
    QCOMPARE(lines.size(), 1255);
    QCOMPARE(lines.first(), QStringLiteral("science\t1 + 1 = 3, for large values of 1."));
    QVERIFY(lines.last().startsWith(QStringLiteral("work\t")));
    for (const QString& line : lines)
        QVERIFY2(line.count(QLatin1Char('\t')) == 1, qPrintable(line));
    // The default categories, and the list.
    QCOMPARE(cli({"corpus", "fortunes", "--out", tsv}).code, 0);
    QCOMPARE(fileLines(tsv).size(), 625 + 630 + 1051 + 1203 + 703 + 720);
    const CliResult list = cli({"corpus", "fortunes", "--list"});
    QCOMPARE(list.code, 0);
    QVERIFY2(list.out.contains("science\t625\n") && list.out.contains("definitions\t1,203\n"), qPrintable(list.out));
}

// The chapters of the 66 books: 929 in the Old Testament, 260 in the New, counted by hand by
// section from the books' chapter counts (law: Genesis 50 + Exodus 40 + Leviticus 27 + Numbers
// 36 + Deuteronomy 34; gospels: 28 + 16 + 24 + 21; and so on).
void TestCliCorpus::writesBibleSections()
{
    QTemporaryDir dir;
    const QString tsv = dir.filePath("sections.tsv");
    const CliResult result = cli({"corpus", "bible-sections", "--from", "web", "--out", tsv});
    QVERIFY2(result.code == 0, qPrintable(result.err));
    QVERIFY2(result.out.contains("1,189 chapters of web (engWEB2015eb) as (section, text): law 187, history 277, "
                                 "poetry 243, prophets 272, gospels 89, letters 121"),
             qPrintable(result.out));
    const QStringList lines = fileLines(tsv);
    QCOMPARE(lines.size(), 1189);
    QVERIFY2(lines.first().startsWith(QStringLiteral("law\tIn the beginning, God created the heavens and the earth. ")),
             qPrintable(lines.first().left(80)));
    QVERIFY2(lines.last().startsWith(QStringLiteral("prophets\t")), qPrintable(lines.last().left(80)));  // Revelation 22
    for (const QString& line : lines)
        QVERIFY2(line.count(QLatin1Char('\t')) == 1, qPrintable(line.left(80)));
    // Its errors: another corpus's options, and --from's.
    const CliResult twoBibles = cli({"corpus", "bible-sections", "--from", "web", "--to", "kjv", "--out", tsv});
    QCOMPARE(twoBibles.code, 2);
    QVERIFY2(twoBibles.err.contains("takes --from and --out only"), qPrintable(twoBibles.err));
    const CliResult unknown = cli({"corpus", "bible-sections", "--from", "nasb", "--out", tsv});
    QCOMPARE(unknown.code, 2);
    QVERIFY2(unknown.err.contains("--from") && unknown.err.contains("nasb"), qPrintable(unknown.err));
}

// The same chapters without their sections: plain text for a language model, a chapter a line.
void TestCliCorpus::writesBibleText()
{
    QTemporaryDir dir;
    const QString sectionsFile = dir.filePath("sections.tsv"), textFile = dir.filePath("bible.txt");
    QCOMPARE(cli({"corpus", "bible-sections", "--from", "kjv", "--out", sectionsFile}).code, 0);
    const CliResult result = cli({"corpus", "bible-text", "--from", "kjv", "--out", textFile});
    QVERIFY2(result.code == 0, qPrintable(result.err));
    QVERIFY2(result.out.contains("1,189 chapters of kjv (engKJV2006eb), one a line"), qPrintable(result.out));
    const QStringList sections = fileLines(sectionsFile), lines = fileLines(textFile);
    QCOMPARE(lines.size(), 1189);
    for (int i = 0; i < lines.size(); ++i) {
        QVERIFY2(!lines[i].contains(QLatin1Char('\t')), qPrintable(lines[i].left(80)));
        QCOMPARE(lines[i], sections[i].section(QLatin1Char('\t'), 1));
    }
    const CliResult twoBibles = cli({"corpus", "bible-text", "--from", "web", "--to", "kjv", "--out", textFile});
    QCOMPARE(twoBibles.code, 2);
    QVERIFY2(twoBibles.err.contains("corpus bible-text takes --from and --out only"), qPrintable(twoBibles.err));
}

void TestCliCorpus::fortunesErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");
    QTest::newRow("one category") << QStringList{"corpus", "fortunes", "--categories", "science", "--out", "x.tsv"} << 2
                                  << "--categories: science is one category; a classifier needs two or more";
    QTest::newRow("an empty name") << QStringList{"corpus", "fortunes", "--categories", "science,,work", "--out", "x.tsv"}
                                   << 2 << "--categories: an empty name";
    QTest::newRow("bible's option") << QStringList{"corpus", "fortunes", "--keys", "--out", "x.tsv"} << 2
                                    << "--from, --to and --keys are bible's";
    QTest::newRow("fortunes' option to bible")
        << QStringList{"corpus", "bible", "--categories", "a,b", "--from", "web", "--to", "kjv", "--out", "x.tsv"} << 2
        << "--categories is fortunes' option";
    QTest::newRow("no --out") << QStringList{"corpus", "fortunes"} << 2 << "--out is missing";
    if (QFile::exists(QStringLiteral("/usr/share/games/fortunes/science.dat"))) {
        QTest::newRow("unknown category")
            << QStringList{"corpus", "fortunes", "--categories", "science,astrology", "--out", "x.tsv"} << 1
            << "no fortune category \"astrology\" in /usr/share/games/fortunes (it has: art, ";
        QTest::newRow("twice") << QStringList{"corpus", "fortunes", "--categories", "work,science,work", "--out", "x.tsv"}
                               << 1 << "the fortune category \"work\" is given twice";
    }
}

void TestCliCorpus::fortunesErrors()
{
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, message);
    QTemporaryDir dir;
    for (QString& arg : args)
        if (arg == QLatin1String("x.tsv"))
            arg = dir.filePath("x.tsv");
    const CliResult result = cli(args);
    QCOMPARE(result.code, code);
    QVERIFY2(result.err.contains(message), qPrintable(result.err));
    QVERIFY(!QFile::exists(dir.filePath("x.tsv")));
}

void TestCliCorpus::usageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown Bible") << QStringList{"corpus", "bible", "--from", "nasb", "--to", "web", "--out", "x.tsv"}
                                   << "--from: unknown Bible \"nasb\": the Bibles are web, sparv, kjv";
    QTest::newRow("unknown target") << QStringList{"corpus", "bible", "--from", "web", "--to", "esv", "--out", "x.tsv"}
                                    << "--to: unknown Bible \"esv\"";
    QTest::newRow("no --from") << QStringList{"corpus", "bible", "--to", "web", "--out", "x.tsv"} << "--from is missing";
    QTest::newRow("no --out") << QStringList{"corpus", "bible", "--from", "kjv", "--to", "web"} << "--out is missing";
    QTest::newRow("the same Bible twice") << QStringList{"corpus", "bible", "--from", "kjv", "--to", "kjv", "--out", "x.tsv"}
                                          << "--from and --to are both kjv";
    QTest::newRow("no corpus") << QStringList{"corpus", "--from", "web"} << "which corpus?";
    QTest::newRow("a stray argument") << QStringList{"corpus", "bible", "web"} << "takes options only, not \"web\"";
    QTest::newRow("unknown corpus") << QStringList{"corpus", "quran"} << "unknown corpus \"quran\"";
    QTest::newRow("unknown option") << QStringList{"corpus", "bible", "--form", "web"} << "unknown option --form";
    QTest::newRow("--out's folder missing")
        << QStringList{"corpus", "bible", "--from", "web", "--to", "sparv", "--out", "/nonexistent-folder/pairs.tsv"}
        << "--out: /nonexistent-folder/pairs.tsv: the folder /nonexistent-folder does not exist";
}

void TestCliCorpus::usageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const CliResult result = cli(args);
    QCOMPARE(result.code, 2);
    QVERIFY2(result.err.contains(message), qPrintable(result.err));
}

void TestCliCorpus::unwritableOut()
{
    QTemporaryDir dir;
    // A folder where the file should be.
    QVERIFY(QDir(dir.path()).mkdir("pairs.tsv"));
    CliResult result = cli({"corpus", "bible", "--from", "web", "--to", "sparv", "--out", dir.filePath("pairs.tsv")});
    QCOMPARE(result.code, 2);
    QVERIFY2(result.err.contains("is a folder, not a file"), qPrintable(result.err));
    // A folder that cannot be written (root writes anywhere: nothing to see then).
    if (geteuid() != 0) {
        const QString locked = dir.filePath("locked");
        QVERIFY(QDir(dir.path()).mkdir("locked"));
        QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
        result = cli({"corpus", "bible", "--from", "web", "--to", "sparv", "--out", locked + "/pairs.tsv"});
        QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        QCOMPARE(result.code, 2);
        QVERIFY2(result.err.contains("--out: ") && result.err.contains("EACCES"), qPrintable(result.err));
    }
    // A file that cannot be replaced, whoever runs: /proc's folders take no new file.
    result = cli({"corpus", "bible", "--from", "web", "--to", "sparv", "--out", "/proc/self/pairs.tsv"});
    QVERIFY2(result.code == 1 || result.code == 2, qPrintable(result.err));
    QVERIFY2(result.err.contains("--out: ") && result.err.contains("/proc/self/pairs.tsv"), qPrintable(result.err));
}

void TestCliCorpus::mod2impMissing()
{
    QTemporaryDir empty;
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("PATH", empty.path());
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI),
                  {"corpus", "bible", "--from", "web", "--to", "sparv", "--out", empty.filePath("pairs.tsv")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QCOMPARE(process.exitCode(), 1);
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(err.contains("mod2imp") && err.contains("apt-get install sword-text-web sword-text-sparv")
                 && err.contains("libsword-utils"),
             qPrintable(err));
    QVERIFY(!QFile::exists(empty.filePath("pairs.tsv")));
}

// A module that is not installed: mod2imp's own answer, from a stand-in that gives it.
void TestCliCorpus::moduleMissing()
{
    QTemporaryDir bin;
    const QString fake = bin.filePath("mod2imp");
    std::ofstream(fake.toStdString()) << "#!/bin/sh\necho \"mod2imp: Couldn't find module: $1\" >&2\nexit 255\n";
    QFile::setPermissions(fake, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("PATH", bin.path());
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI),
                  {"corpus", "bible", "--from", "sparv", "--to", "web", "--out", bin.filePath("pairs.tsv")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QCOMPARE(process.exitCode(), 1);
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(err.contains("spaRV1909eb") && err.contains("not installed")
                 && err.contains("apt-get install sword-text-sparv"),
             qPrintable(err));
}

QTEST_GUILESS_MAIN(TestCliCorpus)
#include "tst_cli_corpus.moc"
