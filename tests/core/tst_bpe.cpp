// Tests of the bpe tokenizer (data/Bpe, TokenizerKind::Bpe): the pieces that merges never cross, merges learned
// on a corpus small enough to work out by hand in the comments, encoding against merges applied one by one in the
// order learned, lossless round trips of any bytes, determinism, the special ids and the JSON form.
#include "DatasetsTestSupport.h"
#include "data/Tokenizer.h"

#include <QtTest>

#include <random>

using namespace widelab;
using datasetstest::dataErrorOf;

namespace {

using Ids = std::vector<std::int64_t>;
using Merges = std::vector<bpe::Merge>;

QString text(const std::string& s) { return QString::fromStdString(s); }

std::vector<std::string> piecesOf(std::string_view text)
{
    std::vector<std::string> pieces;
    splitBpePieces(text, [&](std::string_view piece) {
        pieces.emplace_back(piece);
        return true;
    });
    return pieces;
}

Tokenizer learned(const std::vector<std::string>& texts, std::int64_t merges)
{
    VocabularyBuilder builder(TokenizerKind::Bpe);
    for (const std::string& t : texts)
        builder.add(t);
    return builder.buildBpe(merges);
}

// The id of byte `c`.
std::int32_t b(char c) { return static_cast<std::int32_t>(bpe::kFirstByte + static_cast<unsigned char>(c)); }

// What encoding must give, the slow way: each piece's bytes, then every merge in the order learned, each applied
// everywhere in the piece from left to right.
Ids mergedOneByOne(const Tokenizer& tokenizer, std::string_view text)
{
    Ids all;
    for (const std::string& piece : piecesOf(text)) {
        std::vector<std::int32_t> ids;
        for (const char c : piece)
            ids.push_back(b(c));
        const Merges& merges = tokenizer.bpeMerges();
        for (std::size_t m = 0; m < merges.size(); ++m) {
            std::vector<std::int32_t> out;
            for (std::size_t k = 0; k < ids.size();) {
                if (k + 1 < ids.size() && ids[k] == merges[m].first && ids[k + 1] == merges[m].second) {
                    out.push_back(static_cast<std::int32_t>(bpe::kFirstMerge + static_cast<std::int64_t>(m)));
                    k += 2;
                } else {
                    out.push_back(ids[k++]);
                }
            }
            ids = std::move(out);
        }
        all.insert(all.end(), ids.begin(), ids.end());
    }
    return all;
}

// Varied text, some of it invalid UTF-8: words of both Bibles' languages, numbers, punctuation, runs of spaces.
std::string randomText(std::mt19937& random, std::size_t words)
{
    static const std::vector<std::string> vocabulary = {
        "the", " the", "and", " and", "of", "God", " God", "Dios", " Dios", "y", " y", "é", "á", "ñ", "señor",
        "Señor", " Jehová", "\xE2\x80\x9C", "\xE2\x80\x9D", "\xC2\xBF", "\xC2\xA1", ",", ".", ";", " ", "  ", "\n",
        "\n\n", "\t", "12", " 3", "42", "\xC3", "\xFF", "\x80", "\xE2\x80", "lowest", " lower", "newer", "wider"};
    std::uniform_int_distribution<std::size_t> pick(0, vocabulary.size() - 1);
    std::string text;
    for (std::size_t i = 0; i < words; ++i)
        text += vocabulary[pick(random)];
    return text;
}


}  // namespace

class TestBpe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void piecesFollowTheRule_data();
    void piecesFollowTheRule();
    void longRunsAreCut();
    void handWorkedMerges();
    void encodingAppliesMergesInOrder();
    void roundTripAnyBytes();
    void roundTripUtf8();
    void sameTextsSameMerges();
    void textsCutBeforeWhitespaceCountAsWhole();
    void stopsWhenNoPairRepeats();
    void specialIds();
    void tokenTextShowsBytes();
    void maxTokensStopsEarly();
    void jsonRoundTrip();
    void jsonByHand();
    void malformedJson_data();
    void malformedJson();
    void badMergesThrow();
};

