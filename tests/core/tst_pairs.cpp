// Tests of text pairs (task.kind pair_classification, model.segments): a pair's
// ids and its truncation worked out by hand on bytes, the probe's two texts, the
// segment each token gets, the pair file's errors with their lines, the
// documents that cannot work, and a small model that learns whether two words
// are the same, which no model of one text could tell.
#include "TestSupport.h"
#include "data/Datasets.h"
#include "data/PairInput.h"
#include "model/Embedding.h"
#include "run/RunDirectory.h"
#include "train/Trainer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace widelab;

namespace {

// The byte tokenizer's id of a character: 2 + its byte.
std::int64_t b(char c) { return 2 + static_cast<unsigned char>(c); }

constexpr std::int64_t kSep = 300;

std::filesystem::path writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& text)
{
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
}

// "same" when the two words are one, "other" when not: half and half, 1,600 rows, each word first (and
// second) as often in either.
std::string wordPairs()
{
    const char* words[] = {"red", "green", "blue", "black", "white", "pink", "gray", "brown"};
    std::string text;
    for (int i = 0; i < 1600; ++i) {
        const int first = (i / 2) % 8;
        const int second = i % 2 == 0 ? first : (first + 1 + (i / 16) % 7) % 8;
        text += std::string(i % 2 == 0 ? "same" : "other") + "\t" + words[first] + "\t" + words[second] + "\n";
    }
    return text;
}

nlohmann::json pairRun(const std::string& path, int steps)
{
    return {{"model", {{"vocab_size", 259}, {"max_len", 16}, {"d_model", 32}, {"layers", 2}, {"heads", 4},
                       {"ffn_dim", 64}, {"dropout", 0.0}, {"num_classes", 2}, {"segments", 2}}},
            {"task", {{"kind", "pair_classification"}, {"path", path}, {"tokenizer", "byte"}}},
            {"train", {{"steps", steps}, {"batch_size", 32}, {"learning_rate", 0.003}, {"warmup_steps", 10},
                       {"log_every", 50}, {"eval_every", steps}, {"eval_batches", 0}, {"checkpoint_every", steps},
                       {"threads", 1}, {"device", "cpu"}}}};
}

}  // namespace

