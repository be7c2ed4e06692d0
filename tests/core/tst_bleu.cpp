// Tests of measure/Bleu: sacreBLEU's 13a tokenisation, corpus BLEU (exp
// smoothing, brevity penalty) and chrF2 on small cases whose right answers are
// worked out by hand in the comments; the line reader and its errors.
// tests/app/bleu_sacrebleu.py checks the same code against sacreBLEU itself.
#include "measure/Bleu.h"
#include "runtime/SystemError.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

using namespace widelab;

namespace {

BleuScore bleuOf(const std::string& hypothesis, const std::string& reference)
{
    return corpusBleu({hypothesis}, {reference});
}

double chrfOf(const std::string& hypothesis, const std::string& reference)
{
    return corpusChrf({hypothesis}, {reference}).score;
}

bool near(double a, double b, double tolerance = 1e-9) { return std::abs(a - b) <= tolerance; }

std::filesystem::path writeFile(const QTemporaryDir& dir, const char* name, const std::string& bytes)
{
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

template <typename Call>
std::string errorOf(Call call)
{
    try {
        call();
    } catch (const std::exception& error) {
        return error.what();
    }
    return "(no error)";
}

}  // namespace

class TestBleu : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tokenize13a_data();
    void tokenize13a();
    void identicalHypothesisScores100();
    void countsClippedNgramsAndTheirGeometricMean();
    void ordersWithoutMatchAreSmoothedExponentially();
    void longerHypothesisHasNoBrevityPenalty();
    void shorterHypothesisIsPenalised();
    void emptyHypothesisScoresZero();
    void noFourGramsScoresZero();
    void corpusSumsCountsOverLines();
    void printsAsSacreBleu();
    void chrfOfIdenticalTextIs100();
    void chrfAveragesOrdersBothSidesHave();
    void chrfCountsCodePointsWithoutWhitespace();
    void chrfOfEmptyHypothesisIsZero();
    void unalignedOrEmptyInputIsAnError();
    void textThatIsNotUtf8IsAnError();
    void readsLinesAsSacreBleuDoes();
    void readerNamesFileAndLine();
};

// ---------------------------------------------------------------- 13a

void TestBleu::tokenize13a_data()
{
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("tokens");

    QTest::newRow("punctuation split off") << "Hello, world! (yes) [no] a/b 50% $5" << "Hello , world ! ( yes ) [ no ] a / b 50 % $ 5";
    QTest::newRow("apostrophe and inner dash stay") << "don't e-mail" << "don't e-mail";
    QTest::newRow("period and comma between digits stay") << "1,000.50 and 3.14." << "1,000.50 and 3.14 .";
    QTest::newRow("comma after a digit, before a space") << "It costs 7, or 8." << "It costs 7 , or 8 .";
    QTest::newRow("comma between digit and letter") << "1,x x,1" << "1 , x x , 1";
    // " .5": the period follows a space (not a digit), so it is split off although a digit follows.
    QTest::newRow("period before a digit after a space") << ".5 and 0.5" << ". 5 and 0.5";
    QTest::newRow("abbreviation") << "U.S.A." << "U . S . A .";
    // After "a." is split, the second period's left neighbour was consumed: only its right side splits it.
    QTest::newRow("two periods") << "a..b" << "a . . b";
    QTest::newRow("dash after a digit") << "555-1234 a-1" << "555 - 1234 a-1";
    QTest::newRow("entities") << "Tom &amp; Jerry &quot;hi&quot; 1 &lt; 2 &gt; 0" << "Tom & Jerry \" hi \" 1 < 2 > 0";
    // One pass each, &quot; before &amp;: "&amp;quot;" becomes "&quot;", which stays, and is then split.
    QTest::newRow("entity made by unescaping") << "&amp;quot;" << "& quot ;";
    QTest::newRow("skipped") << "say <skipped> it" << "say it";
    QTest::newRow("spaces collapse") << "  lots \t of   space \r " << "lots of space";
    QTest::newRow("unicode spaces split") << QString::fromUtf8("tab\tand\u00a0nbsp\u3000wide") << "tab and nbsp wide";
    QTest::newRow("non-ASCII letters stay") << QString::fromUtf8("café. Straße 東京") << QString::fromUtf8("café . Straße 東京");
    QTest::newRow("empty") << "" << "";
}

