// Tests of data/Datasets and data/Batch: ListOps datasets, classification files (TSV, CSV with quotes, labels,
// errors with file and line, deterministic splits), language-model windows over a text file and its token cache,
// padded batches, and the resumable batch order. Expected values are worked out by hand in the comments.
#include "TestSupport.h"
#include "data/Batch.h"
#include "data/Datasets.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <numeric>
#include <set>

using namespace widelab;

namespace {

using Ids = std::vector<std::int64_t>;

std::filesystem::path writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& content)
{
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

// The message of the DataError that `f` throws, or "" when it throws none.
template <typename F>
std::string dataErrorOf(F&& f)
{
    try {
        f();
    } catch (const DataError& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Ids bytesOf(const std::string& text)
{
    Ids ids;
    for (const char c : text)
        ids.push_back(static_cast<unsigned char>(c) + 2);
    return ids;
}

// All examples of a dataset as (decoded text, label).
std::vector<std::pair<std::string, std::int64_t>> contents(const Dataset& dataset, const Tokenizer& tokenizer)
{
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (std::int64_t i = 0; i < dataset.size(); ++i) {
        const Example example = dataset.get(i);
        out.emplace_back(tokenizer.decode(example.ids), example.label);
    }
    return out;
}

// Anonymous (heap) memory of this process in KiB, from /proc/self/status; -1 when unknown.
std::int64_t anonymousMemoryKiB()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("RssAnon:", 0) == 0)
            return std::stoll(line.substr(8));
    return -1;
}

const SplitFractions kAllTrain{0.0, 0.0};

}  // namespace

class TestDatasets : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void listOpsDataset();
    void listOpsSplitsDiffer();
    void listOpsLongSequences();
    void listOpsRejectsTooShortSequences();

    void tsvIntegerLabels();
    void csvQuotesAndStringLabels();
    void csvWithCrLf();
    void byteOrderMarkIsSkipped();
    void truncatesLongTexts();
    void wordTokenizerAndTrainingTexts();
    void badRows_data();
    void badRows();
    void emptyAndMissingFiles();
    void splitsAreDeterministicDisjointAndComplete();
    void splitDependsOnlyOnSeedAndRowIndex();

    void languageModelWindows();
    void languageModelShortLastWindow();
    void languageModelSplitBlocks();
    void languageModelWords();
    void tokenCacheIsReused();
    void tokenCacheFollowsTheSource();
    void tokenCacheLeftoversAreRemoved();
    void filesCutShortUnderneathAreNoCrash();
    void longTextsReportTokenizingProgress();
    void textFileErrors();
    void invalidUtf8NamesTheOffset();
    void largeFileIsStreamed();

    void batchPadsAndMasks();
    void modelMaskOnlyForPaddedBatches();
    void correctCountsClassesAndRealTokens();
    void languageModelBatch();
    void batchErrors();
    void samplerIsDeterministic();
    void samplerCoversEachEpoch();
    void samplerSeekReproducesBatches();
};

// ---- ListOps ----

void TestDatasets::listOpsDataset()
{
    ListOpsOptions options;
    options.minLength = 10;
    options.maxLength = 40;
    const auto dataset = makeListOpsDataset(options, 100, 3, Split::Train, 64);
    QCOMPARE(dataset->size(), 100);
    const Tokenizer tokenizer = listOpsTokenizer();
    for (std::int64_t i = 0; i < dataset->size(); ++i) {
        const Example example = dataset->get(i);
        QVERIFY(example.ids.size() >= 10 && example.ids.size() <= 40);
        QVERIFY(example.targets.empty());
        for (const std::int64_t id : example.ids)
            QVERIFY(id >= 2 && id < tokenizer.vocabSize());
        QCOMPARE(evaluateListOps(tokenizer.decode(example.ids)), example.label);
    }
    // The same call gives the same examples.
    const auto again = makeListOpsDataset(options, 100, 3, Split::Train, 64);
    QVERIFY(again->get(17).ids == dataset->get(17).ids);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, dataset->get(100));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, dataset->get(-1));
}

void TestDatasets::listOpsSplitsDiffer()
{
    ListOpsOptions options;
    const auto train = makeListOpsDataset(options, 200, 9, Split::Train, 128);
    const auto validation = makeListOpsDataset(options, 200, 9, Split::Validation, 128);
    const auto test = makeListOpsDataset(options, 200, 9, Split::Test, 128);
    std::set<Ids> trainIds;
    for (std::int64_t i = 0; i < train->size(); ++i)
        trainIds.insert(train->get(i).ids);
    int shared = 0;
    for (const Dataset* other : {validation.get(), test.get()})
        for (std::int64_t i = 0; i < other->size(); ++i)
            shared += static_cast<int>(trainIds.count(other->get(i).ids));
    QVERIFY2(shared <= 2, qPrintable(QString::number(shared)));
    QVERIFY(validation->get(0).ids != test->get(0).ids);
}

void TestDatasets::listOpsLongSequences()
{
    // LRA's lengths: 500..2000 tokens.
    ListOpsOptions options;
    options.minLength = 500;
    options.maxLength = 2000;
    QElapsedTimer timer;
    timer.start();
    const auto dataset = makeListOpsDataset(options, 100, 1, Split::Train, 2000);
    qInfo("100 LRA-length ListOps examples in %lld ms", static_cast<long long>(timer.elapsed()));
    const Tokenizer tokenizer = listOpsTokenizer();
    for (std::int64_t i = 0; i < dataset->size(); ++i) {
        const Example example = dataset->get(i);
        QVERIFY(example.ids.size() >= 500 && example.ids.size() <= 2000);
        QCOMPARE(evaluateListOps(tokenizer.decode(example.ids)), example.label);
    }
}

void TestDatasets::listOpsRejectsTooShortSequences()
{
    ListOpsOptions options;  // up to 128 tokens
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeListOpsDataset(options, 10, 0, Split::Train, 127));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeListOpsDataset(options, -1, 0, Split::Train, 128));
    QCOMPARE(makeListOpsDataset(options, 0, 0, Split::Test, 128)->size(), 0);
}

// ---- ClassificationFile ----

