// Tests of widelab-cli on a translation run: train, translate (a text, a file's
// lines; beam search by default), eval with BLEU and chrF, inspect with the translation, and the errors
// a user meets (a run that does not translate, missing arguments, a missing corpus).
#include "CliTestSupport.h"

using namespace widelab;
using namespace widelab::clitest;

namespace {

// A small letter-shifting task ("ab cd" -> "bc de") a tiny model partly learns in 150 steps.
std::string shiftedPairs(int count)
{
    std::string lines;
    std::uint32_t state = 11;
    const auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 24; };
    for (int i = 0; i < count; ++i) {
        std::string source, target;
        for (int w = 0; w < 4; ++w) {
            if (w > 0)
                source += ' ', target += ' ';
            for (std::uint32_t l = 0; l <= next() % 3; ++l) {
                const char c = static_cast<char>('a' + next() % 8);
                source += c;
                target += static_cast<char>(c + 1);
            }
        }
        lines += source + "\t" + target + "\n";
    }
    return lines;
}

}  // namespace

class TestCliTranslate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void translatesATextAndAFileLineByLine();
    void evalScoresTheSplitInBleuAndChrf();
    void inspectShowsTheTranslation();
    void errorsNameWhatIsWrong();

private:
    QTemporaryDir m_dir;
    QString m_run;
};

void TestCliTranslate::initTestCase()
{
    const QString pairs = writeFile(m_dir, QStringLiteral("pairs.tsv"), shiftedPairs(400));
    const nlohmann::json document = {
        {"model", {{"head", "translation"}, {"vocab_size", 300}, {"max_len", 32}, {"d_model", 32}, {"layers", 1},
                   {"decoder_layers", 1}, {"heads", 4}, {"ffn_dim", 64}, {"dropout", 0.0}}},
        {"task", {{"kind", "translation"}, {"path", pairs.toStdString()}, {"tokenizer", "bpe"}, {"bpe_merges", 20},
                  {"max_subwords", 31}, {"validation_fraction", 0.1}, {"test_fraction", 0.1}}},
        {"train", {{"steps", 150}, {"batch_size", 16}, {"learning_rate", 0.005}, {"warmup_steps", 10},
                   {"log_every", 50}, {"eval_every", 150}, {"eval_batches", 2}, {"bleu_sentences", 8},
                   {"checkpoint_every", 150}, {"threads", 1}}}};
    const QString config = writeFile(m_dir, QStringLiteral("translation.json"), document.dump());
    m_run = m_dir.filePath(QStringLiteral("run"));
    const CliResult trained = cli({QStringLiteral("train"), config, QStringLiteral("--out"), m_run});
    QVERIFY2(trained.code == 0, qPrintable(trained.err + trained.out));
    // The evaluation while training says what the translations scored.
    QVERIFY2(lineStartingWith(trained.out, QStringLiteral("validation at step 150")).contains(QStringLiteral("(8 sentences translated)")),
             qPrintable(trained.out));
}

void TestCliTranslate::translatesATextAndAFileLineByLine()
{
    const QStringList sources = {QStringLiteral("ab c dd e"), QStringLiteral("h g"), QStringLiteral("abc ab a b")};
    QStringList alone;
    for (const QString& source : sources) {
        const CliResult one = cli({QStringLiteral("translate"), m_run, QStringLiteral("--text"), source});
        QVERIFY2(one.code == 0, qPrintable(one.err));
        QCOMPARE(one.out.count(QLatin1Char('\n')), 1);
        alone << one.out.chopped(1);
    }
    // A file's lines, an empty one among them, decoded two at a time (padded
    // sources): the same translations, line for line, the empty line empty.
    const QString file = writeFile(m_dir, QStringLiteral("sources.txt"),
                                   (sources[0] + "\n\n" + sources[1] + "\n" + sources[2] + "\n").toStdString());
    const CliResult batch =
        cli({QStringLiteral("translate"), m_run, QStringLiteral("--file"), file, QStringLiteral("--batch"), QStringLiteral("2")});
    QVERIFY2(batch.code == 0, qPrintable(batch.err));
    const QStringList lines = batch.out.split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 5);  // four lines and the end
    QCOMPARE(lines[0], alone[0]);
    QCOMPARE(lines[1], QString());
    QCOMPARE(lines[2], alone[1]);
    QCOMPARE(lines[3], alone[2]);
    // --json: one object a source.
    const CliResult json = cli({QStringLiteral("translate"), m_run, QStringLiteral("--text"), sources[1], QStringLiteral("--json")});
    const nlohmann::json object = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(q(object.at("source").get<std::string>()), sources[1]);
    QCOMPARE(q(object.at("translation").get<std::string>()), alone[1]);
}

