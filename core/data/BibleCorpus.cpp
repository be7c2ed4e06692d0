#include "data/BibleCorpus.h"

#include "data/ListOps.h"  // DataRandom, mixSeed
#include "runtime/SystemError.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace widelab {

const std::vector<BibleModule>& bibleModules()
{
    static const std::vector<BibleModule> modules = {
        {"web", "engWEB2015eb", "sword-text-web", "English", "World English Bible (2015)"},
        {"sparv", "spaRV1909eb", "sword-text-sparv", "Spanish", "Reina-Valera (1909)"},
        {"kjv", "engKJV2006eb", "sword-text-kjv", "English", "King James Version (1769)"},
    };
    return modules;
}

const BibleModule& findBibleModule(std::string_view name)
{
    std::string names;
    for (const BibleModule& module : bibleModules()) {
        if (module.name == name)
            return module;
        names += (names.empty() ? "" : ", ") + module.name;
    }
    throw BibleCorpusError("unknown Bible \"" + std::string(name) + "\": the Bibles are " + names);
}

std::string bibleInstallCommand()
{
    std::string command = "apt-get install";
    for (const BibleModule& module : bibleModules())
        command += " " + module.package;
    return command + " libsword-utils";
}

std::string Verse::key() const
{
    return book + " " + std::to_string(chapter) + ":" + std::to_string(verse);
}

