// Tests of what a user feeds a run that once broke it: UTF-8 and binary data under
// the byte tokenizer, CR line endings, a data file that gains a label, a stop
// between two metrics lines, a run too large for the machine, and ListOps sizes.
#include "TestSupport.h"
#include "vocab/ByteText.h"
#include "data/Datasets.h"
#include "runtime/DeviceMemory.h"
#include "run/RunDirectory.h"
#include "train/Trainer.h"

#include <QtTest>

#include <fstream>
#include <random>
#include <sstream>

using namespace widelab;

namespace {

std::filesystem::path fresh(const QTemporaryDir& dir, const char* name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

void writeBytes(const std::filesystem::path& file, const std::string& bytes)
{
    std::ofstream(file, std::ios::binary) << bytes;
}

using test::metricLines;

// A tiny byte-level language model on `file`.
RunDocument byteModelOn(const std::filesystem::path& file)
{
    return parseRunDocument(nlohmann::json{
        {"model", {{"vocab_size", 258}, {"max_len", 32}, {"d_model", 16}, {"layers", 1}, {"heads", 2},
                   {"ffn_dim", 32}, {"dropout", 0.0}, {"head", "language_model"}}},
        {"task", {{"kind", "language_model"}, {"path", file.string()}, {"tokenizer", "byte"},
                  {"validation_fraction", 0.2}}},
        {"train", {{"steps", 2}, {"batch_size", 2}, {"warmup_steps", 1}, {"eval_every", 2}, {"eval_batches", 1},
                   {"checkpoint_every", 2}, {"threads", 1}}}}.dump());
}

// A tiny classifier on the TSV `file`.
RunDocument classifierOn(const std::filesystem::path& file)
{
    return parseRunDocument(nlohmann::json{
        {"model", {{"vocab_size", 258}, {"max_len", 32}, {"d_model", 16}, {"layers", 1}, {"heads", 2},
                   {"ffn_dim", 32}, {"dropout", 0.0}, {"num_classes", 4}}},
        {"task", {{"kind", "classification"}, {"path", file.string()}, {"validation_fraction", 0.3},
                  {"test_fraction", 0.0}}},
        {"train", {{"steps", 2}, {"batch_size", 2}, {"warmup_steps", 1}, {"eval_every", 2},
                   {"checkpoint_every", 2}, {"threads", 1}}}}.dump());
}

}  // namespace

class TestRunInputs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void bytesThroughJsonAndOnScreen();
    void utf8TextTrainsUnderTheByteTokenizer();
    void binaryDataTrainsAndItsProbeRoundTrips();
    void lineEndingsReadAlike();
    void classesStayWithTheRun();
    void stopBetweenMetricsLinesResumesTheSameLines();
    void runTooLargeForTheMachineIsRefused();
    void listOpsMemoryByHand();
    void longSetUpCanBeStopped();
};

void TestRunInputs::bytesThroughJsonAndOnScreen()
{
    // "café" cut after the lead byte of "é", and one stray continuation byte.
    QCOMPARE(legibleBytes("caf\xc3"), std::string("caf\\xc3"));
    QCOMPARE(legibleBytes("\x80" "ab"), std::string("\\x80ab"));
    QCOMPARE(legibleBytes("日本 🎉"), std::string("日本 🎉"));
    QCOMPARE(bytesToJson("plain é"), nlohmann::json("plain é"));
    QCOMPARE(bytesToJson(std::string("a\xff\x00", 3)), (nlohmann::json{{"hex", "61ff00"}}));
    // Any byte sequence survives a JSON document and back.
    std::mt19937 random(7);
    for (int round = 0; round < 200; ++round) {
        std::string bytes(random() % 40, '\0');
        for (char& c : bytes)
            c = static_cast<char>(random() % 256);
        const std::string text = bytesToJson(bytes).dump();  // throws on invalid UTF-8 if not encoded
        QCOMPARE(bytesFromJson(nlohmann::json::parse(text)).value(), bytes);
        QVERIFY(findInvalidUtf8(legibleBytes(bytes)) == std::string_view::npos);
    }
    QVERIFY(!bytesFromJson(nlohmann::json{{"hex", "abc"}}));
    QVERIFY(!bytesFromJson(nlohmann::json{{"hex", "zz"}}));
    QVERIFY(!bytesFromJson(nlohmann::json{{"hex", "00"}, {"more", 1}}));
    QVERIFY(!bytesFromJson(nlohmann::json(3)));
}