void TestCliTranslate::evalScoresTheSplitInBleuAndChrf()
{
    const CliResult text = cli({QStringLiteral("eval"), m_run, QStringLiteral("--split"), QStringLiteral("test")});
    QVERIFY2(text.code == 0, qPrintable(text.err));
    QVERIFY2(text.out.contains(QStringLiteral(", BLEU ")) && text.out.contains(QStringLiteral(", chrF ")), qPrintable(text.out));
    const CliResult json = cli({QStringLiteral("eval"), m_run, QStringLiteral("--split"), QStringLiteral("test"), QStringLiteral("--json")});
    const nlohmann::json result = nlohmann::json::parse(json.out.toStdString());
    // The whole test split is translated outside training, every one of its pairs.
    QCOMPARE(result.at("translated").get<int>(), result.at("examples").get<int>());
    QVERIFY(result.at("examples").get<int>() > 20);
    QVERIFY(result.at("bleu").get<double>() >= 0.0 && result.at("bleu").get<double>() <= 100.0);
    QVERIFY(result.at("chrf").get<double>() > 0.0 && result.at("chrf").get<double>() <= 100.0);
    QVERIFY(text.out.contains(QStringLiteral("(%1 sentences translated)").arg(result.at("examples").get<int>())));
}

void TestCliTranslate::inspectShowsTheTranslation()
{
    // inspect shows the greedy translation: translate's with --beam 1.
    const CliResult translated = cli({QStringLiteral("translate"), m_run, QStringLiteral("--text"), QStringLiteral("ab cd"),
                                      QStringLiteral("--beam"), QStringLiteral("1")});
    const CliResult inspected = cli({QStringLiteral("inspect"), m_run, QStringLiteral("--text"), QStringLiteral("ab cd")});
    QVERIFY2(inspected.code == 0, qPrintable(inspected.err));
    QCOMPARE(lineStartingWith(inspected.out, QStringLiteral("translation: ")),
             QStringLiteral("translation: ") + translated.out.chopped(1));
    const CliResult heads = cli({QStringLiteral("inspect"), m_run, QStringLiteral("--text"), QStringLiteral("ab"), QStringLiteral("--heads")});
    QVERIFY(heads.code != 0);
    QVERIFY2(heads.err.contains(QStringLiteral("head roles are measured on encoder-only models")), qPrintable(heads.err));
}

void TestCliTranslate::errorsNameWhatIsWrong()
{
    const CliResult nothing = cli({QStringLiteral("translate"), m_run});
    QVERIFY(nothing.code != 0);
    QVERIFY2(nothing.err.contains(QStringLiteral("usage: widelab-cli translate RUN_DIR")), qPrintable(nothing.err));
    const CliResult both = cli({QStringLiteral("translate"), m_run, QStringLiteral("--text"), QStringLiteral("a"),
                                QStringLiteral("--file"), QStringLiteral("x.txt")});
    QVERIFY(both.code != 0);
    const CliResult noBeam = cli({QStringLiteral("translate"), m_run, QStringLiteral("--text"), QStringLiteral("a"),
                                  QStringLiteral("--beam"), QStringLiteral("0")});
    QVERIFY(noBeam.code != 0);
    QVERIFY2(noBeam.err.contains(QStringLiteral("--beam")), qPrintable(noBeam.err));
    const CliResult missing = cli({QStringLiteral("translate"), m_run, QStringLiteral("--file"), m_dir.filePath(QStringLiteral("none.txt"))});
    QVERIFY(missing.code != 0);
    QVERIFY2(missing.err.contains(QStringLiteral("none.txt")), qPrintable(missing.err));

    // A run that does not translate says so.
    const QString listops = m_dir.filePath(QStringLiteral("listops"));
    const nlohmann::json small = {{"model", {{"vocab_size", 20}, {"max_len", 40}, {"d_model", 16}, {"layers", 1}, {"heads", 2},
                                             {"ffn_dim", 32}, {"num_classes", 10}}},
                                  {"task", {{"min_length", 5}, {"max_length", 30}, {"train_size", 32}, {"validation_size", 8},
                                            {"test_size", 8}}},
                                  {"train", {{"steps", 1}, {"batch_size", 8}, {"warmup_steps", 0}, {"threads", 1}}}};
    QCOMPARE(cli({QStringLiteral("train"), writeFile(m_dir, QStringLiteral("listops.json"), small.dump()),
                  QStringLiteral("--out"), listops}).code, 0);
    const CliResult notTranslation = cli({QStringLiteral("translate"), listops, QStringLiteral("--text"), QStringLiteral("a")});
    QVERIFY(notTranslation.code != 0);
    QVERIFY2(notTranslation.err.contains(QStringLiteral("is not a translation run (its model.head is \"classification\")")),
             qPrintable(notTranslation.err));

    // A translation document whose corpus is missing says how to write it.
    const nlohmann::json noCorpus = {{"model", {{"head", "translation"}, {"vocab_size", 300}, {"max_len", 32}}},
                                     {"task", {{"kind", "translation"}, {"path", "nowhere/web-sparv.tsv"},
                                               {"tokenizer", "bpe"}, {"max_subwords", 31}}}};
    const CliResult check = cli({QStringLiteral("check"), writeFile(m_dir, QStringLiteral("nocorpus.json"), noCorpus.dump())});
    QVERIFY(check.code != 0);
    QVERIFY2(check.err.contains(QStringLiteral("task.path: no such file: nowhere/web-sparv.tsv (widelab-cli corpus bible "
                                               "--from web --to sparv --out web-sparv.tsv")),
             qPrintable(check.err));
}

QTEST_GUILESS_MAIN(TestCliTranslate)
#include "tst_cli_translate.moc"