void TestBleu::tokenize13a()
{
    QFETCH(QString, line);
    QFETCH(QString, tokens);
    QCOMPARE(QString::fromStdString(widelab::tokenize13a(line.toStdString())), tokens);
}

// ---------------------------------------------------------------- BLEU

void TestBleu::identicalHypothesisScores100()
{
    const BleuScore bleu = bleuOf("The cat sat on the mat.", "The cat sat on the mat.");
    QVERIFY(near(bleu.score, 100.0));
    for (double p : bleu.precisions)
        QVERIFY(near(p, 100.0));
    QCOMPARE(bleu.brevityPenalty, 1.0);
    QCOMPARE(bleu.sysLen, 7);  // The cat sat on the mat .
    QCOMPARE(bleu.refLen, 7);
}

void TestBleu::countsClippedNgramsAndTheirGeometricMean()
{
    // hyp: the cat sat upon the red mat     ref: the cat lay on the red mat
    // 1-grams: the x2 (ref has 2), cat, red, mat match; sat, upon do not: 5 of 7
    // 2-grams: "the cat", "the red", "red mat" match; "cat sat", "sat upon", "upon the" not: 3 of 6
    // 3-grams: "the red mat" only: 1 of 5
    // 4-grams: none of 4, so exp smoothing gives 100 / (2 * 4) = 12.5
    // BLEU = (500/7 * 50 * 20 * 12.5)^(1/4) = 892857.14^(1/4) = 30.7394; equal lengths, BP 1.
    const BleuScore bleu = bleuOf("the cat sat upon the red mat", "the cat lay on the red mat");
    QCOMPARE(bleu.correct, (std::array<std::int64_t, 4>{5, 3, 1, 0}));
    QCOMPARE(bleu.total, (std::array<std::int64_t, 4>{7, 6, 5, 4}));
    QVERIFY(near(bleu.precisions[0], 500.0 / 7.0));
    QVERIFY(near(bleu.precisions[3], 12.5));
    QVERIFY(near(bleu.score, std::pow(500.0 / 7.0 * 50.0 * 20.0 * 12.5, 0.25)));
    QVERIFY(near(bleu.score, 30.7394, 1e-4));

    // Clipping: "the the the" against "the cat": one "the" of three counts.
    QCOMPARE(bleuOf("the the the", "the cat").correct[0], 1);
}

void TestBleu::ordersWithoutMatchAreSmoothedExponentially()
{
    // hyp: mat the on sat cat    ref: cat sat the mat on
    // 1-grams all 5 match; no 2-, 3- or 4-gram does. Each order without a match
    // doubles the divisor: 100/(2*4) = 12.5, 100/(4*3) = 8.333, 100/(8*2) = 6.25.
    // BLEU = (100 * 12.5 * 8.333 * 6.25)^(1/4) = 65104.17^(1/4) = 15.9735.
    const BleuScore bleu = bleuOf("mat the on sat cat", "cat sat the mat on");
    QCOMPARE(bleu.correct, (std::array<std::int64_t, 4>{5, 0, 0, 0}));
    QVERIFY(near(bleu.precisions[1], 12.5));
    QVERIFY(near(bleu.precisions[2], 100.0 / 12.0));
    QVERIFY(near(bleu.precisions[3], 6.25));
    QVERIFY(near(bleu.score, std::pow(100.0 * 12.5 * (100.0 / 12.0) * 6.25, 0.25)));
    QVERIFY(near(bleu.score, 15.9735, 1e-4));
}

void TestBleu::longerHypothesisHasNoBrevityPenalty()
{
    // hyp: the cat sat on the mat today (7)   ref: the cat sat on the mat (6)
    // everything but "today" and the n-grams through it matches: 6/7, 5/6, 4/5, 3/4.
    const BleuScore bleu = bleuOf("the cat sat on the mat today", "the cat sat on the mat");
    QCOMPARE(bleu.brevityPenalty, 1.0);
    QCOMPARE(bleu.sysLen, 7);
    QCOMPARE(bleu.refLen, 6);
    QVERIFY(near(bleu.ratio(), 7.0 / 6.0));
    QVERIFY(near(bleu.score, std::pow(600.0 / 7.0 * 500.0 / 6.0 * 80.0 * 75.0, 0.25)));  // 80.9107
}

