// Tests of data/ListOps: evaluation of hand-written expressions, the generator's labels, lengths, depths and
// argument counts (checked by a parser written here), determinism, and the data layer's random numbers against
// values computed with an independent Python implementation of splitmix64 / xoshiro256**.
#include "TestSupport.h"
#include "data/ListOps.h"

#include <QElapsedTimer>
#include <QtTest>

#include <array>
#include <cmath>
#include <set>
#include <sstream>

using namespace widelab;

namespace {

std::vector<std::string> words(const std::string& text)
{
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string word; in >> word;)
        out.push_back(word);
    return out;
}

// Shape of an expression: deepest operator nesting (a lone value has depth 1, "[MIN 1 2 ]" depth 2) and the
// fewest / most arguments of any operator. Written independently of the library's evaluator.
struct Shape {
    int depth = 0;
    int fewestArgs = 1 << 30;
    int mostArgs = 0;
};

Shape shapeOf(const std::string& text)
{
    Shape shape;
    std::vector<int> args;  // argument counts of the open operators
    for (const std::string& word : words(text)) {
        if (word[0] == '[') {
            if (!args.empty())
                ++args.back();
            args.push_back(0);
            shape.depth = std::max(shape.depth, static_cast<int>(args.size()) + 1);
        } else if (word == "]") {
            shape.fewestArgs = std::min(shape.fewestArgs, args.back());
            shape.mostArgs = std::max(shape.mostArgs, args.back());
            args.pop_back();
        } else {
            if (!args.empty())
                ++args.back();
            shape.depth = std::max(shape.depth, 1);
        }
    }
    return shape;
}

}  // namespace

class TestListOps : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void evaluate_data();
    void evaluate();
    void malformed_data();
    void malformed();
    void labelsAreTheValues();
    void lengthsWithinRange();
    void depthAndArgumentsFollowTheOptions();
    void singleSpacedText();
    void deterministic();
    void differentSeedsDiffer();
    void allTenClasses();
    void generatorMatchesGenerateListOps();
    void impossibleOptions();
    void unreachableRangeFailsFast();
    void tokenizer();
    void randomKnownValues();
    void randomBelowIsInRangeAndUniform();
    void mixSeedSeparatesStreams();
};

void TestListOps::evaluate_data()
{
    QTest::addColumn<QString>("expression");
    QTest::addColumn<qint64>("value");
    QTest::newRow("the LRA example") << QString("[MAX 4 3 [MIN 2 3 ] 1 0 ]") << 4LL;
    QTest::newRow("a lone value") << QString("7") << 7LL;
    QTest::newRow("MIN of a nested MAX: MIN(9, MAX(1, 8), 5) = 5") << QString("[MIN 9 [MAX 1 8 ] 5 ]") << 5LL;
    QTest::newRow("MED odd: 1 4 9 -> 4") << QString("[MED 1 9 4 ]") << 4LL;
    QTest::newRow("MED even: 1 2 4 9 -> (2+4)/2 = 3") << QString("[MED 9 2 4 1 ]") << 3LL;
    QTest::newRow("MED even truncates: (3+4)/2 = 3.5 -> 3") << QString("[MED 3 4 ]") << 3LL;
    QTest::newRow("MED even: (8+9)/2 = 8.5 -> 8") << QString("[MED 9 0 8 9 ]") << 8LL;
    QTest::newRow("SM: 5+7+9 = 21 -> 1") << QString("[SM 5 7 9 ]") << 1LL;
    QTest::newRow("SM nested: SM(9,9) = 8; 8+3 = 11 -> 1") << QString("[SM [SM 9 9 ] 3 ]") << 1LL;
    QTest::newRow("SM of zeros") << QString("[SM 0 0 ]") << 0LL;
    QTest::newRow("three levels: SM(4,4)=8, MED(8,1)=4, MAX(4,2)=4")
        << QString("[MAX [MED [SM 4 4 ] 1 ] 2 ]") << 4LL;
    QTest::newRow("MIN(MAX(MED(1,2,3),0),SM(6,7)) = MIN(2, 3) = 2")
        << QString("[MIN [MAX [MED 1 2 3 ] 0 ] [SM 6 7 ] ]") << 2LL;
    QTest::newRow("any whitespace separates") << QString("  [MIN\t3\n2 ]  ") << 2LL;
    QTest::newRow("one argument") << QString("[MAX 6 ]") << 6LL;
}

void TestListOps::evaluate()
{
    QFETCH(QString, expression);
    QFETCH(qint64, value);
    QCOMPARE(evaluateListOps(expression.toStdString()), value);
}

