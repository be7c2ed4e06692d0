// Tests of data/Tokenizer: byte, character, word and fixed tokenizers, vocabulary building on small corpora whose
// counts are worked out by hand in the comments, UTF-8 checking, and the JSON form.
#include "DatasetsTestSupport.h"
#include "data/Tokenizer.h"

#include <QtTest>

using namespace widelab;
using datasetstest::dataErrorOf;

namespace {

using Ids = std::vector<std::int64_t>;

QString text(const std::string& s) { return QString::fromStdString(s); }

// The message of the DataError that `f` throws, or "" when it throws none.

}  // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void kindNames();
    void bytesRoundTripAnyBytes();
    void bytesTokenText();
    void characterVocabulary();
    void characterRoundTrip();
    void wordSplitting();
    void wordVocabulary();
    void vocabularyCut();
    void invalidUtf8_data();
    void invalidUtf8();
    void invalidUtf8InBuilderCountsNothing();
    void validUtf8();
    void invalidUtf8IsReplacedAsPythonReplacesIt_data();
    void invalidUtf8IsReplacedAsPythonReplacesIt();
    void fixedTokenizer();
    void fixedRejectsBadTokens();
    void maxTokensStopsEarly();
    void jsonRoundTrip();
    void jsonByHand();
    void malformedJson_data();
    void malformedJson();
    void badIdsThrow();
};

void TestTokenizer::kindNames()
{
    QCOMPARE(text(toString(TokenizerKind::Byte)), QString("byte"));
    QCOMPARE(text(toString(TokenizerKind::Character)), QString("character"));
    QCOMPARE(text(toString(TokenizerKind::Word)), QString("word"));
    QCOMPARE(text(toString(TokenizerKind::Fixed)), QString("fixed"));
    QCOMPARE(text(toString(TokenizerKind::Bpe)), QString("bpe"));
    QVERIFY(tokenizerKindFromString("bpe") == TokenizerKind::Bpe);
    QVERIFY(tokenizerKindFromString("word") == TokenizerKind::Word);
    QVERIFY(tokenizerKindFromString("fixed") == TokenizerKind::Fixed);
    QVERIFY(!tokenizerKindFromString("Word"));
    QVERIFY(!tokenizerKindFromString(""));
}

void TestTokenizer::bytesRoundTripAnyBytes()
{
    const Tokenizer tokenizer = Tokenizer::bytes();
    QCOMPARE(tokenizer.vocabSize(), 258);
    QVERIFY(tokenizer.kind() == TokenizerKind::Byte);

    // Every byte value, then sequences that are not UTF-8: a lone continuation byte, a truncated sequence, an
    // overlong '/', a surrogate.
    std::string data;
    for (int b = 0; b < 256; ++b)
        data += static_cast<char>(b);
    data += std::string("\x80" "a\xC3" "\xC0\xAF" "\xED\xA0\x80", 8);
    const Ids ids = tokenizer.encode(data);
    QCOMPARE(ids.size(), data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
        QCOMPARE(ids[i], static_cast<std::int64_t>(static_cast<unsigned char>(data[i])) + 2);
        QVERIFY(ids[i] != Tokenizer::kPad && ids[i] != Tokenizer::kUnknown);
    }
    // Spot checks by hand: byte 0 -> 2, 'A' (65) -> 67, 0xFF -> 257.
    QCOMPARE(ids[0], 2);
    QCOMPARE(ids[65], 67);
    QCOMPARE(ids[255], 257);
    QVERIFY(tokenizer.decode(ids) == data);
    // Pad ids are skipped when decoding.
    QVERIFY(tokenizer.decode({Tokenizer::kPad, 67, Tokenizer::kPad, 68, Tokenizer::kPad}) == "AB");
}