void TestRunInputs::utf8TextTrainsUnderTheByteTokenizer()
{
    QTemporaryDir dir;
    std::string text;
    for (int i = 0; i < 40; ++i)
        text += "Héllo wörld, 日本語のテキスト 🎉 naïve café. ";
    writeBytes(fresh(dir, "utf8.txt"), text);
    Trainer trainer(byteModelOn(fresh(dir, "utf8.txt")), fresh(dir, "run"));
    std::atomic<bool> stop{false};
    QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    // The default probe is cut from the text without cutting a character.
    const RunDocument saved = readRunDocument(fresh(dir, "run"));
    QCOMPARE(saved.train.probes.size(), std::size_t{1});
    const std::string& probe = saved.train.probes.front();
    QVERIFY(!probe.empty());
    QVERIFY2(findInvalidUtf8(probe) == std::string_view::npos, legibleBytes(probe).c_str());
    QVERIFY(text.find(probe) != std::string::npos);
    const auto probes = metricLines(fresh(dir, "run"), "probe");
    QVERIFY(!probes.empty());
    QCOMPARE(probes.front()["text"].get<std::string>(), probe);
}

void TestRunInputs::binaryDataTrainsAndItsProbeRoundTrips()
{
    QTemporaryDir dir;
    std::string bytes;
    std::mt19937 random(3);
    for (int i = 0; i < 4000; ++i)
        bytes += static_cast<char>(random() % 256);
    writeBytes(fresh(dir, "blob.bin"), bytes);
    {
        Trainer trainer(byteModelOn(fresh(dir, "blob.bin")), fresh(dir, "run"));
        std::atomic<bool> stop{false};
        QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    }
    // config.json holds the probe's bytes exactly, as hex; the metrics line shows them legibly.
    const RunDocument saved = readRunDocument(fresh(dir, "run"));
    const std::string& probe = saved.train.probes.front();
    QVERIFY(bytes.find(probe) != std::string::npos);
    std::ostringstream config;
    config << std::ifstream(fresh(dir, "run") / "config.json").rdbuf();
    QVERIFY2(config.str().find("\"hex\"") != std::string::npos, config.str().c_str());
    const auto probes = metricLines(fresh(dir, "run"), "probe");
    QCOMPARE(probes.front()["text"].get<std::string>(), legibleBytes(probe));
    // And the run resumes with it.
    TrainerOptions resume;
    resume.resume = true;
    resume.steps = 4;
    Trainer again(saved, fresh(dir, "run"), resume);
    std::atomic<bool> stop{false};
    QCOMPARE(static_cast<int>(again.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    QCOMPARE(readRunDocument(fresh(dir, "run")).train.probes, saved.train.probes);
}

void TestRunInputs::lineEndingsReadAlike()
{
    QTemporaryDir dir;
    const std::vector<std::pair<std::string, std::string>> rows = {
        {"pos", "a good film"}, {"neg", "dull"}, {"pos", "fine, really"}, {"neg", "no"}};
    std::vector<std::vector<std::string>> texts;
    std::vector<std::vector<std::int64_t>> labels;
    for (const char* end : {"\n", "\r\n", "\r"}) {
        for (const char* extension : {".tsv", ".csv"}) {
            std::string file;
            for (const auto& [label, text] : rows)
                file += label + (extension == std::string(".tsv") ? "\t" : ",\"") + text
                        + (extension == std::string(".tsv") ? "" : "\"") + end;
            const std::filesystem::path path = fresh(dir, (std::string("rows") + extension).c_str());
            writeBytes(path, file);
            const ClassificationFile data(path, {0.0, 0.0}, 1);
            QCOMPARE(data.rows(), std::int64_t{4});
            QCOMPARE(data.labels(), (std::vector<std::string>{"neg", "pos"}));
            const auto dataset = data.dataset(Split::Train, Tokenizer::bytes(), 32);
            std::vector<std::string> seen;
            std::vector<std::int64_t> classes;
            for (std::int64_t i = 0; i < dataset->size(); ++i) {
                const Example example = dataset->get(i);
                seen.push_back(Tokenizer::bytes().decode(example.ids));
                classes.push_back(example.label);
            }
            texts.push_back(seen);
            labels.push_back(classes);
        }
    }
    for (std::size_t i = 1; i < texts.size(); ++i) {
        QCOMPARE(texts[i], texts[0]);
        QCOMPARE(labels[i], labels[0]);
    }
    QCOMPARE(texts[0].front(), std::string("a good film"));
    // Errors name the real line, whatever the line ends.
    writeBytes(fresh(dir, "bad.tsv"), "pos\tfine\rneg\tok\rno tab here\r");
    try {
        ClassificationFile(fresh(dir, "bad.tsv"), {0.0, 0.0}, 1);
        QFAIL("a row without a tab was accepted");
    } catch (const DataError& error) {
        QVERIFY2(std::string(error.what()).find("bad.tsv:3: no tab") != std::string::npos, error.what());
    }
    writeBytes(fresh(dir, "commas.txt"), "pos,fine\n");
    try {
        ClassificationFile(fresh(dir, "commas.txt"), {0.0, 0.0}, 1);
        QFAIL("a comma-separated .txt was accepted");
    } catch (const DataError& error) {
        QVERIFY2(std::string(error.what()).find(".csv") != std::string::npos, error.what());
    }
}

void TestRunInputs::classesStayWithTheRun()
{
    QTemporaryDir dir;
    const std::filesystem::path data = fresh(dir, "reviews.tsv");
    std::string rows;
    for (int i = 0; i < 20; ++i) {
        rows += i % 2 ? "pos" : "neg";
        rows += "\treview number ";
        rows += std::to_string(i);
        rows += '\n';
    }
    writeBytes(data, rows);
    {
        Trainer trainer(classifierOn(data), fresh(dir, "run"));
        std::atomic<bool> stop{false};
        trainer.run(stop);
    }
    QCOMPARE(readRunLabels(fresh(dir, "run")), (std::vector<std::string>{"neg", "pos"}));
    // The file gains a label that sorts first: sorting again would make "neg" class 1.
    writeBytes(data, "avg\tso-so\n" + rows);
    TrainerOptions resume;
    resume.resume = true;
    resume.steps = 4;
    try {
        Trainer again(classifierOn(data), fresh(dir, "run"), resume);
        QFAIL("a label the run does not know was accepted");
    } catch (const DataError& error) {
        const std::string text = error.what();
        QVERIFY2(text.find("reviews.tsv:1") != std::string::npos && text.find("\"avg\"") != std::string::npos
                     && text.find("labels.json") != std::string::npos,
                 error.what());
    }
    // Rows in another order, the same labels: the classes do not move.
    std::string reordered = "pos\tfirst now\n" + rows;
    writeBytes(data, reordered);
    ClassificationFile file(data, {0.0, 0.0}, 1, readRunLabels(fresh(dir, "run")));
    QCOMPARE(file.labels(), (std::vector<std::string>{"neg", "pos"}));
    QCOMPARE(file.dataset(Split::Train, Tokenizer::bytes(), 32)->get(0).label, std::int64_t{1});
    // Numbered classes: "03" is class 3; a number past the run's classes is an error.
    writeBytes(fresh(dir, "numbers.tsv"), "03\tthree\n1\tone\n");
    QCOMPARE(ClassificationFile(fresh(dir, "numbers.tsv"), {0.0, 0.0}, 1, {"0", "1", "2", "3"})
                 .dataset(Split::Train, Tokenizer::bytes(), 8)->get(0).label,
             std::int64_t{3});
    QVERIFY_THROWS_EXCEPTION(DataError, ClassificationFile(fresh(dir, "numbers.tsv"), {0.0, 0.0}, 1, {"0", "1"}));
    // A labels.json that is not a list of distinct names is an error naming it.
    writeBytes(fresh(dir, "run") / "labels.json", R"(["neg", "neg"])");
    try {
        readRunLabels(fresh(dir, "run"));
        QFAIL("duplicate class names were accepted");
    } catch (const DataError& error) {
        QVERIFY2(std::string(error.what()).find("labels.json") != std::string::npos, error.what());
    }
}

void TestRunInputs::stopBetweenMetricsLinesResumesTheSameLines()
{
    // Metrics every 4 steps, a checkpoint every 10, stopped right after the one at
    // step 10: the resumed run must write the uninterrupted run's lines.
    const std::string options = R"({"train": {"steps": 20, "log_every": 4}})";
    QTemporaryDir dir;
    std::atomic<bool> stop{false};
    {
        Trainer whole(test::tinyRun(options), fresh(dir, "whole"));
        whole.run(stop);
    }
    {
        struct StopAfterCheckpoint : TrainingObserver {
            std::atomic<bool>& flag;
            explicit StopAfterCheckpoint(std::atomic<bool>& f) : flag(f) {}
            void onMessage(const std::string&, const std::string& text) override
            {
                flag = flag || text.find("checkpoint step-00000010.pt") != std::string::npos;
            }
        };
        std::atomic<bool> interrupt{false};
        StopAfterCheckpoint stopAfter(interrupt);
        Trainer first(test::tinyRun(options), fresh(dir, "parts"));
        first.addObserver(&stopAfter);
        QCOMPARE(static_cast<int>(first.run(interrupt).outcome), static_cast<int>(TrainOutcome::Stopped));
        QCOMPARE(first.step(), std::int64_t{10});
    }
    {
        TrainerOptions resume;
        resume.resume = true;
        Trainer second(test::tinyRun(options), fresh(dir, "parts"), resume);
        second.run(stop);
    }
    const auto whole = metricLines(fresh(dir, "whole"), "train");
    const auto parts = metricLines(fresh(dir, "parts"), "train");
    QCOMPARE(whole.size(), std::size_t{5});  // steps 4, 8, 12, 16, 20
    QCOMPARE(parts.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
        QCOMPARE(parts[i]["step"].get<int>(), whole[i]["step"].get<int>());
        for (const char* key : {"loss", "task_loss", "accuracy", "learning_rate", "gradient_norm"})
            QCOMPARE(parts[i][key].get<double>(), whole[i][key].get<double>());
    }
}

void TestRunInputs::runTooLargeForTheMachineIsRefused()
{
    if (availableMemory(torch::kCPU) <= 0)
        QSKIP("this machine does not say how much memory it has");
    QTemporaryDir dir;
    writeBytes(fresh(dir, "text.txt"), std::string(4000, 'a'));
    // Logits of 32 x 512 tokens over 2^20 ids, with their gradient: 128 GiB.
    RunDocument run = byteModelOn(fresh(dir, "text.txt"));
    run.model.vocabSize = 1 << 20;
    run.model.maxLen = 512;
    run.train.batchSize = 32;
    run.train.device = "cpu";  // what is asked of the CPU, also where a GPU is present
    if (availableMemory(torch::kCPU) > std::int64_t{140} << 30)
        QSKIP("this machine has more than 128 GiB available");
    try {
        Trainer trainer(run, fresh(dir, "run"));
        QFAIL("a run of 128 GiB was accepted");
    } catch (const InsufficientMemory& error) {
        const std::string text = error.what();
        for (const char* part : {"GiB", "on cpu", "32 x 512", "train.batch_size"})
            QVERIFY2(text.find(part) != std::string::npos, error.what());
    }
    QVERIFY(!std::filesystem::exists(fresh(dir, "run") / "config.json"));
}

void TestRunInputs::listOpsMemoryByHand()
{
    ListOpsOptions options;
    options.maxLength = 100;
    // An offset (8 bytes), a label (1) and up to 100 token bytes per example.
    QCOMPARE(listOpsMemoryBytes(options, 1000), std::int64_t{109000});
    QCOMPARE(listOpsMemoryBytes(options, 0), std::int64_t{0});
    // An absurd count saturates instead of overflowing.
    QVERIFY(listOpsMemoryBytes(options, std::int64_t{1} << 60) > std::int64_t{1} << 62);
}

void TestRunInputs::longSetUpCanBeStopped()
{
    // 200000 ListOps examples take seconds to generate: a stop asked for meanwhile
    // ends construction at the next chunk, not after the whole set.
    QTemporaryDir dir;
    int asked = 0;
    TrainerOptions options;
    options.cancelled = [&] { return ++asked >= 2; };
    try {
        Trainer trainer(test::tinyRun(R"({"task": {"train_size": 200000}})"), fresh(dir, "run"), options);
        QFAIL("construction went on after the stop");
    } catch (const SetupCancelled& error) {
        QVERIFY2(std::string(error.what()).find("ListOps train split") != std::string::npos, error.what());
    }
    QCOMPARE(asked, 2);  // after 2 x 65536 examples, of 200000
}

QTEST_GUILESS_MAIN(TestRunInputs)
#include "tst_runinputs.moc"
