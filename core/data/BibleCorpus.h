// defines: BibleModule (the SWORD Bibles `widelab-cli corpus bible` knows: web, sparv, kjv),
// osisToPlainText (a verse's OSIS markup as plain text), parseImpVerses (mod2imp's output as
// verses), readBibleModule (a module's verses, through Debian's mod2imp), alignVerses (two
// modules' verses paired by book, chapter and verse), bibleSection and bibleChapters (a module's
// chapters labelled by the part of the Bible they belong to), BibleCorpusError. Neither torch nor Qt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace widelab {

// A module missing, mod2imp missing or failing, a name not known: the message says what to do
// (which Debian packages to install, which names there are).
class BibleCorpusError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A Bible the corpus command reads: the name on the command line, the SWORD module, and the
// Debian package that installs it.
struct BibleModule {
    std::string name;      // "web"
    std::string module;    // "engWEB2015eb"
    std::string package;   // "sword-text-web"
    std::string language;  // "English"
    std::string title;     // "World English Bible (2015)"
};

// web, sparv and kjv, in that order.
const std::vector<BibleModule>& bibleModules();

// The module called `name`; throws BibleCorpusError listing the names when there is none.
const BibleModule& findBibleModule(std::string_view name);

// The Debian packages the corpus command needs: every module's and libsword-utils (mod2imp),
// as one `apt-get install ...` line.
std::string bibleInstallCommand();

// One verse: its key as SWORD writes it ("Genesis", 1, 1) and its plain text.
struct Verse {
    std::string book;
    int chapter = 0;
    int verse = 0;
    std::string text;

    std::string key() const;  // "Genesis 1:1"
};

// A verse's OSIS markup as plain text. The modules' markup (engWEB2015eb, spaRV1909eb,
// engKJV2006eb as Debian 12 ships them) holds:
//   kept as text:  <w lemma morph> (Strong's numbers and morphology: the word stays),
//                  <transChange> (KJV's added words), <divineName> (LORD), <q> (red letters;
//                  the quotation marks are text already), <seg>, <name>, <foreign>, <hi>,
//                  <rdg>, <catchWord>, and <title canonical="true"> (a psalm's superscription,
//                  which is verse text: Spanish RV1909 has it as plain text in verse 1)
//   dropped with what they hold: <note> (footnotes and cross references), <title> that is
//                  not canonical (headings, Psalm 119's letters in KJV), <reference> (only
//                  met inside notes), <speaker> (Song of Solomon's "Beloved", "Friends")
//   a word break:  <div> (paragraphs, pre-verse milestones), <l>, <lg>, <lb>, <chapter>,
//                  <milestone>, <list>, <item> and any element not named above
//   the end:       <div eID=".." type="book"/>, the book's end: what follows in its last verse
//                  is back matter (WEB's glossary after Revelation 22:21)
// A dropped element or a word break puts a space between the words on either side, but not
// before closing punctuation (",.;:!?)]’”»…—") nor after opening (“‘«¿¡([—). Entities (&amp;
// &lt; &gt; &quot; &apos;, &#N; and &#xH;) are decoded; runs of whitespace become one space,
// none at either end.
std::string osisToPlainText(std::string_view osis);

// The verses of mod2imp's output ("$$$Book C:V" lines, each followed by its text), in the
// order given, their text made plain by osisToPlainText. Headings ("$$$[ Module Heading ]")
// and introductions (chapter or verse 0) are left out; a verse whose text is empty is kept,
// with an empty text.
std::vector<Verse> parseImpVerses(std::string_view imp);

// Every verse of `module`, from `mod2imp MODULE` (libsword-utils) as a child process: mod2imp
// knows each module's versification (KJV, NRSVA), which turns the compressed zText
// blocks into book, chapter and verse; reading the blocks here would need those tables too.
// Throws BibleCorpusError naming the packages to install when mod2imp or the module is missing.
std::vector<Verse> readBibleModule(const BibleModule& module);

// A verse of both modules.
struct VersePair {
    std::string key;  // "Genesis 1:1"
    std::string source;
    std::string target;
};

struct AlignedVerses {
    std::vector<VersePair> pairs;  // in the source module's (canonical) order
    std::size_t onlySource = 0;    // verses of the source whose key the target lacks
    std::size_t onlyTarget = 0;    // and the other way round
    std::size_t emptySkipped = 0;  // keys in both with an empty text on either side
};

// Verses paired by (book, chapter, verse): a key in both, with text on both sides, is a pair.
AlignedVerses alignVerses(const std::vector<Verse>& source, const std::vector<Verse>& target);

// The part of the Bible a book (as SWORD names it) belongs to, in the 66 books' usual division:
// "law" (Genesis-Deuteronomy), "history" (Joshua-Esther, and Acts), "poetry" (Job-Song of
// Solomon), "prophets" (Isaiah-Malachi, and Revelation), "gospels" (Matthew-John), "letters"
// (Romans-Jude). Empty for any other book (the deuterocanonical books some modules carry).
std::string_view bibleSection(std::string_view book);
// The six, in that order.
const std::vector<std::string>& bibleSections();

// One chapter of a book that has a section: its verses' texts joined by spaces.
struct BibleChapter {
    std::string book;
    int chapter = 0;
    std::string section;
    std::string text;
};

// The chapters of `verses` (a module's, in its order) whose book has a section, in order; a
// verse with an empty text adds nothing, and a chapter with no text is left out.
std::vector<BibleChapter> bibleChapters(const std::vector<Verse>& verses);

// A pair of verses for a pair task: are they from the same book?
struct VerseCouple {
    bool same = false;  // of the same book (sameBookCouples), the same verse (translationCouples)
    std::string first, second;  // the verses' texts
};

// One couple per verse with a text, in order: that verse first, then another verse with a text drawn from
// (seed, its index), of the same book with probability 1/2 (a book of one such verse: of another), else of
// another book (a Bible of one book: of the same), each candidate equally likely.
std::vector<VerseCouple> sameBookCouples(const std::vector<Verse>& verses, std::uint64_t seed);

// One couple per aligned pair, in order: its source verse first, then, with probability 1/2 drawn from (seed,
// its index), its own target (the same verse in the other Bible: `same` true, read "the same verse"), else
// the target of another pair, each equally likely (MRPC's paraphrase question on two translations). Fewer than
// two pairs: none.
std::vector<VerseCouple> translationCouples(const std::vector<VersePair>& pairs, std::uint64_t seed);

}  // namespace widelab