void TestTokenizer::bytesTokenText()
{
    const Tokenizer tokenizer = Tokenizer::bytes();
    QCOMPARE(text(tokenizer.tokenText(0)), QString("<pad>"));
    QCOMPARE(text(tokenizer.tokenText(1)), QString("<unk>"));
    QCOMPARE(text(tokenizer.tokenText(2 + 'A')), QString("A"));
    QCOMPARE(text(tokenizer.tokenText(2 + ' ')), QString(" "));
    QCOMPARE(text(tokenizer.tokenText(2 + '~')), QString("~"));
    QCOMPARE(text(tokenizer.tokenText(2 + '\n')), QString("\\x0a"));
    QCOMPARE(text(tokenizer.tokenText(2 + 0x7f)), QString("\\x7f"));
    QCOMPARE(text(tokenizer.tokenText(2 + 0xc3)), QString("\\xc3"));
    QCOMPARE(text(tokenizer.tokenText(257)), QString("\\xff"));
}

void TestTokenizer::characterVocabulary()
{
    // "abca" + "b€a" + "c c": a 3, b 2, c 3, € 1, ' ' 1.
    // Ties broken by the UTF-8 bytes: a (0x61) before c (0x63); ' ' (0x20) before € (0xE2 ...).
    // Order: a, c, b, ' ', €  -> ids 2, 3, 4, 5, 6.
    VocabularyBuilder builder(TokenizerKind::Character);
    builder.add("abca");
    builder.add("b\xE2\x82\xAC" "a");
    builder.add("c c");
    QCOMPARE(builder.distinctTokens(), 5);
    QCOMPARE(builder.count("a"), 3);
    QCOMPARE(builder.count("c"), 3);
    QCOMPARE(builder.count("\xE2\x82\xAC"), 1);
    QCOMPARE(builder.count("z"), 0);

    const Tokenizer tokenizer = builder.build(100);
    QVERIFY(tokenizer.kind() == TokenizerKind::Character);
    QCOMPARE(tokenizer.vocabSize(), 7);
    const std::vector<std::string> expected = {"a", "c", "b", " ", "\xE2\x82\xAC"};
    QVERIFY(tokenizer.vocabulary() == expected);
    // "ca€ zb": c 3, a 2, € 6, ' ' 5, z unknown, b 4.
    QVERIFY(tokenizer.encode("ca\xE2\x82\xAC zb") == (Ids{3, 2, 6, 5, 1, 4}));
    QCOMPARE(text(tokenizer.tokenText(6)), QString::fromUtf8("\xE2\x82\xAC"));
    QCOMPARE(text(tokenizer.tokenText(5)), QString(" "));
}

void TestTokenizer::characterRoundTrip()
{
    const std::string sample = "h\xC3\xA9llo\n w\xF0\x9F\x98\x80rld\t!";  // é, an emoji, a newline and a tab
    VocabularyBuilder builder(TokenizerKind::Character);
    builder.add(sample);
    const Tokenizer tokenizer = builder.build(1000);
    const Ids ids = tokenizer.encode(sample);
    // One id per code point: h é l l o \n ' ' w 😀 r l d \t ! = 14.
    QCOMPARE(ids.size(), std::size_t(14));
    QVERIFY(tokenizer.decode(ids) == sample);
    // Control characters are escaped for display.
    QCOMPARE(text(tokenizer.tokenText(ids[5])), QString("\\x0a"));
    QCOMPARE(text(tokenizer.tokenText(ids[12])), QString("\\x09"));
    // Unknown characters decode as <unk>.
    QVERIFY(tokenizer.decode(tokenizer.encode("hqo")) == "h<unk>o");
}