namespace {

// ---- OSIS to plain text ----

enum class Handling { Keep, Drop, Break };

Handling handlingOf(std::string_view name)
{
    static const std::array<std::string_view, 10> kept = {
        "w", "transChange", "divineName", "q", "seg", "name", "foreign", "hi", "rdg", "catchWord"};
    static const std::array<std::string_view, 3> dropped = {"note", "reference", "speaker"};
    if (std::find(kept.begin(), kept.end(), name) != kept.end())
        return Handling::Keep;
    if (std::find(dropped.begin(), dropped.end(), name) != dropped.end())
        return Handling::Drop;
    return Handling::Break;
}

struct Tag {
    std::string_view name;
    bool end = false;          // </name>
    bool selfClosing = false;  // <name/>
    bool canonical = false;    // canonical="true"
    bool bookEnd = false;      // <div eID="..." type="book"/>: what follows is back matter
};

// The tag whose text (without < and >) is `inside`.
Tag parseTag(std::string_view inside)
{
    Tag tag;
    if (!inside.empty() && inside.front() == '/') {
        tag.end = true;
        inside.remove_prefix(1);
    }
    if (!inside.empty() && inside.back() == '/') {
        tag.selfClosing = true;
        inside.remove_suffix(1);
    }
    std::size_t n = 0;
    while (n < inside.size() && inside[n] != ' ' && inside[n] != '\t' && inside[n] != '\n' && inside[n] != '\r')
        ++n;
    tag.name = inside.substr(0, n);
    const std::string_view attributes = inside.substr(n);
    tag.canonical = attributes.find("canonical=\"true\"") != std::string_view::npos;
    tag.bookEnd = tag.name == "div" && tag.selfClosing && attributes.find(" eID=") != std::string_view::npos
                  && attributes.find("type=\"book\"") != std::string_view::npos;
    return tag;
}

// The first code point of `text` (UTF-8), or 0xFFFD for a stray byte.
char32_t firstCodePoint(std::string_view text)
{
    if (text.empty())
        return 0;
    const auto b = static_cast<unsigned char>(text[0]);
    int length = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (length == 0 || static_cast<std::size_t>(length) > text.size())
        return 0xFFFD;
    if (length == 1)
        return b;
    char32_t c = b & (0xFF >> (length + 1));
    for (int i = 1; i < length; ++i)
        c = (c << 6) | (static_cast<unsigned char>(text[i]) & 0x3F);
    return c;
}

// The last code point of `text` (UTF-8).
char32_t lastCodePoint(std::string_view text)
{
    std::size_t start = text.size();
    while (start > 0) {
        --start;
        if ((static_cast<unsigned char>(text[start]) & 0xC0) != 0x80)
            break;
    }
    return firstCodePoint(text.substr(start));
}

bool closesPhrase(char32_t c)
{
    return std::u32string_view(U",.;:!?)]}\u2019\u201D\u00BB\u2026\u2014").find(c) != std::u32string_view::npos;
}

bool opensPhrase(char32_t c)
{
    return std::u32string_view(U"([{\u201C\u2018\u00AB\u00BF\u00A1\u2014").find(c) != std::u32string_view::npos;
}

void appendUtf8(std::string& out, std::uint32_t c)
{
    if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        c = 0xFFFD;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

// The text an entity (`name` between & and ;) stands for, or nothing when it is not one.
bool decodeEntity(std::string_view name, std::string& out)
{
    static const std::array<std::pair<std::string_view, char>, 5> named = {
        {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}}};
    for (const auto& [entity, c] : named)
        if (name == entity) {
            out += c;
            return true;
        }
    if (name.size() < 2 || name[0] != '#')
        return false;
    const bool hex = name[1] == 'x' || name[1] == 'X';
    const std::string_view digits = name.substr(hex ? 2 : 1);
    std::uint32_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
        return false;
    appendUtf8(out, value);
    return true;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool isAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Whether two words that RV1909's markup writes side by side, <w>Dad</w><w>me</w>, are one
// word: a Spanish enclitic pronoun after an infinitive (-r), an imperative (-d) or a gerund
// (-ndo): "Dadme", "seguirle", "echarnos". Anything else side by side is two words
// ("preguntaban por", "Rehum y Baana").
bool joinsAsOneWord(std::string_view before, std::string_view after)
{
    std::size_t n = 0;
    while (n < after.size() && isAsciiLetter(after[n]))
        ++n;
    if (n < after.size() && !isSpace(after[n]) && after[n] != ',' && after[n] != '.' && after[n] != ';'
        && after[n] != ':')
        return false;
    static const std::array<std::string_view, 11> enclitics = {"me", "te", "se", "nos", "os", "le",
                                                               "les", "lo", "los", "la", "las"};
    const std::string_view word = after.substr(0, n);
    if (std::find(enclitics.begin(), enclitics.end(), word) == enclitics.end())
        return false;
    return before.ends_with("r") || before.ends_with("d") || before.ends_with("ndo");
}

// Collects text: whitespace collapsed, and a break between words where markup stood.
class PlainText {
public:
    void markBreak() { m_break = true; }
    void markAdjacentWords() { m_adjacent = true; }

    void add(std::string_view text)
    {
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (isSpace(text[i])) {
                m_space = true;
                continue;
            }
            if (!m_out.empty()) {
                if (m_space) {
                    m_out += ' ';
                } else if (m_break || (m_adjacent && !joinsAsOneWord(m_out, text.substr(i)))) {
                    const char32_t before = lastCodePoint(m_out);
                    if (!opensPhrase(before) && !closesPhrase(firstCodePoint(text.substr(i))))
                        m_out += ' ';
                }
            }
            m_space = m_break = m_adjacent = false;
            m_out += text[i];
        }
    }

    std::string take() { return std::move(m_out); }

private:
    std::string m_out;
    bool m_space = false;  // whitespace since the last character written
    bool m_break = false;  // markup since then that separates words
    bool m_adjacent = false;  // </w><w> since then: two words, unless joinsAsOneWord
};

}  // namespace