void TestDatasets::tsvIntegerLabels()
{
    QTemporaryDir dir;
    // Labels 0, 3, 1 -> integer classes 0..3 (class 2 has no row). The text is the rest of the line, tabs included.
    const auto path = writeFile(dir, "data.tsv", "1\thello world\n0\tbye\n\n3\tx\ty\n 1 \tlast line");
    const ClassificationFile file(path, kAllTrain, 0);
    QVERIFY(file.labels() == (std::vector<std::string>{"0", "1", "2", "3"}));
    QCOMPARE(file.rows(), 4);
    QCOMPARE(file.rows(Split::Train), 4);
    QCOMPARE(file.rows(Split::Test), 0);
    const Tokenizer bytes = Tokenizer::bytes();
    const auto dataset = file.dataset(Split::Train, bytes, 100);
    const std::vector<std::pair<std::string, std::int64_t>> expected = {
        {"hello world", 1}, {"bye", 0}, {"x\ty", 3}, {"last line", 1}};
    QVERIFY(contents(*dataset, bytes) == expected);
    QVERIFY(dataset->get(1).ids == bytesOf("bye"));
    QVERIFY(dataset->get(1).targets.empty());
    QCOMPARE(file.dataset(Split::Validation, bytes, 100)->size(), 0);
}

void TestDatasets::csvQuotesAndStringLabels()
{
    QTemporaryDir dir;
    const std::string csv = "label,text\n"
                            "pos,\"Hello, world\"\n"
                            "neg,\"She said \"\"hi\"\"\"\n"
                            "pos,plain text\n"
                            "\"neu\",\"multi\nline, with comma\"\n"
                            "neg,unquoted \"inner\" quotes\n";
    const auto path = writeFile(dir, "reviews.CSV", csv);
    const ClassificationFile file(path, kAllTrain, 0);
    // The header is skipped; string labels sorted: neg 0, neu 1, pos 2.
    QVERIFY(file.labels() == (std::vector<std::string>{"neg", "neu", "pos"}));
    QCOMPARE(file.rows(), 5);
    const Tokenizer bytes = Tokenizer::bytes();
    const std::vector<std::pair<std::string, std::int64_t>> expected = {{"Hello, world", 2},
                                                                        {"She said \"hi\"", 0},
                                                                        {"plain text", 2},
                                                                        {"multi\nline, with comma", 1},
                                                                        {"unquoted \"inner\" quotes", 0}};
    QVERIFY(contents(*file.dataset(Split::Train, bytes, 1000), bytes) == expected);
}

void TestDatasets::csvWithCrLf()
{
    QTemporaryDir dir;
    // Windows line ends; integer labels; a quoted text ending a line; the last line without a line end.
    const auto path = writeFile(dir, "crlf.csv", "2,two\r\n0,\"zero, quoted\"\r\n\r\n1,one");
    const ClassificationFile file(path, kAllTrain, 0);
    QVERIFY(file.labels() == (std::vector<std::string>{"0", "1", "2"}));
    const Tokenizer bytes = Tokenizer::bytes();
    const std::vector<std::pair<std::string, std::int64_t>> expected = {{"two", 2}, {"zero, quoted", 0}, {"one", 1}};
    QVERIFY(contents(*file.dataset(Split::Train, bytes, 100), bytes) == expected);
    // A TSV with CRLF too.
    const auto tsv = writeFile(dir, "crlf.tsv", "a\tx y\r\nb\tz\r\n");
    const ClassificationFile tsvFile(tsv, kAllTrain, 0);
    const std::vector<std::pair<std::string, std::int64_t>> tsvExpected = {{"x y", 0}, {"z", 1}};
    QVERIFY(contents(*tsvFile.dataset(Split::Train, bytes, 100), bytes) == tsvExpected);
}

void TestDatasets::byteOrderMarkIsSkipped()
{
    QTemporaryDir dir;
    // A spreadsheet's CSV: byte order mark, then the header "Label,Text", then rows with integer labels.
    const auto path = writeFile(dir, "excel.csv", "\xEF\xBB\xBFLabel,Text\r\n1,yes\r\n0,no\r\n");
    const ClassificationFile file(path, kAllTrain, 0);
    QVERIFY(file.labels() == (std::vector<std::string>{"0", "1"}));
    QCOMPARE(file.rows(), 2);
    const Tokenizer bytes = Tokenizer::bytes();
    const std::vector<std::pair<std::string, std::int64_t>> expected = {{"yes", 1}, {"no", 0}};
    QVERIFY(contents(*file.dataset(Split::Train, bytes, 10), bytes) == expected);
}

void TestDatasets::truncatesLongTexts()
{
    QTemporaryDir dir;
    const auto path = writeFile(dir, "long.tsv", "0\tabcdefghij\n1\tab\n");
    const ClassificationFile file(path, kAllTrain, 0);
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 4);
    QVERIFY(dataset->get(0).ids == bytesOf("abcd"));
    QVERIFY(dataset->get(1).ids == bytesOf("ab"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, file.dataset(Split::Train, Tokenizer::bytes(), 0));
}

void TestDatasets::wordTokenizerAndTrainingTexts()
{
    QTemporaryDir dir;
    // All rows in training: counts "the" 3, "cat" 2, "sat" 1, "." 2 -> the, ., cat, sat (ties: "." 0x2E < "cat").
    const auto path = writeFile(dir, "words.tsv", "a\tthe cat sat.\nb\tthe cat.\nb\tthe\n");
    const ClassificationFile file(path, kAllTrain, 0);
    VocabularyBuilder builder(TokenizerKind::Word);
    file.addTrainingTexts(builder);
    QCOMPARE(builder.count("the"), 3);
    QCOMPARE(builder.count("cat"), 2);
    QCOMPARE(builder.count("."), 2);
    QCOMPARE(builder.count("a"), 0);  // labels are not texts
    const Tokenizer tokenizer = builder.build(5);  // the 2, . 3, cat 4
    const auto dataset = file.dataset(Split::Train, tokenizer, 3);
    QVERIFY(dataset->get(0).ids == (Ids{2, 4, 1}));  // the cat sat(unknown), cut to 3 tokens before "."
    QVERIFY(dataset->get(1).ids == (Ids{2, 4, 3}));
    QCOMPARE(dataset->get(1).label, 1);

    // Only the training split feeds the vocabulary: with everything in test, nothing is counted.
    const ClassificationFile allTest(path, SplitFractions{0.0, 1.0}, 0);
    VocabularyBuilder none(TokenizerKind::Word);
    allTest.addTrainingTexts(none);
    QCOMPARE(none.distinctTokens(), 0);
    QCOMPARE(allTest.rows(Split::Test), 3);
}