void TestListOps::malformed_data()
{
    QTest::addColumn<QString>("expression");
    QTest::addColumn<QString>("reason");
    QTest::newRow("empty") << QString("") << QString("empty");
    QTest::newRow("blank") << QString("   ") << QString("empty");
    QTest::newRow("unclosed") << QString("[MIN 1 2") << QString("not closed");
    QTest::newRow("stray ]") << QString("1 ]") << QString("after the end");
    QTest::newRow("] first") << QString("] 1") << QString("without an operator");
    QTest::newRow("no arguments") << QString("[MIN ]") << QString("without arguments");
    QTest::newRow("two digits") << QString("[MAX 12 3 ]") << QString("unknown token \"12\"");
    QTest::newRow("two expressions") << QString("1 2") << QString("after the end");
    QTest::newRow("unknown operator") << QString("[FOO 1 2 ]") << QString("unknown token \"[FOO\"");
    QTest::newRow("parentheses") << QString("( [MIN 1 2 ] )") << QString("unknown token \"(\"");
    QTest::newRow("lower case") << QString("[min 1 2 ]") << QString("unknown token");
}

void TestListOps::malformed()
{
    QFETCH(QString, expression);
    QFETCH(QString, reason);
    try {
        evaluateListOps(expression.toStdString());
        QFAIL("no DataError");
    } catch (const DataError& e) {
        QVERIFY2(std::string(e.what()).find(reason.toStdString()) != std::string::npos, e.what());
    }
}

void TestListOps::labelsAreTheValues()
{
    const auto examples = generateListOps(ListOpsOptions(), 500, 7);
    QCOMPARE(examples.size(), std::size_t(500));
    for (const TextExample& example : examples) {
        QVERIFY(example.label >= 0 && example.label <= 9);
        QCOMPARE(evaluateListOps(example.text), example.label);
    }
}

void TestListOps::lengthsWithinRange()
{
    for (const auto& [low, high] : std::vector<std::pair<std::int64_t, std::int64_t>>{{16, 128}, {1, 4}, {40, 41},
                                                                                        {300, 500}}) {
        ListOpsOptions options;
        options.minLength = low;
        options.maxLength = high;
        std::set<std::size_t> lengths;
        for (const TextExample& example : generateListOps(options, 200, 11)) {
            const std::size_t length = words(example.text).size();
            QVERIFY2(static_cast<std::int64_t>(length) >= low && static_cast<std::int64_t>(length) <= high,
                     example.text.c_str());
            lengths.insert(length);
            QCOMPARE(evaluateListOps(example.text), example.label);
        }
        if (high - low >= 10)
            QVERIFY(lengths.size() >= 3);  // not one length over and over
    }
    // Both ends of the range are reachable: length 1 is a lone value; length 4 is an operator with 2 values.
    ListOpsOptions tiny;
    tiny.minLength = 1;
    tiny.maxLength = 4;
    std::set<std::size_t> lengths;
    for (const TextExample& example : generateListOps(tiny, 300, 3))
        lengths.insert(words(example.text).size());
    QVERIFY(lengths.count(1) == 1 && lengths.count(4) == 1);
    QVERIFY(lengths.count(2) == 0 && lengths.count(3) == 0);  // no expression has 2 or 3 tokens
}

void TestListOps::depthAndArgumentsFollowTheOptions()
{
    ListOpsOptions options;
    options.minLength = 10;
    options.maxLength = 200;
    options.maxDepth = 3;
    options.maxArgs = 3;
    options.operatorProbability = 0.6;
    int deepest = 0, fewest = 1 << 30, most = 0;
    for (const TextExample& example : generateListOps(options, 300, 5)) {
        const Shape shape = shapeOf(example.text);
        deepest = std::max(deepest, shape.depth);
        fewest = std::min(fewest, shape.fewestArgs);
        most = std::max(most, shape.mostArgs);
    }
    // Operators exist only at depths 1 and 2, so values sit at depth 3 at most; every operator has 2 or 3
    // arguments, and with 300 examples both counts occur.
    QCOMPARE(deepest, 3);
    QCOMPARE(fewest, 2);
    QCOMPARE(most, 3);

    // maxDepth 1: the root cannot be an operator.
    ListOpsOptions flat;
    flat.minLength = 1;
    flat.maxLength = 1;
    flat.maxDepth = 1;
    flat.operatorProbability = 1.0;
    for (const TextExample& example : generateListOps(flat, 20, 1))
        QCOMPARE(words(example.text).size(), std::size_t(1));

    // A huge maxDepth is no problem (nothing recurses per level): the length range bounds the expressions.
    ListOpsOptions deep;
    deep.maxDepth = 1 << 30;
    deep.operatorProbability = 0.5;
    for (const TextExample& example : generateListOps(deep, 50, 4)) {
        QVERIFY(words(example.text).size() >= 16 && words(example.text).size() <= 128);
        QCOMPARE(evaluateListOps(example.text), example.label);
    }
}