void TestTokenizer::wordSplitting()
{
    VocabularyBuilder builder(TokenizerKind::Word);
    // Words are runs of ASCII letters/digits and non-ASCII code points; every other non-space character stands alone;
    // case is kept.
    builder.add("Don't  stop_now!!\tx2=na\xC3\xAFve\n\xE6\x97\xA5\xE6\x9C\xAC" "a\xC2\xA0" "b");
    // Don ' t stop _ now ! ! x2 = naïve 日本a<nbsp>b
    QCOMPARE(builder.count("Don"), 1);
    QCOMPARE(builder.count("'"), 1);
    QCOMPARE(builder.count("t"), 1);
    QCOMPARE(builder.count("stop"), 1);
    QCOMPARE(builder.count("_"), 1);
    QCOMPARE(builder.count("now"), 1);
    QCOMPARE(builder.count("!"), 2);
    QCOMPARE(builder.count("x2"), 1);
    QCOMPARE(builder.count("="), 1);
    QCOMPARE(builder.count("na\xC3\xAFve"), 1);
    QCOMPARE(builder.count("\xE6\x97\xA5\xE6\x9C\xAC" "a\xC2\xA0" "b"), 1);  // a non-ASCII space is a letter
    QCOMPARE(builder.count("don"), 0);
    QCOMPARE(builder.count(" "), 0);
    QCOMPARE(builder.distinctTokens(), 11);
}

void TestTokenizer::wordVocabulary()
{
    // "the cat, the dog." -> the, cat, ",", the, dog, "."
    // "The dog's bone! 42 x2 naïve" -> The, dog, "'", s, bone, "!", 42, x2, naïve
    // Counts: dog 2, the 2; all others 1. Ties by bytes: dog < the;
    // ! (21) ' (27) , (2C) . (2E) 42 (34) The (54) bone (62) cat (63) naïve (6E) s (73) x2 (78).
    VocabularyBuilder builder(TokenizerKind::Word);
    builder.add("the cat, the dog.");
    builder.add("The dog's bone! 42 x2 na\xC3\xAFve");
    const Tokenizer tokenizer = builder.build(1000);
    const std::vector<std::string> expected = {"dog", "the", "!",   "'",   ",",          ".", "42",
                                               "The", "bone", "cat", "na\xC3\xAFve", "s", "x2"};
    QVERIFY(tokenizer.vocabulary() == expected);
    QCOMPARE(tokenizer.vocabSize(), 15);
    // "the dog's cat" -> the 3, dog 2, ' 5, s 13, cat 11
    QVERIFY(tokenizer.encode("the dog's cat") == (Ids{3, 2, 5, 13, 11}));
    // "THE cat" -> THE unknown, cat 11
    QVERIFY(tokenizer.encode("THE cat") == (Ids{1, 11}));
    // Words are joined by single spaces when decoding.
    QVERIFY(tokenizer.decode(tokenizer.encode("the  dog.\n")) == "the dog .");
    QVERIFY(tokenizer.encode(" \t\n").empty());
}

void TestTokenizer::vocabularyCut()
{
    // Same corpus as wordVocabulary; maxVocab 6 keeps pad, unknown and 4 tokens: dog, the, !, '.
    VocabularyBuilder builder(TokenizerKind::Word);
    builder.add("the cat, the dog.");
    builder.add("The dog's bone! 42 x2 na\xC3\xAFve");
    const Tokenizer tokenizer = builder.build(6);
    QCOMPARE(tokenizer.vocabSize(), 6);
    QVERIFY(tokenizer.vocabulary() == (std::vector<std::string>{"dog", "the", "!", "'"}));
    // "the dog's cat" -> the 3, dog 2, ' 5, s unknown, cat unknown
    QVERIFY(tokenizer.encode("the dog's cat") == (Ids{3, 2, 5, 1, 1}));
    // The smallest vocabulary has one token.
    const Tokenizer smallest = builder.build(3);
    QCOMPARE(smallest.vocabSize(), 3);
    QVERIFY(smallest.encode("dog the") == (Ids{2, 1}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, builder.build(2));
    // An empty builder gives pad and unknown only.
    QCOMPARE(VocabularyBuilder(TokenizerKind::Character).build(10).vocabSize(), 2);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, VocabularyBuilder(TokenizerKind::Byte));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, VocabularyBuilder(TokenizerKind::Fixed));
}