void TestDatasets::badRows_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("reason");
    QTest::newRow("TSV row without a tab") << QString("a.tsv") << QByteArray("0\tok\n1\tfine\nno tab here\n")
                                           << QString("a.tsv:3:") << QString("no tab");
    QTest::newRow("TSV empty label") << QString("b.tsv") << QByteArray("0\tok\n\tno label\n") << QString("b.tsv:2:")
                                     << QString("empty label");
    QTest::newRow("TSV blank label") << QString("c.tsv") << QByteArray("\n\n  \ttext\n") << QString("c.tsv:3:")
                                     << QString("empty label");
    QTest::newRow("TSV empty text") << QString("d.tsv") << QByteArray("0\tok\n1\t  \n") << QString("d.tsv:2:")
                                    << QString("empty text");
    QTest::newRow("TSV invalid UTF-8") << QString("e.tsv") << QByteArray("0\tok\n1\tbad \xFF byte\n")
                                       << QString("e.tsv:2:") << QString("invalid UTF-8");
    QTest::newRow("CSV row without a comma") << QString("f.csv") << QByteArray("0,ok\n1;semicolon\n")
                                             << QString("f.csv:2:") << QString("no comma");
    QTest::newRow("CSV empty label") << QString("g.csv") << QByteArray("0,ok\n,text\n") << QString("g.csv:2:")
                                     << QString("empty label");
    QTest::newRow("CSV three fields") << QString("h.csv") << QByteArray("0,ok\n1,a,b\n") << QString("h.csv:2:")
                                      << QString("more than two fields");
    QTest::newRow("CSV unclosed quote names its line") << QString("i.csv")
                                                       << QByteArray("0,ok\n1,\"open\nstill open\n")
                                                       << QString("i.csv:2:") << QString("not closed");
    QTest::newRow("CSV text after a closing quote") << QString("j.csv") << QByteArray("0,\"a\"b\n")
                                                    << QString("j.csv:1:") << QString("closing quote");
    QTest::newRow("CSV invalid UTF-8 on the 2nd line of a quoted text")
        << QString("k.csv") << QByteArray("0,ok\n1,\"line two\nline \xC3( three\"\n") << QString("k.csv:3:")
        << QString("invalid UTF-8");
    QTest::newRow("CSV lines counted after a multi-line text")
        << QString("l.csv") << QByteArray("0,\"a\nb\nc\"\n1\n") << QString("l.csv:4:") << QString("no comma");
    QTest::newRow("integer label too large") << QString("m.tsv") << QByteArray("0\ta\n100000\tb\n")
                                             << QString("m.tsv:2:") << QString("too large");
    QTest::newRow("only a header") << QString("n.csv") << QByteArray("label,text\n") << QString("n.csv")
                                   << QString("no rows");
    QTest::newRow("only empty lines") << QString("o.tsv") << QByteArray("\n\r\n\n") << QString("o.tsv")
                                      << QString("no rows");
}

void TestDatasets::badRows()
{
    QFETCH(QString, name);
    QFETCH(QByteArray, content);
    QFETCH(QString, where);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const auto path = writeFile(dir, name.toStdString(), content.toStdString());
    const std::string message = dataErrorOf([&] { ClassificationFile(path, kAllTrain, 0); });
    QVERIFY2(!message.empty(), "no DataError");
    // The message names the full path with the line, and the reason.
    const std::string directory = dir.path().toStdString();
    QVERIFY2(contains(message, directory + "/" + where.toStdString()), message.c_str());
    QVERIFY2(contains(message, reason.toStdString()), message.c_str());
}

void TestDatasets::emptyAndMissingFiles()
{
    QTemporaryDir dir;
    const auto empty = writeFile(dir, "empty.tsv", "");
    const std::string message = dataErrorOf([&] { ClassificationFile(empty, kAllTrain, 0); });
    QVERIFY2(contains(message, empty.string()) && contains(message, "empty"), message.c_str());
    const auto missing = std::filesystem::path(dir.path().toStdString()) / "missing.csv";
    const std::string missingMessage = dataErrorOf([&] { ClassificationFile(missing, kAllTrain, 0); });
    QVERIFY2(contains(missingMessage, missing.string()), missingMessage.c_str());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ClassificationFile(empty, SplitFractions{0.6, 0.5}, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ClassificationFile(empty, SplitFractions{-0.1, 0.0}, 0));
}

void TestDatasets::splitsAreDeterministicDisjointAndComplete()
{
    QTemporaryDir dir;
    std::string content;
    for (int i = 0; i < 1000; ++i)
        content += std::to_string(i % 3) + "\trow " + std::to_string(i) + "\n";
    const auto path = writeFile(dir, "rows.tsv", content);
    const SplitFractions fractions{0.2, 0.1};
    const Tokenizer bytes = Tokenizer::bytes();

    const auto textsOf = [&](const ClassificationFile& file, Split split) {
        std::vector<std::string> texts;
        for (const auto& [text, label] : contents(*file.dataset(split, bytes, 100), bytes)) {
            // The label is that of the row: i % 3.
            const int row = std::stoi(text.substr(4));
            if (label != row % 3)
                return std::vector<std::string>{"wrong label in " + text};
            texts.push_back(text);
        }
        return texts;
    };
    const ClassificationFile file(path, fractions, 17);
    std::map<std::string, int> seen;
    std::map<Split, std::vector<std::string>> bySplit;
    for (const Split split : {Split::Train, Split::Validation, Split::Test}) {
        bySplit[split] = textsOf(file, split);
        QCOMPARE(static_cast<std::int64_t>(bySplit[split].size()), file.rows(split));
        for (const std::string& text : bySplit[split])
            ++seen[text];
    }
    // Every row exactly once.
    QCOMPARE(seen.size(), std::size_t(1000));
    for (const auto& [text, count] : seen)
        QVERIFY2(count == 1, text.c_str());
    // About 20% and 10% (binomial standard deviations about 13 and 9.5).
    QVERIFY(std::abs(file.rows(Split::Validation) - 200) < 70);
    QVERIFY(std::abs(file.rows(Split::Test) - 100) < 50);
    // The same seed gives the same assignment; another seed another one.
    const ClassificationFile same(path, fractions, 17);
    for (const Split split : {Split::Train, Split::Validation, Split::Test})
        QVERIFY(textsOf(same, split) == bySplit[split]);
    const ClassificationFile other(path, fractions, 18);
    QVERIFY(textsOf(other, Split::Validation) != bySplit[Split::Validation]);
}