void TestBleu::shorterHypothesisIsPenalised()
{
    // 4 tokens against 6, all n-grams matching: BP = exp(1 - 6/4) = exp(-0.5) = 0.60653, BLEU 60.653.
    const BleuScore bleu = bleuOf("the cat sat on", "the cat sat on the mat");
    QVERIFY(near(bleu.brevityPenalty, std::exp(-0.5)));
    QVERIFY(near(bleu.score, 100.0 * std::exp(-0.5)));
}

void TestBleu::emptyHypothesisScoresZero()
{
    const BleuScore bleu = corpusBleu({"", ""}, {"a b c d", "e"});
    QCOMPARE(bleu.score, 0.0);
    QCOMPARE(bleu.sysLen, 0);
    QCOMPARE(bleu.refLen, 5);
    QCOMPARE(bleu.brevityPenalty, 0.0);  // no hypothesis at all: sacreBLEU's 0, not exp(-inf)
    for (double p : bleu.precisions)
        QCOMPARE(p, 0.0);
    const BleuScore both = bleuOf("", "");
    QCOMPARE(both.score, 0.0);
    QCOMPARE(both.ratio(), 0.0);
}

void TestBleu::noFourGramsScoresZero()
{
    // Three tokens have no 4-gram at all: that order's precision is 0, not
    // smoothed, and the geometric mean is 0 although every n-gram matched.
    const BleuScore bleu = bleuOf("a b c", "a b c");
    QCOMPARE(bleu.total[3], 0);
    QVERIFY(near(bleu.precisions[2], 100.0));
    QCOMPARE(bleu.precisions[3], 0.0);
    QCOMPARE(bleu.score, 0.0);
}

void TestBleu::corpusSumsCountsOverLines()
{
    // Line 1 as in shorterHypothesisIsPenalised (4 against 6), line 2 "a b c d e" twice (5 against 5):
    // lengths 9 against 11, one brevity penalty exp(1 - 11/9) for the corpus; all n-grams match.
    const BleuScore bleu = corpusBleu({"the cat sat on", "a b c d e"}, {"the cat sat on the mat", "a b c d e"});
    QCOMPARE(bleu.sysLen, 9);
    QCOMPARE(bleu.refLen, 11);
    QCOMPARE(bleu.total, (std::array<std::int64_t, 4>{9, 7, 5, 3}));
    QCOMPARE(bleu.correct, bleu.total);
    QVERIFY(near(bleu.score, 100.0 * std::exp(1.0 - 11.0 / 9.0)));
}

void TestBleu::printsAsSacreBleu()
{
    const BleuScore bleu = bleuOf("the cat sat upon the red mat", "the cat lay on the red mat");
    QCOMPARE(QString::fromStdString(formatBleu(bleu)),
             "BLEU = 30.74 71.4/50.0/20.0/12.5 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)");
    QCOMPARE(QString::fromStdString(formatBleu(bleu, 4)).left(14), "BLEU = 30.7394");
    QCOMPARE(QString::fromStdString(formatChrf(corpusChrf({"ab"}, {"ac"}))), "chrF2 = 25.00");
}

// ---------------------------------------------------------------- chrF

void TestBleu::chrfOfIdenticalTextIs100()
{
    QVERIFY(near(chrfOf("The cat sat on the mat.", "The cat sat on the mat."), 100.0));
}

