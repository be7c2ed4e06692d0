// Tests of data/Datasets' language-model windows over a text file and its token cache: blocks and splits,
// the cache reused, followed and cleaned up, files cut short, progress, errors, and a large file
// streamed. Expected values are worked out by hand in the comments.
#include "DatasetsTestSupport.h"

using namespace widelab;
using namespace widelab::datasetstest;

namespace {

// Anonymous (heap) memory of this process in KiB, from /proc/self/status; -1 when unknown.
std::int64_t anonymousMemoryKiB()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("RssAnon:", 0) == 0)
            return std::stoll(line.substr(8));
    return -1;
}

}  // namespace

class TestDatasetsText : public QObject {
    Q_OBJECT

private Q_SLOTS:
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
};

// ---- TextFile ----

void TestDatasetsText::languageModelWindows()
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

void TestDatasetsText::languageModelShortLastWindow()
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

void TestDatasetsText::languageModelSplitBlocks()
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

void TestDatasetsText::languageModelWords()
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

void TestDatasetsText::tokenCacheIsReused()
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
void TestDatasetsText::tokenCacheFollowsTheSource()
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
void TestDatasetsText::tokenCacheLeftoversAreRemoved()
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
void TestDatasetsText::filesCutShortUnderneathAreNoCrash()
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
void TestDatasetsText::longTextsReportTokenizingProgress()
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

void TestDatasetsText::textFileErrors()
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

void TestDatasetsText::invalidUtf8NamesTheOffset()
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

void TestDatasetsText::largeFileIsStreamed()
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

QTEST_GUILESS_MAIN(TestDatasetsText)
#include "tst_datasets_text.moc"
