// Tests of data/TranslationPairs: pairs read from a TSV or two aligned files, bad
// lines named by file and line or left out and counted, deterministic splits, the
// joint texts a vocabulary learns from, and the length filter. A bpe tokenizer
// without merges keeps the expected ids worked out by hand: byte b is id 4 + b,
// </s> is 3.
#include "DatasetsTestSupport.h"
#include "data/TranslationPairs.h"

using namespace widelab;
using namespace widelab::datasetstest;

namespace {

// A text's ids under a bpe tokenizer without merges.
Ids bpeBytes(const std::string& text)
{
    Ids ids;
    for (const char c : text)
        ids.push_back(static_cast<unsigned char>(c) + 4);
    return ids;
}

Ids withEnd(Ids ids)
{
    ids.push_back(3);
    return ids;
}

}  // namespace

class TestTranslationPairs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tsvPairsBecomeSourceAndTargetWithEnd();
    void twoAlignedFilesReadAsOne();
    void badLinesAreNamedByFileAndLine();
    void badLinesCanBeLeftOutAndCounted();
    void filesThatCannotPairAreRefused();
    void splitsAreDeterministicAndStayWhenLinesAreLeftOut();
    void vocabularyLearnsFromBothSidesOfTrainingPairs();
    void longPairsAreLeftOutAndCounted();

private:
    QTemporaryDir m_dir;
    const Tokenizer m_bytes = Tokenizer::bpe({});
};

void TestTranslationPairs::tsvPairsBecomeSourceAndTargetWithEnd()
{
    // A byte order mark, a Windows line end, an empty line (skipped) and no final line end.
    const auto path = writeFile(m_dir, "pairs.tsv", "\xEF\xBB\xBFhi\thola\r\n\ncat\tgato");
    const TranslationPairs pairs({path, {}}, kAllTrain, 0);
    QCOMPARE(pairs.pairs(), 2);
    QCOMPARE(pairs.skipped(), 0);
    const auto train = pairs.dataset(Split::Train, m_bytes, 250);
    QCOMPARE(train->size(), 2);
    QVERIFY(train->get(0).ids == bpeBytes("hi"));
    QVERIFY(train->get(0).targets == withEnd(bpeBytes("hola")));
    QVERIFY(train->get(1).ids == bpeBytes("cat"));
    QVERIFY(train->get(1).targets == withEnd(bpeBytes("gato")));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, train->get(2));
    // Without an end token there is no target to train on.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, pairs.dataset(Split::Train, Tokenizer::bytes(), 250));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, pairs.dataset(Split::Train, m_bytes, 0));
}

void TestTranslationPairs::twoAlignedFilesReadAsOne()
{
    const auto sources = writeFile(m_dir, "en.txt", "hi\n\ncat\n");
    const auto targets = writeFile(m_dir, "es.txt", "hola\n\ngato\n");  // an empty line on both sides: no pair
    const TranslationPairs pairs({sources, targets}, kAllTrain, 0);
    QCOMPARE(pairs.pairs(), 2);
    const auto train = pairs.dataset(Split::Train, m_bytes, 250);
    QVERIFY(train->get(1).ids == bpeBytes("cat"));
    QVERIFY(train->get(1).targets == withEnd(bpeBytes("gato")));
    // A tab inside a text is only a character when the sides come in two files.
    const auto tabbed = writeFile(m_dir, "tabbed.txt", "a\tb\n");
    const auto plain = writeFile(m_dir, "plain.txt", "c\n");
    const TranslationPairs withTab({tabbed, plain}, kAllTrain, 0);
    QVERIFY(withTab.dataset(Split::Train, m_bytes, 250)->get(0).ids == bpeBytes("a\tb"));
}