void TestBpe::piecesFollowTheRule_data()
{
    QTest::addColumn<QString>("input");
    QTest::addColumn<QStringList>("pieces");
    // A word takes one space before it; a run of spaces gives its last space to the word after it.
    QTest::newRow("words") << QString("Hello,  world!") << QStringList{"Hello", ",", " ", " world", "!"};
    // Digits and letters are separate runs; a space leads a number as it leads a word.
    QTest::newRow("digits") << QString("in 42x 7") << QStringList{"in", " 42", "x", " 7"};
    // Whitespace other than a space is a run of its own and leads nothing.
    QTest::newRow("newlines") << QString("a\n\nb \n c\t\td") << QStringList{"a", "\n\n", "b", " \n", " c", "\t\t", "d"};
    // Spanish and typographic punctuation is punctuation, not part of the word; accented letters are letters.
    QTest::newRow("punctuation") << QString("¿Qué? “Luz,” dijo — 3×4")
                                 << QStringList{"¿", "Qué", "?", " “", "Luz", ",”", " dijo", " —", " 3", "×", "4"};
    QTest::newRow("space at the end") << QString("a  ") << QStringList{"a", "  "};
    QTest::newRow("punctuation run") << QString("x (!?) y") << QStringList{"x", " (!?)", " y"};
}

void TestBpe::piecesFollowTheRule()
{
    QFETCH(QString, input);
    QFETCH(QStringList, pieces);
    QStringList got;
    for (const std::string& piece : piecesOf(input.toStdString()))
        got << text(piece);
    QCOMPARE(got, pieces);
}

void TestBpe::longRunsAreCut()
{
    // 70 letters after a space: the first piece holds the space and 63 letters (64 bytes), the next the other 7.
    std::string spaced(71, 'a'), first(64, 'a');
    spaced[0] = first[0] = ' ';
    const std::string rest(7, 'a');
    QVERIFY(piecesOf(spaced) == (std::vector<std::string>{first, rest}));
    // 22 three-byte dashes: 21 fit in 64 bytes (63), the 22nd starts the next piece, never cut inside.
    std::string dashes;
    for (int i = 0; i < 22; ++i)
        dashes += "\xE2\x80\x94";
    const auto pieces = piecesOf(dashes);
    QCOMPARE(pieces.size(), std::size_t(2));
    QCOMPARE(pieces[0].size(), std::size_t(63));
    QCOMPARE(pieces[1], std::string("\xE2\x80\x94"));
    // A byte that is not UTF-8 is a letter; a cut dash is a byte of letters too.
    QVERIFY(piecesOf("x\xC3\xE2\x80y.") == (std::vector<std::string>{"x\xC3\xE2\x80y", "."}));
}

void TestBpe::handWorkedMerges()
{
    // "low lower lowest newer wider" is cut into "low", " lower", " lowest", " newer", " wider" (once each).
    // Adjacent pairs and their counts:
    //   l o: 3 (low, lower, lowest)   o w: 3   w e: 3 (lower, lowest, newer)   e r: 3 (lower, newer, wider)
    //   " l": 2, and once each: e s, s t, " n", n e, e w, " w", w i, i d, d e.
    // Ties of count 3 go to the smaller left id (id = 4 + byte): 'e' (105) < 'l' (112) < 'o' (115) < 'w' (123).
    //   merge 0 (id 260): e + r.  lower -> l o w er, newer -> n e w er, wider -> w i d er: w e now only in
    //     lowest (1), l o and o w still 3.
    //   merge 1 (id 261): l + o (3; before o w by its left id).  o w becomes lo w: 3.
    //   merge 2 (id 262): lo + w (3).  " l" becomes " " low: 2 (lower, lowest).
    //   merge 3 (id 263): " " + low (2).  Every other pair is now seen once: learning stops at 4 of the 10 asked.
    const Tokenizer tokenizer = learned({"low lower lowest newer wider"}, 10);
    QVERIFY(tokenizer.kind() == TokenizerKind::Bpe);
    QVERIFY(tokenizer.bpeMerges() == (Merges{{b('e'), b('r')}, {b('l'), b('o')}, {261, b('w')}, {b(' '), 262}}));
    QCOMPARE(tokenizer.vocabSize(), 264);
    // " lowest" -> " low" e s t; " newer" -> " " n e w er; "slower": s low er (no space, so no 263).
    QVERIFY(tokenizer.encode(" lowest") == (Ids{263, b('e'), b('s'), b('t')}));
    QVERIFY(tokenizer.encode(" newer") == (Ids{b(' '), b('n'), b('e'), b('w'), 260}));
    QVERIFY(tokenizer.encode("slower") == (Ids{b('s'), 262, 260}));
    QCOMPARE(text(tokenizer.tokenText(263)), QString(" low"));
    QCOMPARE(text(tokenizer.decode(tokenizer.encode("low lower lowest newer wider"))),
             QString("low lower lowest newer wider"));
}