void TestBleu::chrfAveragesOrdersBothSidesHave()
{
    // hyp "ab", ref "ac": 1-grams a,b against a,c: 1 match, P = R = 1/2; 2-grams "ab" against "ac":
    // P = R = 0. Orders 3..6: neither side has any, so they are left out of the average.
    // P = R = (1/2 + 0) / 2 = 1/4; F2 = (1 + 4) P R / (4 P + R) = 5/16 / (5/4) = 1/4: chrF 25.
    const ChrfScore chrf = corpusChrf({"ab"}, {"ac"});
    QVERIFY(near(chrf.score, 25.0));
    QCOMPARE(chrf.hypothesis, (std::array<std::int64_t, 6>{2, 1, 0, 0, 0, 0}));
    QCOMPARE(chrf.matched, (std::array<std::int64_t, 6>{1, 0, 0, 0, 0, 0}));
    // Recall weighs more (beta 2): "a" against "ab": P = 1, R = 1/2 at order 1 (order 2 only in the
    // reference): F2 = 5 * 1 * 1/2 / (4 + 1/2) = 5/9 = 55.56; the other way round (P = 1/2, R = 1)
    // 5 * 1/2 / (2 + 1) = 5/6 = 83.33.
    QVERIFY(near(chrfOf("a", "ab"), 500.0 / 9.0));
    QVERIFY(near(chrfOf("ab", "a"), 100.0 * 5.0 * 0.5 / (4.0 * 0.5 + 1.0)));
}

void TestBleu::chrfCountsCodePointsWithoutWhitespace()
{
    QVERIFY(near(chrfOf("a b", "ab"), 100.0));  // whitespace removed
    QVERIFY(near(chrfOf("a\u00a0b", "ab"), 100.0));
    // "éa" against "ea" is "ab" against "ac" again: é is one character, not two bytes.
    QVERIFY(near(chrfOf("\xc3\xa9" "a", "ea"), 25.0));
}

void TestBleu::chrfOfEmptyHypothesisIsZero()
{
    QCOMPARE(chrfOf("", "a b c"), 0.0);
    QCOMPARE(chrfOf("", ""), 0.0);
}

// ---------------------------------------------------------------- errors and files

void TestBleu::unalignedOrEmptyInputIsAnError()
{
    QVERIFY_THROWS_EXCEPTION(BleuInputError, corpusBleu({"a", "b"}, {"a"}));
    QVERIFY_THROWS_EXCEPTION(BleuInputError, corpusChrf({"a"}, {"a", "b"}));
    QVERIFY(errorOf([] { corpusBleu({"a", "b", "c"}, {"a"}); }).starts_with("3 hypothesis lines against 1 reference lines"));
    QVERIFY_THROWS_EXCEPTION(BleuInputError, corpusBleu({}, {}));
}

void TestBleu::textThatIsNotUtf8IsAnError()
{
    QCOMPARE(QString::fromStdString(errorOf([] { corpusChrf({"ok", "caf\xe9"}, {"ok", "cafe"}); })),
             "hypothesis line 2: byte 4 is not UTF-8");
    QCOMPARE(QString::fromStdString(errorOf([] { corpusBleu({"ok"}, {"\xff"}); })),
             "reference line 1: byte 1 is not UTF-8");
}

void TestBleu::readsLinesAsSacreBleuDoes()
{
    QTemporaryDir dir;
    using Lines = std::vector<std::string>;
    QCOMPARE(readScoringLines(writeFile(dir, "a", "one\ntwo")), (Lines{"one", "two"}));
    QCOMPARE(readScoringLines(writeFile(dir, "b", "one\ntwo\n")), (Lines{"one", "two"}));
    QCOMPARE(readScoringLines(writeFile(dir, "c", "one\n\n")), (Lines{"one", ""}));
    QCOMPARE(readScoringLines(writeFile(dir, "d", "")), Lines{});
    QCOMPARE(readScoringLines(writeFile(dir, "e", "a\r\nb\rc\n")), (Lines{"a\r", "b\rc"}));
}

void TestBleu::readerNamesFileAndLine()
{
    QTemporaryDir dir;
    const std::filesystem::path latin1 = writeFile(dir, "latin1.txt", "ok\ncaf\xe9\n");
    const std::string message = errorOf([&] { readScoringLines(latin1); });
    QCOMPARE(QString::fromStdString(message),
             QString::fromStdString(latin1.string() + " line 2: byte 4 (0xe9) is not UTF-8; BLEU and chrF read UTF-8 text"));
    QVERIFY_THROWS_EXCEPTION(BleuInputError, readScoringLines(latin1));
    QVERIFY_THROWS_EXCEPTION(FileError, readScoringLines(std::filesystem::path(dir.path().toStdString()) / "missing"));
}

QTEST_GUILESS_MAIN(TestBleu)
#include "tst_bleu.moc"