void TestDatasets::splitDependsOnlyOnSeedAndRowIndex()
{
    QTemporaryDir dir;
    // Two files with different texts and labels, the second with a header and blank lines: the data rows are
    // numbered alike, so the same rows go to the same splits.
    std::string first, second = "label,text\n";
    for (int i = 0; i < 300; ++i) {
        first += std::to_string(i % 2) + "\tfirst " + std::to_string(i) + "\n";
        second += "class" + std::to_string(i % 5) + ",second " + std::to_string(i) + "\n\n";
    }
    const ClassificationFile a(writeFile(dir, "a.tsv", first), SplitFractions{0.3, 0.3}, 5);
    const ClassificationFile b(writeFile(dir, "b.csv", second), SplitFractions{0.3, 0.3}, 5);
    const Tokenizer bytes = Tokenizer::bytes();
    for (const Split split : {Split::Train, Split::Validation, Split::Test}) {
        const auto rowsOf = [&](const ClassificationFile& file) {
            std::vector<int> rows;
            for (const auto& [text, label] : contents(*file.dataset(split, bytes, 100), bytes))
                rows.push_back(std::stoi(text.substr(text.find(' ') + 1)));
            return rows;
        };
        QVERIFY(rowsOf(a) == rowsOf(b));
        QVERIFY(!rowsOf(a).empty());
    }
}

// ---- TextFile ----

void TestDatasets::languageModelWindows()
{
    QTemporaryDir dir;
    // "abcdefg": 7 tokens, L = 3: ceil(6 / 3) = 2 windows of 4 tokens overlapping by one:
    // "abcd" -> ids abc, targets bcd; "defg" -> ids def, targets efg.
    const auto path = writeFile(dir, "tiny.txt", "abcdefg");
    const TextFile file(path, dir.path().toStdString() + "/cache");
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 3, kAllTrain);
    QCOMPARE(dataset->size(), 2);
    QVERIFY(dataset->get(0).ids == bytesOf("abc"));
    QVERIFY(dataset->get(0).targets == bytesOf("bcd"));
    QVERIFY(dataset->get(1).ids == bytesOf("def"));
    QVERIFY(dataset->get(1).targets == bytesOf("efg"));
    QCOMPARE(dataset->get(0).label, -1);
    QCOMPARE(file.tokenCount(Tokenizer::bytes()), 7);
    QVERIFY(std::filesystem::exists(file.cachePath(Tokenizer::bytes())));
    QVERIFY(file.cachePath(Tokenizer::bytes()).parent_path()
            == std::filesystem::path(dir.path().toStdString()) / "cache");
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, dataset->get(2));
}

void TestDatasets::languageModelShortLastWindow()
{
    QTemporaryDir dir;
    // "abcdefgh": 8 tokens, L = 3: ceil(7 / 3) = 3 windows; the last is "gh": ids g, targets h.
    const auto path = writeFile(dir, "eight.txt", "abcdefgh");
    const TextFile file(path, dir.path().toStdString());
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 3, kAllTrain);
    QCOMPARE(dataset->size(), 3);
    QVERIFY(dataset->get(2).ids == bytesOf("g"));
    QVERIFY(dataset->get(2).targets == bytesOf("h"));
    // A window longer than the file: one window of all tokens.
    const auto whole = file.dataset(Split::Train, Tokenizer::bytes(), 100, kAllTrain);
    QCOMPARE(whole->size(), 1);
    QVERIFY(whole->get(0).ids == bytesOf("abcdefg"));
    QVERIFY(whole->get(0).targets == bytesOf("bcdefgh"));
    // Two tokens are enough.
    const TextFile two(writeFile(dir, "two.txt", "xy"), dir.path().toStdString());
    const auto pair = two.dataset(Split::Train, Tokenizer::bytes(), 8, kAllTrain);
    QCOMPARE(pair->size(), 1);
    QVERIFY(pair->get(0).ids == bytesOf("x") && pair->get(0).targets == bytesOf("y"));
}