void TestBpe::encodingAppliesMergesInOrder()
{
    std::mt19937 random(7);
    std::vector<std::string> corpus;
    for (int i = 0; i < 200; ++i)
        corpus.push_back(randomText(random, 30));
    const Tokenizer tokenizer = learned(corpus, 300);
    QVERIFY(tokenizer.bpeMerges().size() > 100);
    for (int i = 0; i < 200; ++i) {
        const std::string sample = randomText(random, 40);
        QVERIFY2(tokenizer.encode(sample) == mergedOneByOne(tokenizer, sample), sample.c_str());
        QVERIFY(tokenizer.encode(sample) == tokenizer.encode(sample));  // from the cache the second time
    }
}

void TestBpe::roundTripAnyBytes()
{
    std::mt19937 random(11);
    std::vector<std::string> corpus;
    for (int i = 0; i < 50; ++i)
        corpus.push_back(randomText(random, 30));
    const Tokenizer tokenizer = learned(corpus, 200);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 300; ++i) {
        std::string sample(static_cast<std::size_t>(i), '\0');
        for (char& c : sample)
            c = static_cast<char>(byte(random));
        const Ids ids = tokenizer.encode(sample);
        QVERIFY(std::all_of(ids.begin(), ids.end(), [](std::int64_t id) { return id >= bpe::kFirstByte; }));
        QVERIFY(tokenizer.decode(ids) == sample);
    }
    // Every byte alone, and a learner fed bytes that are not UTF-8.
    for (int c = 0; c < 256; ++c)
        QVERIFY(tokenizer.encode(std::string(1, static_cast<char>(c))) == (Ids{bpe::kFirstByte + c}));
    const Tokenizer binary = learned({std::string("\xFF\xFE\x00\xFF\xFE\x00\xFF\xFE", 8)}, 5);
    QVERIFY(!binary.bpeMerges().empty());
    QVERIFY(binary.decode(binary.encode(std::string("\x00\xFF\xFE", 3))) == std::string("\x00\xFF\xFE", 3));
}

void TestBpe::roundTripUtf8()
{
    const std::vector<std::string> corpus = {"En el principio creó Dios los cielos y la tierra.",
                                             "In the beginning, God created the heavens and the earth.",
                                             "¿Quién es éste? “Señor”, dijo él — ¡Jehová! 😀 日本語 \t tab"};
    const Tokenizer tokenizer = learned(corpus, 100);
    for (const std::string& sample : corpus)
        QCOMPARE(text(tokenizer.decode(tokenizer.encode(sample))), text(sample));
    QCOMPARE(text(tokenizer.decode(tokenizer.encode("   leading and trailing   \n"))),
             QString("   leading and trailing   \n"));
    QVERIFY(tokenizer.encode("").empty());
}

void TestBpe::sameTextsSameMerges()
{
    std::mt19937 random(3);
    std::vector<std::string> corpus;
    for (int i = 0; i < 100; ++i)
        corpus.push_back(randomText(random, 20));
    const Tokenizer first = learned(corpus, 150);
    QVERIFY(learned(corpus, 150) == first);
    // The order of the texts does not matter: only the pieces' counts do.
    std::reverse(corpus.begin(), corpus.end());
    QVERIFY(learned(corpus, 150) == first);
    // Fewer merges asked: the first ones of the longer list.
    const Merges& all = first.bpeMerges();
    QVERIFY(learned(corpus, 40).bpeMerges() == Merges(all.begin(), all.begin() + 40));
}

void TestBpe::textsCutBeforeWhitespaceCountAsWhole()
{
    // How a text file is handed to the builder: cut just before a run of whitespace that a non-space follows.
    const std::string whole = "one  two\n\n three   four five\t six";
    VocabularyBuilder together(TokenizerKind::Bpe), cut(TokenizerKind::Bpe);
    together.add(whole);
    for (const std::string part : {"one", "  two", "\n\n three", "   four", " five", "\t six"})
        cut.add(part);
    QCOMPARE(cut.distinctTokens(), together.distinctTokens());
    for (const std::string& piece : piecesOf(whole))
        QCOMPARE(cut.count(piece), together.count(piece));
    // "one  two": "one", " ", " two"; "three   four": " three", "  ", " four".
    QCOMPARE(together.count(" "), 1);
    QCOMPARE(together.count("  "), 1);
}

