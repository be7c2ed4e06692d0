// Tests of the fortunes reader (data/FortunesCorpus): fortune files written here by hand with their strfile index
// beside them, entries split at "%" lines, overstrikes and white space as a classifier should see them, the table's
// order and counts, and the errors naming the category, the folder or the packages.
#include "data/FortunesCorpus.h"
#include "TestSupport.h"

#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace widelab;
using widelab::test::thrownMessage;

namespace {

std::filesystem::path makeFolder(const QTemporaryDir& dir)
{
    const std::filesystem::path root = std::filesystem::path(dir.path().toStdString()) / "fortunes";
    std::filesystem::create_directories(root);
    const auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(root / name, std::ios::binary) << text;
    };
    write("science", "1 + 1 = 3, for large values of 1.\n%\nTwo lines,\n\tindented.\n%\n%\n  \n%\nLast, without a %\n");
    write("science.dat", "index");
    write("science.u8", "ignored");
    write("work", "B\bBold and _\bu_\bn_\bd_\be_\br_\bl_\bi_\bn_\be_\bd\r\n%\r\nWindows line ends\r\n");
    write("work.dat", "index");
    write("notes", "a file without an index is not a category\n%\n");
    return root;
}

}  // namespace

class TestFortunes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void categoriesAreTheIndexedFilesByName();
    void entriesAreOneLineEachAsReadersSeeThem();
    void theTableKeepsTheOrderGivenAndCounts();
    void errorsNameTheCategoryOrTheFolder();
};

void TestFortunes::categoriesAreTheIndexedFilesByName()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    const std::vector<FortuneCategory> categories = fortuneCategories(root);
    QCOMPARE(categories.size(), std::size_t{2});
    QCOMPARE(categories[0].name, std::string("science"));
    QCOMPARE(categories[1].name, std::string("work"));
    QCOMPARE(categories[1].file, root / "work");
}

void TestFortunes::entriesAreOneLineEachAsReadersSeeThem()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    QCOMPARE(readFortunes(root / "science"),
             (std::vector<std::string>{"1 + 1 = 3, for large values of 1.", "Two lines, indented.", "Last, without a %"}));
    // A character struck over (bold, underline) is read once; CR LF ends a line like LF.
    QCOMPARE(readFortunes(root / "work"), (std::vector<std::string>{"Bold and underlined", "Windows line ends"}));
}

void TestFortunes::theTableKeepsTheOrderGivenAndCounts()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    const FortunesTable table = fortunesTable({"work", "science"}, root);
    QCOMPARE(table.perCategory, (std::vector<std::int64_t>{2, 3}));
    QCOMPARE(table.text, std::string("work\tBold and underlined\nwork\tWindows line ends\n"
                                     "science\t1 + 1 = 3, for large values of 1.\nscience\tTwo lines, indented.\n"
                                     "science\tLast, without a %\n"));
    QCOMPARE(defaultFortuneCategories().size(), std::size_t{6});
}

void TestFortunes::errorsNameTheCategoryOrTheFolder()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    const QString unknown = thrownMessage([&] { fortunesTable({"science", "notes"}, root); });
    QVERIFY2(unknown.contains("no fortune category \"notes\"") && unknown.contains("(it has: science, work)"),
             qPrintable(unknown));
    const QString twice = thrownMessage([&] { fortunesTable({"science", "work", "science"}, root); });
    QVERIFY2(twice.contains("\"science\" is given twice"), qPrintable(twice));
    const QString missing = thrownMessage([&] { fortuneCategories(root / "nowhere"); });
    QVERIFY2(missing.endsWith("nowhere: no such folder"), qPrintable(missing));  // not Debian's: no package named
    std::filesystem::remove(root / "science.dat");
    std::filesystem::remove(root / "work.dat");
    const QString none = thrownMessage([&] { fortuneCategories(root); });
    QVERIFY2(none.contains("holds no fortune files"), qPrintable(none));
    // Debian's folder, when the packages are missing, names them.
    if (!std::filesystem::exists(kFortunesFolder)) {
        const QString debian = thrownMessage([&] { fortuneCategories(); });
        QVERIFY2(debian.contains("sudo apt install fortunes fortunes-min"), qPrintable(debian));
    }
}

QTEST_GUILESS_MAIN(TestFortunes)
#include "tst_fortunes.moc"