void TestDatasets::languageModelSplitBlocks()
{
    QTemporaryDir dir;
    // 101 bytes 0..100, L = 1: 100 windows; window w has ids {w} and targets {w + 1} (as bytes, id = byte + 2).
    // test 0.2 -> the last 20 windows (80..99), validation 0.1 -> the 10 before (70..79), train 0..69.
    std::string content;
    for (int b = 0; b <= 100; ++b)
        content += static_cast<char>(b);
    const TextFile file(writeFile(dir, "bytes.bin", content), dir.path().toStdString());
    const Tokenizer bytes = Tokenizer::bytes();
    const SplitFractions fractions{0.1, 0.2};
    const auto train = file.dataset(Split::Train, bytes, 1, fractions);
    const auto validation = file.dataset(Split::Validation, bytes, 1, fractions);
    const auto test = file.dataset(Split::Test, bytes, 1, fractions);
    QCOMPARE(train->size(), 70);
    QCOMPARE(validation->size(), 10);
    QCOMPARE(test->size(), 20);
    QVERIFY(train->get(0).ids == (Ids{2}));
    QVERIFY(train->get(69).ids == (Ids{2 + 69}));
    QVERIFY(validation->get(0).ids == (Ids{2 + 70}));
    QVERIFY(validation->get(9).targets == (Ids{2 + 80}));
    QVERIFY(test->get(0).ids == (Ids{2 + 80}));
    QVERIFY(test->get(19).ids == (Ids{2 + 99}));
    QVERIFY(test->get(19).targets == (Ids{2 + 100}));
    // Fractions that round down to nothing leave everything in training: 3 windows * 0.2 = 0.6 -> 0.
    const TextFile small(writeFile(dir, "small.txt", "abcd"), dir.path().toStdString());
    QCOMPARE(small.dataset(Split::Train, bytes, 1, fractions)->size(), 3);
    QCOMPARE(small.dataset(Split::Test, bytes, 1, fractions)->size(), 0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, file.dataset(Split::Train, bytes, 1, SplitFractions{0.7, 0.7}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, file.dataset(Split::Train, bytes, 0, fractions));
}

void TestDatasets::languageModelWords()
{
    QTemporaryDir dir;
    // Words: the 3, cat 2, sat 1, on 1, mat 1, "." 1 -> the 2, cat 3, . 4, mat 5, on 6, sat 7.
    const TextFile file(writeFile(dir, "words.txt", "the cat sat\non the mat.\n  the cat"), dir.path().toStdString());
    VocabularyBuilder builder(TokenizerKind::Word);
    file.addTexts(builder);
    QCOMPARE(builder.count("the"), 3);
    const Tokenizer tokenizer = builder.build(100);
    QVERIFY(tokenizer.vocabulary() == (std::vector<std::string>{"the", "cat", ".", "mat", "on", "sat"}));
    // Tokens: the cat sat on the mat . the cat = 2 3 7 6 2 5 4 2 3; L = 4: ceil(8 / 4) = 2 windows.
    const auto dataset = file.dataset(Split::Train, tokenizer, 4, kAllTrain);
    QCOMPARE(dataset->size(), 2);
    QVERIFY(dataset->get(0).ids == (Ids{2, 3, 7, 6}));
    QVERIFY(dataset->get(0).targets == (Ids{3, 7, 6, 2}));
    QVERIFY(dataset->get(1).ids == (Ids{2, 5, 4, 2}));
    QVERIFY(dataset->get(1).targets == (Ids{5, 4, 2, 3}));
    // Another tokenizer has its own cache.
    QVERIFY(file.cachePath(tokenizer) != file.cachePath(Tokenizer::bytes()));
    QCOMPARE(file.tokenCount(Tokenizer::bytes()), 33);  // 12 + 12 + 9 bytes
}

void TestDatasets::tokenCacheIsReused()
{
    QTemporaryDir dir;
    const auto path = writeFile(dir, "text.txt", "hello there");
    const std::string cacheDirectory = dir.path().toStdString() + "/cache";
    const Tokenizer bytes = Tokenizer::bytes();
    std::filesystem::path cache;
    {
        const TextFile file(path, cacheDirectory);
        QVERIFY(file.dataset(Split::Train, bytes, 4, kAllTrain)->get(0).ids == bytesOf("hell"));
        cache = file.cachePath(bytes);
    }
    // Header of 32 bytes, then one int32 per byte of the file.
    QCOMPARE(std::filesystem::file_size(cache), std::uintmax_t(32 + 4 * 11));
    // Only the cache and no temporary file is left in the directory.
    QCOMPARE(std::distance(std::filesystem::directory_iterator(cacheDirectory), std::filesystem::directory_iterator()),
             std::ptrdiff_t(1));
    // Change the first cached token behind the library's back: a new TextFile reads the cache, not the text.
    {
        std::fstream stream(cache, std::ios::in | std::ios::out | std::ios::binary);
        stream.seekp(32);
        const std::int32_t tampered = 2 + 'J';
        stream.write(reinterpret_cast<const char*>(&tampered), sizeof tampered);
    }
    const TextFile reopened(path, cacheDirectory);
    QVERIFY(reopened.dataset(Split::Train, bytes, 4, kAllTrain)->get(0).ids == bytesOf("Jell"));
    // A truncated cache is not trusted: it is written again.
    std::filesystem::resize_file(cache, 40);
    QVERIFY(TextFile(path, cacheDirectory).dataset(Split::Train, bytes, 4, kAllTrain)->get(0).ids == bytesOf("hell"));
    QCOMPARE(std::filesystem::file_size(cache), std::uintmax_t(32 + 4 * 11));
}

// The cache is keyed by the text's content: a new text, even of the same size and
// with its time kept (cp -p, rsync -a), is tokenized again into the same file,
// which replaces the old cache rather than adding one.
void TestDatasets::tokenCacheFollowsTheSource()
{
    QTemporaryDir dir;
    const std::string cacheDirectory = dir.path().toStdString() + "/cache";
    const auto path = writeFile(dir, "text.txt", "abc");
    const Tokenizer bytes = Tokenizer::bytes();
    const TextFile before(path, cacheDirectory);
    QVERIFY(before.dataset(Split::Train, bytes, 8, kAllTrain)->get(0).ids == bytesOf("ab"));
    const auto cache = before.cachePath(bytes);
    struct stat times = {};
    QCOMPARE(::stat(path.c_str(), &times), 0);
    writeFile(dir, "text.txt", "xyz");
    const struct timespec kept[2] = {times.st_atim, times.st_mtim};  // as cp -p keeps them
    QCOMPARE(::utimensat(AT_FDCWD, path.c_str(), kept, 0), 0);
    const TextFile after(path, cacheDirectory);
    QCOMPARE(after.cachePath(bytes), cache);
    QVERIFY(after.dataset(Split::Train, bytes, 8, kAllTrain)->get(0).ids == bytesOf("xy"));
    writeFile(dir, "text.txt", "a longer text");
    QVERIFY(TextFile(path, cacheDirectory).dataset(Split::Train, bytes, 20, kAllTrain)->get(0).ids
            == bytesOf("a longer tex"));
    QCOMPARE(std::distance(std::filesystem::directory_iterator(cacheDirectory), std::filesystem::directory_iterator()),
             std::ptrdiff_t(1));
}

// What killed builds and earlier WideLabs left goes: temporaries of processes
// that are gone (a live one's stays) and caches keyed by path, size and time.
void TestDatasets::tokenCacheLeftoversAreRemoved()
{
    QTemporaryDir dir;
    const std::filesystem::path cacheDirectory = dir.path().toStdString() + "/cache";
    std::filesystem::create_directories(cacheDirectory);
    const auto path = writeFile(dir, "text.txt", "some text");
    const auto leave = [&](const std::string& name, const std::string& content) {
        std::ofstream(cacheDirectory / name, std::ios::binary) << content;
        return cacheDirectory / name;
    };
    const auto dead = leave("text.txt.0123456789abcdef.tokens.tmp.999999.0", "partial");
    const auto live = leave("text.txt.0123456789abcdef.tokens.tmp." + std::to_string(::getpid()) + ".7", "partial");
    const auto earlier = leave("text.txt.fedcba9876543210.tokens", std::string("WLTOKEN1") + std::string(24, '\0'));
    const auto other = leave("other.txt.fedcba9876543210.tokens", std::string("WLTOKEN1") + std::string(24, '\0'));
    const TextFile file(path, cacheDirectory);
    QCOMPARE(file.tokenCount(Tokenizer::bytes()), 9);
    QVERIFY(!std::filesystem::exists(dead));
    QVERIFY(!std::filesystem::exists(earlier));
    QVERIFY(std::filesystem::exists(live));   // this process may be writing it
    QVERIFY(std::filesystem::exists(other));  // another text's
}

// The cache cut short while its tokens are in use (another process rewriting it)
// is no SIGBUS: what is mapped is this process's own copy. A text cut short
// between opening and reading is named.
void TestDatasets::filesCutShortUnderneathAreNoCrash()
{
    QTemporaryDir dir;
    std::string text;
    for (int i = 0; i < 5000; ++i)
        text += "word" + std::to_string(i % 97) + " ";
    const auto path = writeFile(dir, "text.txt", text);
    const TextFile file(path, dir.path().toStdString() + "/cache");
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 64, kAllTrain);
    std::filesystem::resize_file(file.cachePath(Tokenizer::bytes()), 0);
    const std::int64_t last = dataset->size() - 1;
    QVERIFY(dataset->get(last).ids.size() > 0);  // the last page of the tokens, read after the cut
    QVERIFY(dataset->get(0).ids == bytesOf(text.substr(0, 64)));

    const TextFile opened(path, dir.path().toStdString() + "/cache2");
    std::filesystem::resize_file(path, text.size() / 2);
    const std::string message = dataErrorOf([&] { opened.tokenCount(Tokenizer::bytes()); });
    QVERIFY2(contains(message, path.string() + ": changed while it was read"), message.c_str());
}