void TestTokenizer::invalidUtf8_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<qint64>("offset");
    QTest::newRow("truncated 2-byte at the end") << QByteArray("ab\xC3", 3) << 2LL;
    QTest::newRow("lone continuation byte") << QByteArray("x \x80y", 4) << 2LL;
    QTest::newRow("overlong '/'") << QByteArray("a\xC0\xAF", 3) << 1LL;
    QTest::newRow("overlong 3-byte") << QByteArray("\xE0\x80\xAF", 3) << 0LL;
    QTest::newRow("surrogate U+D800") << QByteArray("ok\xED\xA0\x80", 5) << 2LL;
    QTest::newRow("above U+10FFFF") << QByteArray("\xF4\x90\x80\x80", 4) << 0LL;
    QTest::newRow("0xFF") << QByteArray("abcdefghij\xFF", 11) << 10LL;
    QTest::newRow("second byte not a continuation") << QByteArray("\xC3(", 2) << 0LL;
    QTest::newRow("4-byte cut short") << QByteArray("12345678\xF0\x9F\x98 ", 12) << 8LL;
}

void TestTokenizer::invalidUtf8()
{
    QFETCH(QByteArray, bytes);
    QFETCH(qint64, offset);
    const std::string data(bytes.constData(), static_cast<std::size_t>(bytes.size()));
    QCOMPARE(static_cast<qint64>(findInvalidUtf8(data)), offset);

    const Tokenizer character = Tokenizer::withVocabulary(TokenizerKind::Character, {"a", "b"});
    const Tokenizer word = Tokenizer::withVocabulary(TokenizerKind::Word, {"ab"});
    for (const Tokenizer* tokenizer : {&character, &word}) {
        try {
            tokenizer->encode(data);
            QFAIL("no exception for invalid UTF-8");
        } catch (const InvalidUtf8& e) {
            QCOMPARE(static_cast<qint64>(e.offset()), offset);
            QVERIFY2(std::string(e.what()).find("byte " + std::to_string(offset)) != std::string::npos, e.what());
        }
    }
    // The byte tokenizer takes anything.
    QCOMPARE(Tokenizer::bytes().encode(data).size(), data.size());
}

void TestTokenizer::invalidUtf8InBuilderCountsNothing()
{
    VocabularyBuilder builder(TokenizerKind::Word);
    builder.add("one two");
    const std::string message = dataErrorOf([&] { builder.add(std::string("three four \xFF five", 17)); });
    QVERIFY2(message.find("byte 11") != std::string::npos, message.c_str());
    QCOMPARE(builder.distinctTokens(), 2);
    QCOMPARE(builder.count("three"), 0);
}

void TestTokenizer::invalidUtf8IsReplacedAsPythonReplacesIt_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QByteArray>("replaced");
    // Each expected value is what Python 3.11 prints for bytes(...).decode("utf-8", errors="replace").
    const QByteArray r = QByteArrayLiteral("\xEF\xBF\xBD");  // U+FFFD
    const QByteArray valid = QByteArrayLiteral("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    QTest::newRow("valid stays") << valid << valid;
    QTest::newRow("stray continuation") << QByteArrayLiteral("a\x80" "b") << "a" + r + "b";
    QTest::newRow("two strays") << QByteArrayLiteral("\x80\xBF") << r + r;
    // A first byte and the continuations that could complete it are one replacement.
    QTest::newRow("cut 3-byte at the end") << QByteArrayLiteral("x\xE2\x82") << "x" + r;
    QTest::newRow("cut 4-byte before ASCII") << QByteArrayLiteral("\xF0\x9F\x98z") << r + "z";
    // E0 needs A0..BF next: E0 80 is two replacements; ED A0 (a surrogate) too.
    QTest::newRow("overlong") << QByteArrayLiteral("\xE0\x80\x80") << r + r + r;
    QTest::newRow("surrogate") << QByteArrayLiteral("\xED\xA0\x80") << r + r + r;
    QTest::newRow("bytes that start nothing") << QByteArrayLiteral("\xC0\xAF\xF5\xFF") << r + r + r + r;
    QTest::newRow("lead then lead") << QByteArrayLiteral("\xC3\xC3\xA9") << r + QByteArrayLiteral("\xC3\xA9");
}