void TestBpe::stopsWhenNoPairRepeats()
{
    // "abab": a b twice -> merge ab; then ab ab once: stop. 0 merges: bytes only.
    QCOMPARE(learned({"abab"}, 50).bpeMerges().size(), std::size_t(1));
    QCOMPARE(learned({"abab"}, 0).vocabSize(), 260);
    QCOMPARE(learned({}, 10).vocabSize(), 260);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, VocabularyBuilder(TokenizerKind::Bpe).buildBpe(-1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, VocabularyBuilder(TokenizerKind::Bpe).build(100));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, VocabularyBuilder(TokenizerKind::Word).buildBpe(100));
}

void TestBpe::specialIds()
{
    const Tokenizer tokenizer = learned({"aaaa bbbb"}, 5);
    QCOMPARE(tokenizer.startId().value_or(-1), std::int64_t(2));
    QCOMPARE(tokenizer.endId().value_or(-1), std::int64_t(3));
    QCOMPARE(text(tokenizer.tokenText(0)), QString("<pad>"));
    QCOMPARE(text(tokenizer.tokenText(1)), QString("<unk>"));
    QCOMPARE(text(tokenizer.tokenText(2)), QString("<s>"));
    QCOMPARE(text(tokenizer.tokenText(3)), QString("</s>"));
    // decode skips padding and the sequence marks, and shows unknown (which encode never gives).
    QCOMPARE(text(tokenizer.decode({2, b('h'), b('i'), 3, 0, 0})), QString("hi"));
    QCOMPARE(text(tokenizer.decode({b('a'), 1})), QString("a<unk>"));
    for (const Tokenizer& other :
         {Tokenizer::bytes(), Tokenizer::fixed({"x"}), Tokenizer::withVocabulary(TokenizerKind::Word, {"a"})}) {
        QVERIFY(!other.startId());
        QVERIFY(!other.endId());
    }
}

void TestBpe::tokenTextShowsBytes()
{
    // "é" is C3 A9: its two bytes merge first, then a space with it, then \n\n.
    const Tokenizer tokenizer = Tokenizer::bpe({{b('\xC3'), b('\xA9')}, {b(' '), 260}, {b('\n'), b('\n')},
                                                {b(' '), b('\xC3')}});
    QCOMPARE(text(tokenizer.tokenText(b('\xC3'))), QString("\\xc3"));
    QCOMPARE(text(tokenizer.tokenText(b('a'))), QString("a"));
    QCOMPARE(text(tokenizer.tokenText(b('\n'))), QString("\\x0a"));
    QCOMPARE(text(tokenizer.tokenText(260)), QString("é"));
    QCOMPARE(text(tokenizer.tokenText(261)), QString(" é"));
    QCOMPARE(text(tokenizer.tokenText(262)), QString("\\x0a\\x0a"));
    QCOMPARE(text(tokenizer.tokenText(263)), QString(" \\xc3"));
    QVERIFY(tokenizer.encode(" é\n\n") == (Ids{261, 262}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tokenizer.tokenText(264));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tokenizer.decode({264}));
}

void TestBpe::maxTokensStopsEarly()
{
    const Tokenizer tokenizer = learned({"the cat the cat the cat"}, 10);
    const Ids all = tokenizer.encode("the cat sat");
    QVERIFY(all.size() > 3);
    QVERIFY(tokenizer.encode("the cat sat", 3) == Ids(all.begin(), all.begin() + 3));
    QVERIFY(tokenizer.encode("the cat sat", 0).empty());
}

