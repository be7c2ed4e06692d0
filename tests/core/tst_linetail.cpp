// Tests of run/LineTail, the reader that follows metrics.jsonl and log.txt while
// another process writes them: a torn last line waits for its newline, a file
// replaced by a shorter one, truncated or rewritten in place starts again, an
// unchanged file is not read, long lines and odd bytes come back whole.
#include "run/LineTail.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace widelab;

namespace {

using Lines = std::vector<std::string>;

void writeBytes(const std::filesystem::path& file, const std::string& bytes, std::ios::openmode mode = std::ios::trunc)
{
    std::ofstream out(file, std::ios::binary | mode);
    out << bytes;
}

void append(const std::filesystem::path& file, const std::string& bytes) { writeBytes(file, bytes, std::ios::app); }

// Writes `bytes` to a temporary file and renames it over `file`, as the trainer
// does when a resume trims metrics.jsonl.
void replace(const std::filesystem::path& file, const std::string& bytes)
{
    const std::filesystem::path temporary = file.string() + ".tmp";
    writeBytes(temporary, bytes);
    std::filesystem::rename(temporary, file);
}

}  // namespace

class TestLineTail : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void aTornLineWaitsForItsNewline();
    void anUnchangedFileIsNotRead();
    void aFileReplacedByAShorterOneStartsAgain();
    void truncationAndInPlaceRewritesStartAgain();
    void aMissingFileIsNothingYetThenARestart();
    void chunksKeepOrderAndLongLinesComeWhole();
    void oddBytesComeBackAsTheyAre();
    void anUnreadableFileIsAnErrorNamingIt();

private:
    QTemporaryDir m_dir;
    std::filesystem::path m_file;
};

void TestLineTail::init()
{
    QVERIFY(m_dir.isValid());
    m_file = std::filesystem::path(m_dir.path().toStdString()) / "metrics.jsonl";
    std::filesystem::remove(m_file);
}

void TestLineTail::aTornLineWaitsForItsNewline()
{
    writeBytes(m_file, "{\"step\":1}\n{\"step\":");
    LineTail tail(m_file);
    LineTail::Update first = tail.poll();
    QCOMPARE(first.lines, Lines{"{\"step\":1}"});
    QCOMPARE(first.lineNumbers, std::vector<std::uint64_t>{1});
    QVERIFY(!first.restarted && !first.more && first.error.empty());
    QCOMPARE(tail.offset(), std::uint64_t{11});

    append(m_file, "2");  // still torn
    QVERIFY(tail.poll().lines.empty());
    append(m_file, "}\n\n{\"step\":3}\n");  // completed, an empty line, one more
    const LineTail::Update second = tail.poll();
    QCOMPARE(second.lines, (Lines{"{\"step\":2}", "{\"step\":3}"}));
    // Numbered as in the file, the skipped empty line counted: messages name the line an editor shows.
    QCOMPARE(second.lineNumbers, (std::vector<std::uint64_t>{2, 4}));
    QVERIFY(!second.restarted);
    QCOMPARE(tail.offset(), std::filesystem::file_size(m_file));
}

void TestLineTail::anUnchangedFileIsNotRead()
{
    writeBytes(m_file, "aaaa\nbbbb\n");
    LineTail tail(m_file);
    QCOMPARE(tail.poll().lines.size(), std::size_t{2});
    struct stat before {};
    QCOMPARE(::stat(m_file.c_str(), &before), 0);

    // Other bytes of the same size under the same time stamp: only a poll that
    // reads would notice, and one that only stats must not.
    writeBytes(m_file, "cccc\ndddd\n", std::ios::in | std::ios::out);
    const timespec times[2] = {before.st_atim, before.st_mtim};
    QCOMPARE(::utimensat(AT_FDCWD, m_file.c_str(), times, 0), 0);
    for (int i = 0; i < 3; ++i) {
        const LineTail::Update update = tail.poll();
        QVERIFY(update.lines.empty() && !update.restarted);
    }

    // A new time stamp makes it look: the bytes before the offset differ, so it starts again.
    const timespec later[2] = {before.st_atim, {before.st_mtim.tv_sec + 5, 0}};
    QCOMPARE(::utimensat(AT_FDCWD, m_file.c_str(), later, 0), 0);
    const LineTail::Update update = tail.poll();
    QVERIFY(update.restarted);
    QCOMPARE(update.lines, (Lines{"cccc", "dddd"}));
}