void TestTranslationPairs::badLinesAreNamedByFileAndLine()
{
    const auto noTab = writeFile(m_dir, "notab.tsv", "hi\thola\nno tab here\n");
    std::string message = dataErrorOf([&] { TranslationPairs({noTab, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "notab.tsv:2: no tab between source and target"), message.c_str());
    QVERIFY2(contains(message, "task.skip_bad_inputs"), message.c_str());

    const auto twoTabs = writeFile(m_dir, "twotabs.tsv", "a\tb\tc\n");
    message = dataErrorOf([&] { TranslationPairs({twoTabs, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "twotabs.tsv:1: more than one tab"), message.c_str());

    const auto emptyTarget = writeFile(m_dir, "emptytarget.tsv", "a\tb\n\nc\t  \n");
    message = dataErrorOf([&] { TranslationPairs({emptyTarget, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "emptytarget.tsv:3: empty target"), message.c_str());

    const auto emptySource = writeFile(m_dir, "emptysource.tsv", "\tb\n");
    message = dataErrorOf([&] { TranslationPairs({emptySource, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "emptysource.tsv:1: empty source"), message.c_str());

    const auto badUtf8 = writeFile(m_dir, "bad.tsv", "a\tb\nc\t\xC3(\n");
    message = dataErrorOf([&] { TranslationPairs({badUtf8, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "bad.tsv:2: invalid UTF-8 in the target"), message.c_str());

    // Two files: the side that is empty names its own file.
    const auto sources = writeFile(m_dir, "src.txt", "a\nb\n");
    const auto targets = writeFile(m_dir, "tgt.txt", "x\n\n");
    message = dataErrorOf([&] { TranslationPairs({sources, targets}, kAllTrain, 0); });
    QVERIFY2(contains(message, "tgt.txt:2: empty target"), message.c_str());
    message = dataErrorOf([&] { TranslationPairs({targets, sources}, kAllTrain, 0); });
    QVERIFY2(contains(message, "tgt.txt:2: empty source"), message.c_str());
}

void TestTranslationPairs::badLinesCanBeLeftOutAndCounted()
{
    const auto path = writeFile(m_dir, "mixed.tsv", "a\tb\nbroken\nc\td\n\te\nf\tg\n");
    std::vector<std::string> warnings;
    const TranslationPairs pairs({path, {}}, kAllTrain, 0, /*skipBad=*/true,
                                 [&](const std::string& text) { warnings.push_back(text); });
    QCOMPARE(pairs.pairs(), 3);
    QCOMPARE(pairs.skipped(), 2);
    QCOMPARE(warnings.size(), std::size_t(1));
    QVERIFY2(contains(warnings[0], "left out 2 bad lines of 5"), warnings[0].c_str());
    QVERIFY2(contains(warnings[0], "mixed.tsv:2: no tab"), warnings[0].c_str());
    const auto train = pairs.dataset(Split::Train, m_bytes, 250);
    QVERIFY(train->get(2).ids == bpeBytes("f"));
    // Every line bad: no pairs, and the first reason given.
    const auto allBad = writeFile(m_dir, "allbad.tsv", "x\ny\n");
    const std::string message = dataErrorOf([&] { TranslationPairs({allBad, {}}, kAllTrain, 0, true); });
    QVERIFY2(contains(message, "allbad.tsv: no pairs") && contains(message, "allbad.tsv:1: no tab"), message.c_str());
}

void TestTranslationPairs::filesThatCannotPairAreRefused()
{
    const auto three = writeFile(m_dir, "three.txt", "a\nb\nc\n");
    const auto two = writeFile(m_dir, "two.txt", "x\ny\n");
    std::string message = dataErrorOf([&] { TranslationPairs({three, two}, kAllTrain, 0, true); });
    QVERIFY2(contains(message, "three.txt has 3 lines and") && contains(message, "two.txt 2")
                 && contains(message, "line-aligned"),
             message.c_str());
    const auto empty = writeFile(m_dir, "empty.tsv", "");
    message = dataErrorOf([&] { TranslationPairs({empty, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "empty.tsv: file is empty"), message.c_str());
    message = dataErrorOf([&] { TranslationPairs({m_dir.filePath("missing.tsv").toStdString(), {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "missing.tsv"), message.c_str());
    const auto blank = writeFile(m_dir, "blank.tsv", "\n\n");
    message = dataErrorOf([&] { TranslationPairs({blank, {}}, kAllTrain, 0); });
    QVERIFY2(contains(message, "blank.tsv: no pairs"), message.c_str());
}

void TestTranslationPairs::splitsAreDeterministicAndStayWhenLinesAreLeftOut()
{
    std::string clean, broken;
    for (int i = 0; i < 400; ++i) {
        clean += "s" + std::to_string(i) + "\tt" + std::to_string(i) + "\n";
        broken += (i % 50 == 7 ? "no tab " + std::to_string(i) : "s" + std::to_string(i) + "\tt" + std::to_string(i))
                  + "\n";
    }
    const SplitFractions fractions{0.1, 0.1};
    const auto cleanPath = writeFile(m_dir, "clean.tsv", clean);
    const auto brokenPath = writeFile(m_dir, "broken.tsv", broken);
    const TranslationPairs a({cleanPath, {}}, fractions, 9), b({cleanPath, {}}, fractions, 9),
        other({cleanPath, {}}, fractions, 10), mended({brokenPath, {}}, fractions, 9, true);
    QCOMPARE(a.pairs(Split::Train) + a.pairs(Split::Validation) + a.pairs(Split::Test), 400);
    // About a tenth each (binomial: 40 +- 6 is about one standard deviation).
    QVERIFY(a.pairs(Split::Validation) > 20 && a.pairs(Split::Validation) < 60);
    QVERIFY(a.pairs(Split::Test) > 20 && a.pairs(Split::Test) < 60);
    const auto sourcesOf = [&](const TranslationPairs& pairs, Split split) {
        std::set<std::string> texts;
        const auto data = pairs.dataset(split, m_bytes, 250);
        for (std::int64_t i = 0; i < data->size(); ++i)
            texts.insert(m_bytes.decode(data->get(i).ids));
        return texts;
    };
    QVERIFY(sourcesOf(a, Split::Test) == sourcesOf(b, Split::Test));
    QVERIFY(sourcesOf(a, Split::Test) != sourcesOf(other, Split::Test));
    // The mended file's test pairs are the clean file's, less the lines left out.
    std::set<std::string> expected = sourcesOf(a, Split::Test);
    for (int i = 7; i < 400; i += 50)
        expected.erase("s" + std::to_string(i));
    QVERIFY(sourcesOf(mended, Split::Test) == expected);
}

void TestTranslationPairs::vocabularyLearnsFromBothSidesOfTrainingPairs()
{
    // "ab" only in sources, "zz" only in targets: both merge when both sides are learned from.
    std::string text;
    for (int i = 0; i < 40; ++i)
        text += "ab\tzz zz zz\n";
    const auto path = writeFile(m_dir, "vocab.tsv", text);
    const TranslationPairs pairs({path, {}}, kAllTrain, 0);
    VocabularyBuilder builder(TokenizerKind::Bpe);
    pairs.addTrainingTexts(builder);
    const Tokenizer learned = builder.buildBpe(50);
    const Ids zz = learned.encode("zz");
    const Ids ab = learned.encode("ab");
    QCOMPARE(zz.size(), std::size_t(1));  // merged: the targets were learned from
    QCOMPARE(ab.size(), std::size_t(1));  // and the sources
    QVERIFY(learned.encode("ba").size() == 2);  // a pair never seen stays two bytes
}

void TestTranslationPairs::longPairsAreLeftOutAndCounted()
{
    // With byte tokens a side of n characters is n subword units: limit 4.
    const auto path = writeFile(m_dir, "long.tsv", "abcd\tefgh\nabcde\tx\ny\tvwxyz\nab\tcd\n");
    const TranslationPairs pairs({path, {}}, kAllTrain, 0);
    std::int64_t tooLong = -1;
    const auto train = pairs.dataset(Split::Train, m_bytes, 4, &tooLong);
    QCOMPARE(tooLong, 2);  // a 5-unit source, a 5-unit target
    QCOMPARE(train->size(), 2);
    QVERIFY(train->get(0).ids == bpeBytes("abcd"));  // exactly the limit stays
    QVERIFY(train->get(1).targets == withEnd(bpeBytes("cd")));
}

QTEST_GUILESS_MAIN(TestTranslationPairs)
#include "tst_translationpairs.moc"