// A text of 8 MiB or more says how far its tokenizing has come, at each tenth.
void TestDatasets::longTextsReportTokenizingProgress()
{
    QTemporaryDir dir;
    std::string text;
    while (text.size() < kTextProgressFrom)
        text += "a line!\n";  // 8 bytes
    const auto path = writeFile(dir, "long.txt", text);
    std::vector<std::string> lines;
    const TextFile file(path, dir.path().toStdString(), [&](const std::string& line) { lines.push_back(line); });
    QCOMPARE(file.tokenCount(Tokenizer::bytes()), std::int64_t(kTextProgressFrom));
    // Read in pieces: a line at most at each tenth, the percentages rising to 100.
    QVERIFY2(lines.size() >= 5 && lines.size() <= 10, std::to_string(lines.size()).c_str());
    QCOMPARE(lines.back(), "tokenizing " + path.string() + ": 100% (8.0 of 8.0 MiB)");
    int previous = 0;
    for (const std::string& line : lines) {
        const std::string prefix = "tokenizing " + path.string() + ": ";
        QVERIFY2(line.starts_with(prefix), line.c_str());
        const int percent = std::stoi(line.substr(prefix.size()));
        QVERIFY2(percent > previous && percent % 10 == 0, line.c_str());
        previous = percent;
    }
    // Read again from its cache: nothing to report.
    lines.clear();
    const TextFile again(path, dir.path().toStdString(), [&](const std::string& line) { lines.push_back(line); });
    QCOMPARE(again.tokenCount(Tokenizer::bytes()), std::int64_t(kTextProgressFrom));
    QVERIFY(lines.empty());
}

void TestDatasets::textFileErrors()
{
    QTemporaryDir dir;
    const std::string cache = dir.path().toStdString();
    const auto empty = writeFile(dir, "empty.txt", "");
    const std::string emptyMessage = dataErrorOf([&] { TextFile(empty, cache); });
    QVERIFY2(contains(emptyMessage, empty.string()) && contains(emptyMessage, "empty"), emptyMessage.c_str());
    const auto missing = std::filesystem::path(cache) / "missing.txt";
    QVERIFY(contains(dataErrorOf([&] { TextFile(missing, cache); }), missing.string()));

    // One token is not enough to predict anything.
    const auto one = writeFile(dir, "one.txt", "a");
    const std::string oneMessage
        = dataErrorOf([&] { TextFile(one, cache).dataset(Split::Train, Tokenizer::bytes(), 4, kAllTrain); });
    QVERIFY2(contains(oneMessage, one.string()) && contains(oneMessage, "at least 2"), oneMessage.c_str());
    // Whitespace only has no word at all.
    const auto blank = writeFile(dir, "blank.txt", " \n\t ");
    const Tokenizer word = Tokenizer::withVocabulary(TokenizerKind::Word, {"a"});
    const std::string blankMessage
        = dataErrorOf([&] { TextFile(blank, cache).dataset(Split::Train, word, 4, kAllTrain); });
    QVERIFY2(contains(blankMessage, "0 tokens"), blankMessage.c_str());
    // ...but four bytes.
    QCOMPARE(TextFile(blank, cache).dataset(Split::Train, Tokenizer::bytes(), 4, kAllTrain)->size(), 1);
}

void TestDatasets::invalidUtf8NamesTheOffset()
{
    QTemporaryDir dir;
    // "hello " 6 + "w" 1 + "ö" 2 + "rld " 4 = 13: the bad byte is at offset 13.
    const std::string content = "hello w\xC3\xB6rld \xFF more";
    const auto path = writeFile(dir, "bad.txt", content);
    const TextFile file(path, dir.path().toStdString());
    const Tokenizer word = Tokenizer::withVocabulary(TokenizerKind::Word, {"hello"});
    const std::string message = dataErrorOf([&] { file.dataset(Split::Train, word, 4, kAllTrain); });
    QVERIFY2(contains(message, path.string()) && contains(message, "byte 13"), message.c_str());
    // No cache and no temporary file stays behind.
    QVERIFY(!std::filesystem::exists(file.cachePath(word)));
    for (const auto& entry : std::filesystem::directory_iterator(dir.path().toStdString()))
        QVERIFY2(entry.path() == path, entry.path().c_str());
    // Building a vocabulary says the same, and both say what takes such a file.
    VocabularyBuilder builder(TokenizerKind::Character);
    const std::string builderMessage = dataErrorOf([&] { file.addTexts(builder); });
    QVERIFY2(contains(builderMessage, path.string()) && contains(builderMessage, "byte 13"), builderMessage.c_str());
    QVERIFY2(contains(message, "byte tokenizer takes any file"), message.c_str());
    QVERIFY2(contains(builderMessage, "byte tokenizer takes any file"), builderMessage.c_str());
    // The byte tokenizer takes the file as it is.
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 100, kAllTrain);
    QVERIFY(dataset->get(0).ids == bytesOf(content.substr(0, content.size() - 1)));
}