std::string osisToPlainText(std::string_view osis)
{
    PlainText plain;
    std::string_view dropping;  // the element whose content is being dropped
    int dropDepth = 0;          // its nesting: <note> inside <note>
    bool afterWord = false;     // the last thing read was </w> or </transChange>
    std::size_t i = 0;
    while (i < osis.size()) {
        const char c = osis[i];
        if (c == '<') {
            // The tag's end: the first '>' outside a quoted attribute value.
            std::size_t j = i + 1;
            char quote = 0;
            while (j < osis.size() && (quote != 0 || osis[j] != '>')) {
                if (quote == 0 && (osis[j] == '"' || osis[j] == '\''))
                    quote = osis[j];
                else if (osis[j] == quote)
                    quote = 0;
                ++j;
            }
            if (j >= osis.size())
                break;  // a tag cut short: nothing after it is text
            const Tag tag = parseTag(osis.substr(i + 1, j - i - 1));
            i = j + 1;
            if (tag.name.empty() || tag.name.front() == '!' || tag.name.front() == '?')
                continue;  // a comment or a processing instruction
            if (tag.bookEnd)
                break;  // the book's last verse ends here; a glossary may follow (WEB's Revelation)
            if (dropDepth > 0) {
                if (tag.name == dropping && !tag.selfClosing)
                    dropDepth += tag.end ? -1 : 1;
                if (dropDepth == 0)
                    plain.markBreak();
                continue;
            }
            const bool word = tag.name == "w" || tag.name == "transChange";
            if (word && !tag.end && afterWord)
                plain.markAdjacentWords();
            afterWord = word && tag.end;
            Handling handling = handlingOf(tag.name);
            if (tag.name == "title")
                handling = tag.canonical || tag.end ? Handling::Break : Handling::Drop;
            if (handling == Handling::Drop) {
                if (!tag.end && !tag.selfClosing) {
                    dropping = tag.name;
                    dropDepth = 1;
                }
                plain.markBreak();
            } else if (handling == Handling::Break) {
                plain.markBreak();
            }
            continue;
        }
        std::size_t next = osis.find_first_of("<&", i);
        if (next == std::string_view::npos)
            next = osis.size();
        if (dropDepth == 0 && next > i) {
            plain.add(osis.substr(i, next - i));
            afterWord = false;
        }
        i = next;
        if (i < osis.size() && osis[i] == '&') {
            const std::size_t semicolon = osis.find(';', i);
            std::string decoded;
            const bool entity = semicolon != std::string_view::npos && semicolon - i <= 12
                                && decodeEntity(osis.substr(i + 1, semicolon - i - 1), decoded);
            i = entity ? semicolon + 1 : i + 1;
            if (dropDepth == 0)
                plain.add(entity ? std::string_view(decoded) : std::string_view("&"));
        }
    }
    return plain.take();
}

std::vector<Verse> parseImpVerses(std::string_view imp)
{
    std::vector<Verse> verses;
    bool inVerse = false;  // the lines read belong to verses.back()
    std::string markup;
    const auto finish = [&] {
        if (inVerse)
            verses.back().text = osisToPlainText(markup);
        markup.clear();
        inVerse = false;
    };
    std::size_t start = 0;
    while (start < imp.size()) {
        std::size_t end = imp.find('\n', start);
        if (end == std::string_view::npos)
            end = imp.size();
        std::string_view line = imp.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.rfind("$$$", 0) != 0) {
            if (inVerse) {
                markup += line;
                markup += '\n';
            }
            continue;
        }
        finish();
        // "$$$Book C:V": the book is everything before the last space.
        const std::string_view key = line.substr(3);
        const std::size_t space = key.rfind(' ');
        const std::size_t colon = key.rfind(':');
        if (space == std::string_view::npos || colon == std::string_view::npos || colon < space)
            continue;  // "[ Module Heading ]" and the like
        int chapter = 0, verse = 0;
        const std::string_view c = key.substr(space + 1, colon - space - 1);
        const std::string_view v = key.substr(colon + 1);
        const auto [cEnd, cError] = std::from_chars(c.data(), c.data() + c.size(), chapter);
        const auto [vEnd, vError] = std::from_chars(v.data(), v.data() + v.size(), verse);
        if (cError != std::errc() || vError != std::errc() || cEnd != c.data() + c.size()
            || vEnd != v.data() + v.size() || chapter <= 0 || verse <= 0)
            continue;  // an introduction (C:0 or 0:0), or not a verse's key
        verses.push_back(Verse{std::string(key.substr(0, space)), chapter, verse, {}});
        inVerse = true;
    }
    finish();
    return verses;
}

namespace {

// What `program args...` writes on its standard output and error, and how it ended;
// `error` is the errno when it could not be started (ENOENT: not found).
struct ChildOutput {
    std::string out;
    std::string err;
    int status = 0;
    int error = 0;
};

ChildOutput runChild(const std::vector<std::string>& command)
{
    ChildOutput result;
    int outPipe[2] = {-1, -1};
    int errPipe[2] = {-1, -1};
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
        result.error = errno;
        for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]})
            if (fd >= 0)
                close(fd);
        return result;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char*> argv;
    for (const std::string& arg : command)
        argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    pid_t pid = -1;
    result.error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(outPipe[1]);
    close(errPipe[1]);
    if (result.error != 0) {
        close(outPipe[0]);
        close(errPipe[0]);
        return result;
    }
    // Both pipes at once, so that a child writing much to one never waits on the other.
    std::array<pollfd, 2> fds = {{{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}}};
    std::array<std::string*, 2> sinks = {&result.out, &result.err};
    std::array<char, 65536> buffer{};
    int open = 2;
    while (open > 0) {
        if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].fd < 0 || fds[k].revents == 0)
                continue;
            const ssize_t n = read(fds[k].fd, buffer.data(), buffer.size());
            if (n > 0) {
                sinks[k]->append(buffer.data(), static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                close(fds[k].fd);
                fds[k].fd = -1;
                --open;
            }
        }
    }
    for (const pollfd& fd : fds)
        if (fd.fd >= 0)
            close(fd.fd);
    while (waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
    }
    return result;
}