class TestPairs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aPairIsFirstSeparatorSecondSeparator()
    {
        const Tokenizer bytes = Tokenizer::bytes();
        QCOMPARE(encodePair(bytes, "ab", "cde", 16, kSep),
                 (std::vector<std::int64_t>{b('a'), b('b'), kSep, b('c'), b('d'), b('e'), kSep}));
        // An empty second text keeps no token, and both separators.
        QCOMPARE(encodePair(bytes, "ab", "", 16, kSep), (std::vector<std::int64_t>{b('a'), b('b'), kSep, kSep}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encodePair(bytes, "a", "b", 3, kSep));
    }

    // 6 + 2 + 2 separators in 6: the longer first text gives up its last four bytes.
    // 3 + 3 in 6: the second gives one up on the tie, then the first, now the longer.
    void truncationTakesFromTheLongerText()
    {
        const Tokenizer bytes = Tokenizer::bytes();
        QCOMPARE(encodePair(bytes, "abcdef", "xy", 6, kSep),
                 (std::vector<std::int64_t>{b('a'), b('b'), kSep, b('x'), b('y'), kSep}));
        QCOMPARE(encodePair(bytes, "abc", "xyz", 6, kSep),
                 (std::vector<std::int64_t>{b('a'), b('b'), kSep, b('x'), b('y'), kSep}));
        QCOMPARE(encodePair(bytes, "abcdefgh", "xyzuvw", 4, kSep),
                 (std::vector<std::int64_t>{b('a'), kSep, b('x'), kSep}));
    }

    void aProbesTextsSplitAtATabOrBars()
    {
        using Texts = std::pair<std::string_view, std::string_view>;
        QCOMPARE(splitProbePair("a b\tc || d"), (Texts{"a b", "c || d"}));
        QCOMPARE(splitProbePair("a b || c"), (Texts{"a b", "c"}));
        QCOMPARE(splitProbePair("a||b"), (Texts{"a||b", ""}));
        // An example's ids read back as a probe writes them.
        const Tokenizer bytes = Tokenizer::bytes();
        QCOMPARE(pairText(bytes, encodePair(bytes, "red", "blue", 16, kSep), kSep), std::string("red || blue"));
        QCOMPARE(pairText(bytes, {b('r'), b('e')}, kSep), std::string("re"));
    }

    // Segment of a token: the separators before it (the separator ends its own
    // segment), at most segments - 1. Ids 5 SEP 7 SEP 9 with vocab_size 23 (SEP 22):
    // segments 0 0 1 1 1.
    void eachTokenAddsItsSegmentsVector()
    {
        const ModelConfig config = test::modelConfig(
            R"({"vocab_size": 23, "max_len": 8, "d_model": 6, "heads": 2, "head_dim": 3, "ffn_dim": 8,
                "pooling": "mean", "segments": 2})");
        Embedding embed(config);
        QCOMPARE(embed->segment->weight.sizes(), (std::vector<std::int64_t>{2, 6}));
        const torch::Tensor ids = torch::tensor({5, 22, 7, 22, 9}, torch::kLong).unsqueeze(0);
        const torch::Tensor out = embed->forward(ids).squeeze(0);
        const std::int64_t segment[] = {0, 0, 1, 1, 1};
        for (std::int64_t t = 0; t < 5; ++t) {
            const torch::Tensor expected = embed->token->weight[ids[0][t].item<std::int64_t>()]
                                           + embed->position->weight[t] + embed->segment->weight[segment[t]];
            QVERIFY2(torch::allclose(out[t], expected), qPrintable(QString::number(t)));
        }
        // Without segments the same ids add no segment vector.
        Embedding plain(test::modelConfig(R"({"vocab_size": 23, "max_len": 8, "d_model": 6, "heads": 2,
                                              "head_dim": 3, "ffn_dim": 8, "pooling": "mean"})"));
        QVERIFY(!plain->segment);
    }

    void aPairFilesErrorsNameTheLine()
    {
        QTemporaryDir dir;
        const auto noTab = writeFile(dir, "a.tsv", "same\tred\tred\nother\tonly one text\n");
        QString message = test::thrownMessage([&] { ClassificationFile(noTab, {0.1, 0.1}, 1, {}, true); });
        QVERIFY2(message.contains(QLatin1String("a.tsv:2:")) && message.contains(QLatin1String("tab")), qPrintable(message));
        const auto blank = writeFile(dir, "b.tsv", "same\tred\tred\nsame\tred\t \n");
        message = test::thrownMessage([&] { ClassificationFile(blank, {0.1, 0.1}, 1, {}, true); });
        QVERIFY2(message.contains(QLatin1String("b.tsv:2:")) && message.contains(QLatin1String("second text is empty")),
                 qPrintable(message));
        // Read as one text, the same file is fine: the tab belongs to the text.
        QCOMPARE(ClassificationFile(noTab, {0.0, 0.0}, 1).rows(), std::int64_t{2});

        const auto good = writeFile(dir, "c.tsv", "same\tred\tred\nother\tred\tblue\n");
        const ClassificationFile file(good, {0.0, 0.0}, 1, {}, true);
        const Example first = file.dataset(Split::Train, Tokenizer::bytes(), 16, kSep)->get(0);
        QCOMPARE(first.ids, (std::vector<std::int64_t>{b('r'), b('e'), b('d'), kSep, b('r'), b('e'), b('d'), kSep}));
    }

    void documentsThatCannotWorkNameTheKey()
    {
        QTemporaryDir dir;
        const std::string path = writeFile(dir, "pairs.tsv", wordPairs()).string();
        nlohmann::json noSegments = pairRun(path, 10);
        noSegments["model"]["segments"] = 0;
        QString message = test::thrownMessage([&] { parseRunDocument(noSegments.dump()); });
        QVERIFY2(message.contains(QLatin1String("model.segments")), qPrintable(message));

        nlohmann::json oneText = pairRun(path, 10);
        oneText["task"]["kind"] = "classification";
        message = test::thrownMessage([&] { parseRunDocument(oneText.dump()); });
        QVERIFY2(message.contains(QLatin1String("model.segments")) && message.contains(QLatin1String("one text")),
                 qPrintable(message));

        nlohmann::json languageModel = pairRun(path, 10);
        languageModel["model"]["head"] = "language_model";
        languageModel["task"]["kind"] = "language_model";
        message = test::thrownMessage([&] { parseRunDocument(languageModel.dump()); });
        QVERIFY2(message.contains(QLatin1String("model.segments")), qPrintable(message));

        nlohmann::json tooShort = pairRun(path, 10);
        tooShort["task"]["sequence_length"] = 3;
        message = test::thrownMessage([&] { parseRunDocument(tooShort.dump()); });
        QVERIFY2(message.contains(QLatin1String("task.sequence_length")), qPrintable(message));

        nlohmann::json noRoom = pairRun(path, 10);
        noRoom["model"]["vocab_size"] = 258;  // the byte tokenizer's: no id left for the separator
        message = test::thrownMessage([&] {
            Trainer trainer(parseRunDocument(noRoom.dump()), std::filesystem::path(dir.path().toStdString()) / "run");
        });
        QVERIFY2(message.contains(QLatin1String("model.vocab_size")) && message.contains(QLatin1String("259")),
                 qPrintable(message));
    }

    // Whether two words are the same: each text alone says nothing (every word is
    // as often in a "same" pair as in an "other" one), so a model must read across
    // the separator. Chance is 50%.
    void aSmallModelLearnsWhetherTwoWordsAreTheSame()
    {
        QTemporaryDir dir;
        const std::string path = writeFile(dir, "pairs.tsv", wordPairs()).string();
        const std::filesystem::path run = std::filesystem::path(dir.path().toStdString()) / "pairs";
        Trainer trainer(parseRunDocument(pairRun(path, 300).dump()), run);
        std::atomic<bool> stop{false};
        QCOMPARE(trainer.run(stop).step, std::int64_t{300});
        const auto eval = test::metricLines(run, "eval");
        QCOMPARE(eval.size(), std::size_t{1});
        QVERIFY2(eval[0]["accuracy"].get<double>() > 0.9, qPrintable(QString::fromStdString(eval[0].dump())));

        OpenedRun opened = openRun(run);
        const ProbeResult probe = probeModel(*opened.model, opened.tokenizer, opened.labels, "red || blue", 16);
        // <cls>, r e d <sep> b l u e <sep>
        QCOMPARE(probe.tokens.size(), std::size_t{10});
        QCOMPARE(QString::fromStdString(probe.tokens[4]), QStringLiteral("<sep>"));
        QCOMPARE(QString::fromStdString(probe.tokens[9]), QStringLiteral("<sep>"));
        const auto other = std::find(opened.labels.begin(), opened.labels.end(), "other") - opened.labels.begin();
        QVERIFY2(probe.prediction[static_cast<std::size_t>(other)] > 0.5f, "red and blue are not the same");
    }
};

QTEST_GUILESS_MAIN(TestPairs)
#include "tst_pairs.moc"
