// Tests of data/Datasets' ListOps datasets and classification files: TSV, CSV with quotes, labels, errors
// with file and line, deterministic splits. Expected values are worked out by hand in the comments.
#include "DatasetsTestSupport.h"

using namespace widelab;
using namespace widelab::datasetstest;

namespace {

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

}  // namespace

class TestDatasetsClassification : public QObject {
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
};

// ---- ListOps ----

void TestDatasetsClassification::listOpsDataset()
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

void TestDatasetsClassification::listOpsSplitsDiffer()
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

void TestDatasetsClassification::listOpsLongSequences()
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

void TestDatasetsClassification::listOpsRejectsTooShortSequences()
{
    ListOpsOptions options;  // up to 128 tokens
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeListOpsDataset(options, 10, 0, Split::Train, 127));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeListOpsDataset(options, -1, 0, Split::Train, 128));
    QCOMPARE(makeListOpsDataset(options, 0, 0, Split::Test, 128)->size(), 0);
}

// ---- ClassificationFile ----

void TestDatasetsClassification::tsvIntegerLabels()
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

void TestDatasetsClassification::csvQuotesAndStringLabels()
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

void TestDatasetsClassification::csvWithCrLf()
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

void TestDatasetsClassification::byteOrderMarkIsSkipped()
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

void TestDatasetsClassification::truncatesLongTexts()
{
    QTemporaryDir dir;
    const auto path = writeFile(dir, "long.tsv", "0\tabcdefghij\n1\tab\n");
    const ClassificationFile file(path, kAllTrain, 0);
    const auto dataset = file.dataset(Split::Train, Tokenizer::bytes(), 4);
    QVERIFY(dataset->get(0).ids == bytesOf("abcd"));
    QVERIFY(dataset->get(1).ids == bytesOf("ab"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, file.dataset(Split::Train, Tokenizer::bytes(), 0));
}

void TestDatasetsClassification::wordTokenizerAndTrainingTexts()
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

void TestDatasetsClassification::badRows_data()
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

void TestDatasetsClassification::badRows()
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

void TestDatasetsClassification::emptyAndMissingFiles()
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

void TestDatasetsClassification::splitsAreDeterministicDisjointAndComplete()
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

void TestDatasetsClassification::splitDependsOnlyOnSeedAndRowIndex()
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

QTEST_GUILESS_MAIN(TestDatasetsClassification)
#include "tst_datasets_classification.moc"