void TestDatasets::largeFileIsStreamed()
{
    QTemporaryDir dir;
    // 400,000 lines of "alpha beta gamma\n" (17 bytes): 6.8 MB, several of the 1 MiB vocabulary chunks.
    const std::string line = "alpha beta gamma\n";
    constexpr std::int64_t kLines = 400'000;
    const auto path = std::filesystem::path(dir.path().toStdString()) / "large.txt";
    {
        std::ofstream out(path, std::ios::binary);
        for (std::int64_t i = 0; i < kLines; ++i)
            out << line;
    }
    const std::int64_t size = kLines * 17;
    QCOMPARE(static_cast<std::int64_t>(std::filesystem::file_size(path)), size);

    const std::int64_t memoryBefore = anonymousMemoryKiB();
    const TextFile file(path, dir.path().toStdString());
    VocabularyBuilder builder(TokenizerKind::Word);
    file.addTexts(builder);
    // Every word counted once per line: no word was cut at a chunk boundary.
    QCOMPARE(builder.distinctTokens(), 3);
    QCOMPARE(builder.count("alpha"), kLines);
    QCOMPARE(builder.count("gamma"), kLines);

    const Tokenizer bytes = Tokenizer::bytes();
    const std::int64_t L = 1000;
    const auto dataset = file.dataset(Split::Train, bytes, L, kAllTrain);
    // ceil((6,800,000 - 1) / 1000) = 6800 windows; window w starts at byte w * 1000, whose character is
    // line[(w * 1000) % 17].
    QCOMPARE(dataset->size(), 6800);
    for (const std::int64_t w : {std::int64_t(0), std::int64_t(1234), std::int64_t(6799)}) {
        const Example example = dataset->get(w);
        const std::int64_t length = std::min(L, size - 1 - w * L);
        QCOMPARE(static_cast<std::int64_t>(example.ids.size()), length);
        for (std::int64_t j = 0; j < length; j += 97) {
            QCOMPARE(example.ids[static_cast<std::size_t>(j)],
                     2 + static_cast<unsigned char>(line[static_cast<std::size_t>((w * L + j) % 17)]));
            QCOMPARE(example.targets[static_cast<std::size_t>(j)],
                     2 + static_cast<unsigned char>(line[static_cast<std::size_t>((w * L + j + 1) % 17)]));
        }
    }
    QCOMPARE(dataset->get(6799).ids.size(), std::size_t(999));

    // The word tokenizer over the same file: 3 tokens a line.
    const Tokenizer words = builder.build(10);  // alpha 2, beta 3, gamma 4 (equal counts: byte order)
    const auto wordData = file.dataset(Split::Train, words, 5, kAllTrain);
    QCOMPARE(wordData->size(), (3 * kLines - 2) / 5 + 1);
    QVERIFY(wordData->get(1).ids == (Ids{4, 2, 3, 4, 2}));  // tokens 5..9: gamma alpha beta gamma alpha

    // Neither the text (6.8 MB) nor its tokens (27 MB as int32, 54 MB as int64) stay on the heap.
    const std::int64_t memoryAfter = anonymousMemoryKiB();
    qInfo("anonymous memory grew by %lld KiB", static_cast<long long>(memoryAfter - memoryBefore));
    if (memoryBefore >= 0 && memoryAfter >= 0)
        QVERIFY2(memoryAfter - memoryBefore < 6 * 1024, qPrintable(QString("%1 KiB").arg(memoryAfter - memoryBefore)));
}

// ---- Batch ----

void TestDatasets::batchPadsAndMasks()
{
    std::vector<Example> examples(3);
    examples[0].ids = {5, 6, 7};
    examples[0].label = 1;
    examples[1].ids = {8};
    examples[1].label = 0;
    examples[2].ids = {9, 10};
    examples[2].label = 2;
    const Batch batch = makeBatch(examples, false);
    QCOMPARE(batch.ids.sizes().vec(), (std::vector<std::int64_t>{3, 3}));
    QVERIFY(batch.ids.scalar_type() == torch::kInt64);
    QVERIFY(batch.mask.scalar_type() == torch::kBool);
    QVERIFY(batch.targets.scalar_type() == torch::kInt64);
    QVERIFY(torch::equal(batch.ids, torch::tensor({5, 6, 7, 8, 0, 0, 9, 10, 0}, torch::kInt64).view({3, 3})));
    QVERIFY(torch::equal(batch.mask,
                         torch::tensor({1, 1, 1, 1, 0, 0, 1, 1, 0}, torch::kInt64).view({3, 3}).to(torch::kBool)));
    QVERIFY(torch::equal(batch.targets, torch::tensor({1, 0, 2}, torch::kInt64)));
    QCOMPARE(batch.tokens, 6);
}

void TestDatasets::modelMaskOnlyForPaddedBatches()
{
    std::vector<Example> full(2);
    full[0].ids = {5, 6};
    full[0].label = 0;
    full[1].ids = {7, 8};
    full[1].label = 1;
    QVERIFY(!modelMask(makeBatch(full, false)).defined());  // every token real: the model needs no mask
    full[1].ids = {7};
    const Batch padded = makeBatch(full, false);
    QVERIFY(modelMask(padded).defined());
    QVERIFY(torch::equal(modelMask(padded), torch::tensor({1, 1, 1, 0}, torch::kInt64).view({2, 2}).to(torch::kBool)));
}