std::string firstLine(std::string_view text)
{
    const std::size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos)
        return {};
    text.remove_prefix(start);
    return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

std::vector<Verse> readBibleModule(const BibleModule& module)
{
    const ChildOutput child = runChild({"mod2imp", module.module});
    if (child.error == ENOENT)
        throw BibleCorpusError("mod2imp, which reads the SWORD Bible modules, is not installed; on Debian: "
                               + bibleInstallCommand());
    if (child.error != 0)
        throw BibleCorpusError("mod2imp could not be started: " + systemReason(child.error));
    const bool exited = WIFEXITED(child.status);
    if (!exited || WEXITSTATUS(child.status) != 0 || child.out.find("$$$") == std::string::npos) {
        const std::string said = firstLine(child.err);
        if (said.find("Couldn't find module") != std::string::npos || (exited && child.out.empty()))
            throw BibleCorpusError("the SWORD module " + module.module + " (" + module.name + ", "
                                   + module.title + ") is not installed; on Debian: apt-get install "
                                   + module.package + " (every Bible: " + bibleInstallCommand() + ")");
        throw BibleCorpusError("mod2imp " + module.module + " failed"
                               + (exited ? " with exit status " + std::to_string(WEXITSTATUS(child.status))
                                         : std::string(" on a signal"))
                               + (said.empty() ? std::string() : ": " + said));
    }
    std::vector<Verse> verses = parseImpVerses(child.out);
    if (verses.empty())
        throw BibleCorpusError("mod2imp " + module.module + " gave no verses");
    return verses;
}

AlignedVerses alignVerses(const std::vector<Verse>& source, const std::vector<Verse>& target)
{
    using Key = std::tuple<std::string_view, int, int>;
    std::map<Key, const Verse*> targets;
    for (const Verse& verse : target)
        targets.emplace(Key{verse.book, verse.chapter, verse.verse}, &verse);
    AlignedVerses aligned;
    std::size_t matched = 0;
    std::map<Key, bool> seen;
    for (const Verse& verse : source) {
        const Key key{verse.book, verse.chapter, verse.verse};
        if (!seen.emplace(key, true).second)
            continue;  // a key given twice: its first text counts
        const auto it = targets.find(key);
        if (it == targets.end()) {
            ++aligned.onlySource;
            continue;
        }
        ++matched;
        if (verse.text.empty() || it->second->text.empty()) {
            ++aligned.emptySkipped;
            continue;
        }
        aligned.pairs.push_back(VersePair{verse.key(), verse.text, it->second->text});
    }
    aligned.onlyTarget = targets.size() - matched;
    return aligned;
}

namespace {

struct BookSection {
    std::string_view book;
    std::string_view section;
};

// The 66 books as Debian's modules name them (mod2imp's keys), each with its part.
constexpr BookSection kBookSections[] = {
    {"Genesis", "law"}, {"Exodus", "law"}, {"Leviticus", "law"}, {"Numbers", "law"}, {"Deuteronomy", "law"},
    {"Joshua", "history"}, {"Judges", "history"}, {"Ruth", "history"}, {"I Samuel", "history"},
    {"II Samuel", "history"}, {"I Kings", "history"}, {"II Kings", "history"}, {"I Chronicles", "history"},
    {"II Chronicles", "history"}, {"Ezra", "history"}, {"Nehemiah", "history"}, {"Esther", "history"},
    {"Job", "poetry"}, {"Psalms", "poetry"}, {"Proverbs", "poetry"}, {"Ecclesiastes", "poetry"},
    {"Song of Solomon", "poetry"},
    {"Isaiah", "prophets"}, {"Jeremiah", "prophets"}, {"Lamentations", "prophets"}, {"Ezekiel", "prophets"},
    {"Daniel", "prophets"}, {"Hosea", "prophets"}, {"Joel", "prophets"}, {"Amos", "prophets"},
    {"Obadiah", "prophets"}, {"Jonah", "prophets"}, {"Micah", "prophets"}, {"Nahum", "prophets"},
    {"Habakkuk", "prophets"}, {"Zephaniah", "prophets"}, {"Haggai", "prophets"}, {"Zechariah", "prophets"},
    {"Malachi", "prophets"},
    {"Matthew", "gospels"}, {"Mark", "gospels"}, {"Luke", "gospels"}, {"John", "gospels"},
    {"Acts", "history"},
    {"Romans", "letters"}, {"I Corinthians", "letters"}, {"II Corinthians", "letters"}, {"Galatians", "letters"},
    {"Ephesians", "letters"}, {"Philippians", "letters"}, {"Colossians", "letters"},
    {"I Thessalonians", "letters"}, {"II Thessalonians", "letters"}, {"I Timothy", "letters"},
    {"II Timothy", "letters"}, {"Titus", "letters"}, {"Philemon", "letters"}, {"Hebrews", "letters"},
    {"James", "letters"}, {"I Peter", "letters"}, {"II Peter", "letters"}, {"I John", "letters"},
    {"II John", "letters"}, {"III John", "letters"}, {"Jude", "letters"},
    {"Revelation of John", "prophets"},
};

}  // namespace