void TestTokenizer::invalidUtf8IsReplacedAsPythonReplacesIt()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QByteArray, replaced);
    const std::string out = replaceInvalidUtf8(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    QCOMPARE(QByteArray::fromStdString(out), replaced);
    QCOMPARE(findInvalidUtf8(out), std::string_view::npos);
}

void TestTokenizer::validUtf8()
{
    // 1-, 2-, 3- and 4-byte sequences, the largest code point, and the edges of the surrogate range.
    const std::string valid = "a\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF";
    QCOMPARE(findInvalidUtf8(valid), std::string_view::npos);
    QCOMPARE(findInvalidUtf8(""), std::string_view::npos);
    VocabularyBuilder builder(TokenizerKind::Character);
    builder.add(valid);
    QCOMPARE(builder.distinctTokens(), 8);
}

void TestTokenizer::fixedTokenizer()
{
    const Tokenizer tokenizer = Tokenizer::fixed({"[MIN", "]", "3"});
    QVERIFY(tokenizer.kind() == TokenizerKind::Fixed);
    QCOMPARE(tokenizer.vocabSize(), 5);
    // [MIN 2, ] 3, 3 4; "x" and "[min" unknown; any ASCII whitespace separates.
    QVERIFY(tokenizer.encode("[MIN 3  3\t]\n x [min") == (Ids{2, 4, 4, 3, 1, 1}));
    QVERIFY(tokenizer.decode({2, 4, 0, 3, 1}) == "[MIN 3 ] <unk>");
    QCOMPARE(text(tokenizer.tokenText(3)), QString("]"));
    QVERIFY(tokenizer.encode("").empty());
}