void TestListOps::singleSpacedText()
{
    for (const TextExample& example : generateListOps(ListOpsOptions(), 100, 2)) {
        QVERIFY(!example.text.empty());
        QVERIFY(example.text.front() != ' ' && example.text.back() != ' ');
        QVERIFY(example.text.find("  ") == std::string::npos);
        QVERIFY(example.text.find_first_of("\t\n()") == std::string::npos);
        QCOMPARE(example.text.front(), '[');  // 16+ tokens: the root is an operator
        QCOMPARE(example.text.back(), ']');
    }
}

void TestListOps::deterministic()
{
    ListOpsOptions options;
    options.minLength = 20;
    options.maxLength = 60;
    const auto a = generateListOps(options, 100, 42);
    const auto b = generateListOps(options, 100, 42);
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        QVERIFY(a[i].text == b[i].text);
        QCOMPARE(a[i].label, b[i].label);
    }
}

void TestListOps::differentSeedsDiffer()
{
    const auto a = generateListOps(ListOpsOptions(), 50, 1);
    const auto b = generateListOps(ListOpsOptions(), 50, 2);
    int same = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        same += a[i].text == b[i].text;
    QVERIFY(same < 3);
    // The examples of one call are not repeats of each other either.
    std::set<std::string> distinct;
    for (const TextExample& example : a)
        distinct.insert(example.text);
    QVERIFY(distinct.size() >= 48);
}

void TestListOps::allTenClasses()
{
    std::array<int, 10> counts{};
    for (const TextExample& example : generateListOps(ListOpsOptions(), 2000, 99))
        ++counts[static_cast<std::size_t>(example.label)];
    for (int c = 0; c < 10; ++c)
        QVERIFY2(counts[static_cast<std::size_t>(c)] > 0, qPrintable(QString("no example of class %1").arg(c)));
}

void TestListOps::generatorMatchesGenerateListOps()
{
    ListOpsOptions options;
    options.minLength = 30;
    options.maxLength = 90;
    const auto all = generateListOps(options, 20, 1234);
    ListOpsGenerator generator(options, 1234);
    for (const TextExample& expected : all) {
        const TextExample example = generator.next();
        QVERIFY(example.text == expected.text);
        QCOMPARE(example.label, expected.label);
    }
}

void TestListOps::impossibleOptions()
{
    const auto throwsInvalid = [](auto change, std::int64_t count = 1) {
        ListOpsOptions options;
        change(options);
        try {
            generateListOps(options, count, 0);
        } catch (const std::invalid_argument&) {
            return true;
        }
        return false;
    };
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.minLength = 200; }));  // above maxLength 128
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.maxLength = 0; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.minLength = 0; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.maxDepth = 0; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.maxArgs = 1; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.operatorProbability = 1.5; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.operatorProbability = -0.1; }));
    QVERIFY(throwsInvalid([](ListOpsOptions& o) { o.operatorProbability = std::nan(""); }));
    QVERIFY(throwsInvalid([](ListOpsOptions&) {}, -1));
    QVERIFY(!throwsInvalid([](ListOpsOptions&) {}, 0));
    QVERIFY(generateListOps(ListOpsOptions(), 0, 0).empty());
}