void TestDatasets::correctCountsClassesAndRealTokens()
{
    // Classification: 3 examples, labels 1, 0, 2; predicted 1, 1, 2 -> 2 of 3.
    std::vector<Example> examples(3);
    for (std::size_t i = 0; i < examples.size(); ++i)
        examples[i].ids = {5};
    examples[0].label = 1;
    examples[1].label = 0;
    examples[2].label = 2;
    const torch::Tensor logits = torch::tensor({0.0, 2.0, 1.0, /**/ 0.5, 0.9, 0.1, /**/ 0.0, 0.0, 3.0}).view({3, 3});
    const torch::Tensor classes = correctCounts(logits, makeBatch(examples, false), false);
    QCOMPARE(classes.scalar_type(), torch::kFloat64);
    QCOMPARE(classes[0].item<double>(), 2.0);
    QCOMPARE(classes[1].item<double>(), 3.0);

    // Language model: example 0 has 2 real positions, example 1 has 1 (one padded);
    // targets 4 5 / 7 (pad). Predictions: 4 (right), 3 (wrong) / 7 (right), and a
    // "right" guess of 0 at the padded position that must not count -> 2 of 3.
    std::vector<Example> texts(2);
    texts[0].ids = {3, 4};
    texts[0].targets = {4, 5};
    texts[1].ids = {6};
    texts[1].targets = {7};
    torch::Tensor lm = torch::zeros({2, 2, 8});
    lm[0][0][4] = 1.0;
    lm[0][1][3] = 1.0;
    lm[1][0][7] = 1.0;
    lm[1][1][0] = 1.0;
    const torch::Tensor tokens = correctCounts(lm, makeBatch(texts, true), true);
    QCOMPARE(tokens[0].item<double>(), 2.0);
    QCOMPARE(tokens[1].item<double>(), 3.0);
}

void TestDatasets::languageModelBatch()
{
    std::vector<Example> examples(2);
    examples[0].ids = {3, 4};
    examples[0].targets = {4, 5};
    examples[1].ids = {6, 7, 8, 9};
    examples[1].targets = {7, 8, 9, 10};
    const Batch batch = makeBatch(examples, true);
    QVERIFY(torch::equal(batch.ids, torch::tensor({3, 4, 0, 0, 6, 7, 8, 9}, torch::kInt64).view({2, 4})));
    QVERIFY(torch::equal(batch.targets, torch::tensor({4, 5, 0, 0, 7, 8, 9, 10}, torch::kInt64).view({2, 4})));
    QVERIFY(torch::equal(batch.mask,
                         torch::tensor({1, 1, 0, 0, 1, 1, 1, 1}, torch::kInt64).view({2, 4}).to(torch::kBool)));
    QCOMPARE(batch.tokens, 6);
}

void TestDatasets::batchErrors()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch({}, false));
    std::vector<Example> noToken(2);
    noToken[0].ids = {3};
    noToken[0].label = 0;
    noToken[1].label = 1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(noToken, false));
    std::vector<Example> noLabel(1);
    noLabel[0].ids = {3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(noLabel, false));
    std::vector<Example> mismatched(1);
    mismatched[0].ids = {3, 4};
    mismatched[0].targets = {4};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(mismatched, true));
}

void TestDatasets::samplerIsDeterministic()
{
    BatchSampler a(37, 8, 123), b(37, 8, 123), c(37, 8, 124);
    bool differs = false;
    for (int i = 0; i < 30; ++i) {
        const auto batch = a.next();
        QCOMPARE(batch.size(), std::size_t(8));
        QVERIFY(batch == b.next());
        differs = differs || batch != c.next();
    }
    QVERIFY(differs);
    QCOMPARE(a.position(), 240);
    // The order is shuffled, not 0, 1, 2, ...
    BatchSampler shuffled(100, 100, 1);
    const auto order = shuffled.next();
    std::vector<std::int64_t> identity(100);
    std::iota(identity.begin(), identity.end(), 0);
    QVERIFY(order != identity);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(0, 4, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(4, 0, 0));
}

void TestDatasets::samplerCoversEachEpoch()
{
    // Size 10, batch 4: batches run across epoch ends; indices 0-9 of the stream are epoch 0, 10-19 epoch 1, ...
    BatchSampler sampler(10, 4, 7);
    std::vector<std::int64_t> stream;
    for (int i = 0; i < 10; ++i) {
        const auto batch = sampler.next();
        stream.insert(stream.end(), batch.begin(), batch.end());
    }
    QCOMPARE(stream.size(), std::size_t(40));
    std::vector<std::vector<std::int64_t>> epochs;
    for (int e = 0; e < 4; ++e) {
        std::vector<std::int64_t> epoch(stream.begin() + e * 10, stream.begin() + (e + 1) * 10);
        epochs.push_back(epoch);
        std::sort(epoch.begin(), epoch.end());
        for (std::int64_t i = 0; i < 10; ++i)
            QCOMPARE(epoch[static_cast<std::size_t>(i)], i);  // every index once
    }
    // Each epoch has its own order.
    QVERIFY(epochs[0] != epochs[1] || epochs[1] != epochs[2]);
    QCOMPARE(sampler.epoch(), 4);
    // A batch larger than the dataset spans epochs.
    BatchSampler big(3, 7, 0);
    const auto batch = big.next();
    QCOMPARE(batch.size(), std::size_t(7));
    QCOMPARE(std::set<std::int64_t>(batch.begin(), batch.begin() + 3).size(), std::size_t(3));
}

void TestDatasets::samplerSeekReproducesBatches()
{
    BatchSampler original(23, 5, 99);
    for (int i = 0; i < 7; ++i)
        original.next();
    const std::int64_t position = original.position();
    QCOMPARE(position, 35);
    std::vector<std::vector<std::int64_t>> future;
    for (int i = 0; i < 6; ++i)
        future.push_back(original.next());

    BatchSampler resumed(23, 5, 99);
    resumed.seek(position);
    QCOMPARE(resumed.position(), position);
    for (const auto& batch : future)
        QVERIFY(resumed.next() == batch);
    // Seeking back on the same sampler replays too.
    original.seek(position);
    QVERIFY(original.next() == future[0]);
    // And from the start.
    BatchSampler fresh(23, 5, 99), rewound(23, 5, 99);
    rewound.next();
    rewound.next();
    rewound.seek(0);
    QVERIFY(rewound.next() == fresh.next());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rewound.seek(-1));
}

QTEST_GUILESS_MAIN(TestDatasets)
#include "tst_datasets.moc"