std::string_view bibleSection(std::string_view book)
{
    for (const BookSection& entry : kBookSections)
        if (entry.book == book)
            return entry.section;
    return {};
}

const std::vector<std::string>& bibleSections()
{
    // The table's sections in the order they first appear.
    static const std::vector<std::string> sections = [] {
        std::vector<std::string> found;
        for (const BookSection& entry : kBookSections)
            if (std::find(found.begin(), found.end(), entry.section) == found.end())
                found.emplace_back(entry.section);
        return found;
    }();
    return sections;
}

std::vector<VerseCouple> sameBookCouples(const std::vector<Verse>& verses, std::uint64_t seed)
{
    std::vector<const Verse*> texts;
    for (const Verse& verse : verses)
        if (!verse.text.empty())
            texts.push_back(&verse);
    // Each book's verses as a range of `texts`: [first, end).
    std::map<std::string, std::pair<std::size_t, std::size_t>> books;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        auto [where, added] = books.try_emplace(texts[i]->book, i, i + 1);
        if (!added)
            where->second.second = i + 1;  // a module holds a book's verses together
    }
    std::vector<VerseCouple> couples;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        DataRandom random(mixSeed(seed, i));
        const auto [first, end] = books.at(texts[i]->book);
        const std::size_t inBook = end - first - 1, outside = texts.size() - (end - first);
        bool same = random.below(2) == 0;
        if (inBook == 0 || outside == 0)
            same = inBook > 0;
        if (inBook == 0 && outside == 0)
            continue;  // a single verse: nothing to pair it with
        std::size_t partner = 0;
        if (same) {
            partner = first + random.below(inBook);
            partner += partner >= i ? 1 : 0;  // skip the verse itself
        } else {
            partner = random.below(outside);
            partner += partner >= first ? end - first : 0;  // skip the book
        }
        couples.push_back({same, texts[i]->text, texts[partner]->text});
    }
    return couples;
}

std::vector<VerseCouple> translationCouples(const std::vector<VersePair>& pairs, std::uint64_t seed)
{
    std::vector<VerseCouple> couples;
    if (pairs.size() < 2)
        return couples;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        DataRandom random(mixSeed(seed, i));
        const bool same = random.below(2) == 0;
        std::size_t partner = i;
        if (!same) {
            partner = random.below(pairs.size() - 1);
            partner += partner >= i ? 1 : 0;
        }
        couples.push_back({same, pairs[i].source, pairs[partner].target});
    }
    return couples;
}

std::vector<BibleChapter> bibleChapters(const std::vector<Verse>& verses)
{
    std::vector<BibleChapter> chapters;
    for (const Verse& verse : verses) {
        const std::string_view section = bibleSection(verse.book);
        if (section.empty() || verse.text.empty())
            continue;
        if (chapters.empty() || chapters.back().book != verse.book || chapters.back().chapter != verse.chapter)
            chapters.push_back({verse.book, verse.chapter, std::string(section), std::string()});
        std::string& text = chapters.back().text;
        if (!text.empty())
            text += ' ';
        text += verse.text;
    }
    return chapters;
}

}  // namespace widelab