void TestTokenizer::fixedRejectsBadTokens()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::fixed({"a b"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::fixed({"a", "b", "a"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::fixed({""}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::fixed({std::string("\xFF", 1)}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::withVocabulary(TokenizerKind::Character, {"ab"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::withVocabulary(TokenizerKind::Word, {"a,"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::withVocabulary(TokenizerKind::Word, {"a b"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tokenizer::withVocabulary(TokenizerKind::Byte, {}));
    // A single symbol and a word with non-ASCII letters are fine word tokens.
    QCOMPARE(Tokenizer::withVocabulary(TokenizerKind::Word, {",", "na\xC3\xAFve"}).vocabSize(), 4);
}

void TestTokenizer::maxTokensStopsEarly()
{
    QVERIFY(Tokenizer::bytes().encode("abcdef", 3) == (Ids{2 + 'a', 2 + 'b', 2 + 'c'}));
    QVERIFY(Tokenizer::bytes().encode("ab", 5) == (Ids{2 + 'a', 2 + 'b'}));
    const Tokenizer word = Tokenizer::withVocabulary(TokenizerKind::Word, {"a", "b", "c"});
    QVERIFY(word.encode("a b c", 2) == (Ids{2, 3}));
    // Text after the limit is not read: invalid UTF-8 there goes unnoticed.
    QVERIFY(word.encode(std::string("a b \xFF", 5), 2) == (Ids{2, 3}));
    const Tokenizer character = Tokenizer::withVocabulary(TokenizerKind::Character, {"a", "b"});
    QVERIFY(character.encode("abab", 3) == (Ids{2, 3, 2}));
}

void TestTokenizer::jsonRoundTrip()
{
    VocabularyBuilder words(TokenizerKind::Word);
    words.add("a b b c c c d\xC3\xA9j\xC3\xA0 !");
    VocabularyBuilder characters(TokenizerKind::Character);
    characters.add("h\xC3\xA9llo\n\t\"\\");
    const std::vector<Tokenizer> tokenizers = {Tokenizer::bytes(), words.build(100), characters.build(100),
                                               Tokenizer::fixed({"[MIN", "]", "0"})};
    const std::string sample = "c a d\xC3\xA9j\xC3\xA0 [MIN 0 ] \"h\xC3\xA9llo\"";
    for (const Tokenizer& tokenizer : tokenizers) {
        const nlohmann::json json = tokenizer.toJson();
        // Through text, as it is saved with a run.
        const Tokenizer loaded = Tokenizer::fromJson(nlohmann::json::parse(json.dump()));
        QVERIFY(loaded == tokenizer);
        QVERIFY(loaded.kind() == tokenizer.kind());
        QCOMPARE(loaded.vocabSize(), tokenizer.vocabSize());
        QVERIFY(loaded.encode(sample) == tokenizer.encode(sample));
    }
}

void TestTokenizer::jsonByHand()
{
    QCOMPARE(text(Tokenizer::bytes().toJson().dump()), QString(R"({"kind":"byte","vocab_size":258})"));
    QCOMPARE(text(Tokenizer::fixed({"x", "y"}).toJson().dump()),
             QString(R"({"kind":"fixed","tokens":["x","y"],"vocab_size":4})"));
    const Tokenizer word = Tokenizer::fromJson(nlohmann::json::parse(R"({"kind": "word", "tokens": ["b", "a"]})"));
    QVERIFY(word.kind() == TokenizerKind::Word);
    QVERIFY(word.encode("a b c") == (Ids{3, 2, 1}));
}

void TestTokenizer::malformedJson_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("reason");
    QTest::newRow("not an object") << QString(R"(["byte"])") << QString("object");
    QTest::newRow("no kind") << QString(R"({"tokens": []})") << QString("kind");
    QTest::newRow("unknown kind") << QString(R"({"kind": "unigram"})") << QString("unigram");
    QTest::newRow("kind not a string") << QString(R"({"kind": 3})") << QString("kind");
    QTest::newRow("byte with tokens") << QString(R"({"kind": "byte", "tokens": ["a"]})") << QString("tokens");
    QTest::newRow("no tokens") << QString(R"({"kind": "word"})") << QString("tokens");
    QTest::newRow("tokens not an array") << QString(R"({"kind": "word", "tokens": "abc"})") << QString("tokens");
    QTest::newRow("token not a string") << QString(R"({"kind": "word", "tokens": ["a", 2]})") << QString("strings");
    QTest::newRow("duplicate") << QString(R"({"kind": "word", "tokens": ["a", "b", "a"]})") << QString("twice");
    QTest::newRow("two characters") << QString(R"({"kind": "character", "tokens": ["ab"]})")
                                    << QString("single character");
    QTest::newRow("two words") << QString(R"({"kind": "word", "tokens": ["a b"]})") << QString("single word");
    QTest::newRow("empty token") << QString(R"({"kind": "fixed", "tokens": [""]})") << QString("empty");
    QTest::newRow("vocab size mismatch") << QString(R"({"kind": "fixed", "tokens": ["a"], "vocab_size": 4})")
                                         << QString("vocab_size");
    QTest::newRow("unknown key") << QString(R"({"kind": "byte", "lowercase": true})") << QString("lowercase");
}

void TestTokenizer::malformedJson()
{
    QFETCH(QString, json);
    QFETCH(QString, reason);
    const std::string message = dataErrorOf([&] { Tokenizer::fromJson(nlohmann::json::parse(json.toStdString())); });
    QVERIFY2(!message.empty(), "no DataError");
    QVERIFY2(message.find(reason.toStdString()) != std::string::npos, message.c_str());
}

void TestTokenizer::badIdsThrow()
{
    const Tokenizer tokenizer = Tokenizer::fixed({"x"});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tokenizer.tokenText(3));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tokenizer.tokenText(-1));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tokenizer.decode({2, 3}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, Tokenizer::bytes().decode({258}));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