void TestListOps::unreachableRangeFailsFast()
{
    const auto expectDataError = [](const ListOpsOptions& options, const std::string& reason) {
        QElapsedTimer timer;
        timer.start();
        try {
            generateListOps(options, 5, 0);
            QFAIL("no DataError");
        } catch (const DataError& e) {
            QVERIFY2(std::string(e.what()).find(reason) != std::string::npos, e.what());
        }
        QVERIFY2(timer.elapsed() < 10'000, qPrintable(QString("took %1 ms").arg(timer.elapsed())));
    };
    // maxDepth 2, maxArgs 3: the longest expression is an operator with 3 values, 5 tokens.
    ListOpsOptions shallow;
    shallow.maxDepth = 2;
    shallow.maxArgs = 3;
    shallow.minLength = 6;
    shallow.maxLength = 100;
    expectDataError(shallow, "6..100");
    // Probability 0: only lone values.
    ListOpsOptions noOperators;
    noOperators.operatorProbability = 0.0;
    expectDataError(noOperators, "16..128");
    // Probability 1, maxArgs 2, maxDepth 4: operators at depths 1-3, so the shortest expression is a full binary
    // tree of 2 + 2*(2 + 2*(2 + 2*1)) = 22 tokens, and 16..20 is out of reach.
    ListOpsOptions full;
    full.operatorProbability = 1.0;
    full.maxArgs = 2;
    full.maxDepth = 4;
    full.minLength = 16;
    full.maxLength = 20;
    expectDataError(full, "16..20");
    // maxArgs 2, maxDepth 3: lengths are 1, 4, 7 and 10 only; 5..6 lies in between, found out by rejection.
    ListOpsOptions gap;
    gap.maxDepth = 3;
    gap.maxArgs = 2;
    gap.minLength = 5;
    gap.maxLength = 6;
    expectDataError(gap, "tries");
    // ...while 7..7 is reachable.
    gap.minLength = gap.maxLength = 7;
    for (const TextExample& example : generateListOps(gap, 10, 0))
        QCOMPARE(words(example.text).size(), std::size_t(7));
}

void TestListOps::tokenizer()
{
    const Tokenizer tokenizer = listOpsTokenizer();
    QVERIFY(tokenizer.kind() == TokenizerKind::Fixed);
    QCOMPARE(tokenizer.vocabSize(), 17);
    // [MIN 2, [MAX 3, [MED 4, [SM 5, ] 6, digit d 7 + d
    QVERIFY(tokenizer.encode("[MAX 4 3 [MIN 2 3 ] 1 0 ]")
            == (std::vector<std::int64_t>{3, 11, 10, 2, 9, 10, 6, 8, 7, 6}));
    QVERIFY(tokenizer.encode("[MED [SM 9 ] ]") == (std::vector<std::int64_t>{4, 5, 16, 6, 6}));
    // Every generated text is covered by the vocabulary.
    for (const TextExample& example : generateListOps(ListOpsOptions(), 50, 8)) {
        const auto ids = tokenizer.encode(example.text);
        QCOMPARE(ids.size(), words(example.text).size());
        for (const std::int64_t id : ids)
            QVERIFY(id >= 2 && id <= 16);
        QVERIFY(tokenizer.decode(ids) == example.text);
    }
}

void TestListOps::randomKnownValues()
{
    // From a separate Python implementation of splitmix64 seeding and xoshiro256** (Blackman & Vigna); its
    // splitmix64(0) gives the published first value 0xe220a8397b1dcdaf.
    DataRandom zero(0);
    QCOMPARE(zero.next(), 0x99ec5f36cb75f2b4ULL);
    QCOMPARE(zero.next(), 0xbf6e1f784956452aULL);
    QCOMPARE(zero.next(), 0x1a5f849d4933e6e0ULL);
    DataRandom other(12345);
    QCOMPARE(other.next(), 0xbe6a36374160d49bULL);
    QCOMPARE(other.next(), 0x214aaa0637a688c6ULL);
    // uniform() is the top 53 bits: 0x99ec5f36cb75f2b4 >> 11 over 2^53.
    DataRandom again(0);
    QCOMPARE(again.uniform(), static_cast<double>(0x99ec5f36cb75f2b4ULL >> 11) / 9007199254740992.0);
}

void TestListOps::randomBelowIsInRangeAndUniform()
{
    DataRandom random(5);
    std::array<int, 7> counts{};
    for (int i = 0; i < 70000; ++i) {
        const std::uint64_t r = random.below(7);
        QVERIFY(r < 7);
        ++counts[r];
    }
    // 10000 expected each; the standard deviation is about 93.
    for (const int count : counts)
        QVERIFY2(std::abs(count - 10000) < 600, qPrintable(QString::number(count)));
    QCOMPARE(random.below(1), std::uint64_t(0));
    for (int i = 0; i < 1000; ++i) {
        const double u = random.uniform();
        QVERIFY(u >= 0.0 && u < 1.0);
    }
}

void TestListOps::mixSeedSeparatesStreams()
{
    std::set<std::uint64_t> values;
    for (std::uint64_t seed = 0; seed < 20; ++seed)
        for (std::uint64_t stream = 0; stream < 20; ++stream)
            values.insert(mixSeed(seed, stream));
    QCOMPARE(values.size(), std::size_t(400));
    QCOMPARE(mixSeed(3, 4), mixSeed(3, 4));
    QVERIFY(mixSeed(3, 4) != mixSeed(4, 3));
}

QTEST_GUILESS_MAIN(TestListOps)
#include "tst_listops.moc"