void TestBpe::jsonRoundTrip()
{
    std::mt19937 random(5);
    std::vector<std::string> corpus;
    for (int i = 0; i < 50; ++i)
        corpus.push_back(randomText(random, 20));
    const Tokenizer tokenizer = learned(corpus, 100);
    const Tokenizer loaded = Tokenizer::fromJson(nlohmann::json::parse(tokenizer.toJson().dump()));
    QVERIFY(loaded == tokenizer);
    QCOMPARE(loaded.vocabSize(), tokenizer.vocabSize());
    const std::string sample = randomText(random, 50);
    QVERIFY(loaded.encode(sample) == tokenizer.encode(sample));
    const Merges& merges = tokenizer.bpeMerges();
    QVERIFY(merges.size() > 10);
    QVERIFY(!(loaded == Tokenizer::bpe(Merges(merges.begin(), merges.end() - 1))));
    QVERIFY(!(loaded == Tokenizer::bytes()));
}

void TestBpe::jsonByHand()
{
    const Tokenizer tokenizer = learned({"low lower lowest newer wider"}, 10);
    QCOMPARE(text(tokenizer.toJson().dump()),
             QString(R"({"kind":"bpe","merges":[[105,118],[112,115],[261,123],[36,262]],"vocab_size":264})"));
    const Tokenizer read = Tokenizer::fromJson(nlohmann::json::parse(R"({"kind": "bpe", "merges": [[101, 101]]})"));
    QVERIFY(read.encode("aaaaa") == (Ids{260, 260, 101}));
    QCOMPARE(Tokenizer::fromJson(nlohmann::json::parse(R"({"kind": "bpe", "merges": []})")).vocabSize(), 260);
}

void TestBpe::malformedJson_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("reason");
    QTest::newRow("no merges") << QString(R"({"kind": "bpe"})") << QString("\"merges\" must be an array");
    QTest::newRow("merges not an array") << QString(R"({"kind": "bpe", "merges": {}})") << QString("merges");
    QTest::newRow("merge of three") << QString(R"({"kind": "bpe", "merges": [[4, 5, 6]]})")
                                    << QString("merge 0: expected [left id, right id]");
    QTest::newRow("merge of strings") << QString(R"({"kind": "bpe", "merges": [[4, 5], ["a", "b"]]})")
                                      << QString("merge 1: expected");
    QTest::newRow("fractional id") << QString(R"({"kind": "bpe", "merges": [[4.5, 5]]})") << QString("merge 0");
    QTest::newRow("special id") << QString(R"({"kind": "bpe", "merges": [[3, 5]]})")
                                << QString("merge 0: id 3 is neither a byte (4..259) nor an earlier merge");
    QTest::newRow("later merge") << QString(R"({"kind": "bpe", "merges": [[4, 5], [261, 5]]})")
                                 << QString("merge 1: id 261 is neither a byte (4..259) nor an earlier merge (260..260)");
    QTest::newRow("negative id") << QString(R"({"kind": "bpe", "merges": [[-4, 5]]})") << QString("out of range");
    QTest::newRow("huge id") << QString(R"({"kind": "bpe", "merges": [[4, 99999999999]]})") << QString("out of range");
    QTest::newRow("repeated") << QString(R"({"kind": "bpe", "merges": [[4, 5], [6, 7], [4, 5]]})")
                              << QString("merge 2 repeats merge 0 [4, 5]");
    QTest::newRow("bpe with tokens") << QString(R"({"kind": "bpe", "merges": [], "tokens": ["a"]})")
                                     << QString("a bpe tokenizer has no \"tokens\"");
    QTest::newRow("word with merges") << QString(R"({"kind": "word", "tokens": ["a"], "merges": []})")
                                      << QString("a word tokenizer has no \"merges\"");
    QTest::newRow("vocab size mismatch") << QString(R"({"kind": "bpe", "merges": [[4, 5]], "vocab_size": 260})")
                                         << QString("does not match the 261 ids of the merges");
}

void TestBpe::malformedJson()
{
    QFETCH(QString, json);
    QFETCH(QString, reason);
    const std::string message = dataErrorOf([&] { Tokenizer::fromJson(nlohmann::json::parse(json.toStdString())); });
    QVERIFY2(!message.empty(), "no DataError");
    QVERIFY2(message.find(reason.toStdString()) != std::string::npos, message.c_str());
}

void TestBpe::badMergesThrow()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::bpe({{4, 260}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::bpe({{4, 5}, {4, 5}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::withVocabulary(TokenizerKind::Bpe, {"a"}));
    QCOMPARE(Tokenizer::bpe({{4, 5}, {260, 260}}).vocabSize(), 262);
}

QTEST_GUILESS_MAIN(TestBpe)
#include "tst_bpe.moc"