void TestLineTail::aFileReplacedByAShorterOneStartsAgain()
{
    writeBytes(m_file, "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"step\":4}\n");
    LineTail tail(m_file);
    QCOMPARE(tail.poll().lines.size(), std::size_t{4});

    replace(m_file, "{\"step\":1}\n{\"step\":2}\n");  // a resume trimmed steps 3 and 4
    const LineTail::Update trimmed = tail.poll();
    QVERIFY(trimmed.restarted);
    QCOMPARE(trimmed.lines, (Lines{"{\"step\":1}", "{\"step\":2}"}));
    QCOMPARE(trimmed.lineNumbers, (std::vector<std::uint64_t>{1, 2}));  // counted from the top again

    // Replaced by a longer file: the inode tells, not the size.
    replace(m_file, "{\"step\":1}\n{\"step\":2}\n{\"step\":3, \"again\":1}\n{\"step\":4, \"again\":1}\n{\"step\":5}\n");
    const LineTail::Update longer = tail.poll();
    QVERIFY(longer.restarted);
    QCOMPARE(longer.lines.size(), std::size_t{5});
    QCOMPARE(longer.lines[2], std::string("{\"step\":3, \"again\":1}"));

    append(m_file, "{\"step\":6}\n");  // and it goes on from there
    const LineTail::Update grown = tail.poll();
    QVERIFY(!grown.restarted);
    QCOMPARE(grown.lines, Lines{"{\"step\":6}"});
}

void TestLineTail::truncationAndInPlaceRewritesStartAgain()
{
    writeBytes(m_file, "first line\nsecond line\n");
    LineTail tail(m_file);
    QCOMPARE(tail.poll().lines.size(), std::size_t{2});

    writeBytes(m_file, "new\n");  // truncated in place, shorter than the offset
    LineTail::Update update = tail.poll();
    QVERIFY(update.restarted);
    QCOMPARE(update.lines, Lines{"new"});

    // Truncated and written past the old offset before the next look: same inode,
    // larger size, but the bytes before the offset are not the ones read.
    writeBytes(m_file, "another first line\nanother second line\n");
    update = tail.poll();
    QVERIFY(update.restarted);
    QCOMPARE(update.lines, (Lines{"another first line", "another second line"}));
}

void TestLineTail::aMissingFileIsNothingYetThenARestart()
{
    LineTail tail(m_file);
    LineTail::Update update = tail.poll();
    QVERIFY(update.lines.empty() && !update.restarted && update.error.empty());

    writeBytes(m_file, "one\n");
    update = tail.poll();
    QCOMPARE(update.lines, Lines{"one"});
    QVERIFY(!update.restarted);  // nothing had been read: a beginning, not a restart

    std::filesystem::remove(m_file);  // a new run in the directory removes the old metrics
    update = tail.poll();
    QVERIFY(update.restarted && update.lines.empty() && update.error.empty());
    QCOMPARE(tail.offset(), std::uint64_t{0});
    writeBytes(m_file, "two\n");
    update = tail.poll();
    QCOMPARE(update.lines, Lines{"two"});
    QVERIFY(!update.restarted);
}

void TestLineTail::chunksKeepOrderAndLongLinesComeWhole()
{
    std::string bytes;
    Lines expected;
    for (int i = 0; i < 50; ++i) {
        expected.push_back("line " + std::to_string(i));
        bytes += expected.back() + "\n";
    }
    const std::string longLine(300, 'x');
    expected.push_back(longLine);
    bytes += longLine + "\n";
    writeBytes(m_file, bytes);

    LineTail tail(m_file);
    Lines read;
    int polls = 0;
    for (LineTail::Update update = tail.poll(32);; update = tail.poll(32)) {
        ++polls;
        read.insert(read.end(), update.lines.begin(), update.lines.end());
        QVERIFY(!update.lines.empty() || !update.more);  // every poll that asks for more makes progress
        if (!update.more)
            break;
        QVERIFY(polls < 1000);
    }
    QCOMPARE(read, expected);
    QVERIFY2(polls > 5, "a 32-byte chunk must take several polls");
}

void TestLineTail::oddBytesComeBackAsTheyAre()
{
    const std::string odd = std::string("\xff\xfe not UTF-8 \xc3\x28 and a NUL ") + '\0' + " inside";
    writeBytes(m_file, odd + "\n{\"step\":1}\r\n");
    LineTail tail(m_file);
    const LineTail::Update update = tail.poll();
    QCOMPARE(update.lines.size(), std::size_t{2});
    QCOMPARE(update.lines[0], odd);
    QCOMPARE(update.lines[1], std::string("{\"step\":1}\r"));  // the caller's parser copes with the CR
}

void TestLineTail::anUnreadableFileIsAnErrorNamingIt()
{
    std::filesystem::create_directory(m_file);  // a directory where the file should be
    LineTail tail(m_file);
    const LineTail::Update update = tail.poll();
    QVERIFY(update.lines.empty());
    QVERIFY2(update.error.find(m_file.string()) != std::string::npos, update.error.c_str());
    std::filesystem::remove(m_file);
}

QTEST_GUILESS_MAIN(TestLineTail)
#include "tst_linetail.moc"
