// Tests of run/Checkpoint's integrity checks and run/CheckpointDirectory: a
// damaged, cut short, foreign or non-finite checkpoint is refused naming the file
// (and the tensor), resume falls back past it saying so, train.keep_last never
// counts it, and a killed save's temporary files go at the next start.
#include "TestSupport.h"
#include "run/Checkpoint.h"
#include "run/CheckpointDirectory.h"
#include "run/RunDirectory.h"
#include "run/RunEvaluation.h"
#include "train/Trainer.h"

#include <QtTest>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

using namespace widelab;

namespace {

using test::flipMiddleByte;
using test::stateAt;

using test::tinyRun;

std::filesystem::path fresh(const QTemporaryDir& dir, const char* name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

std::string readBytes(const std::filesystem::path& file)
{
    std::ostringstream bytes;
    bytes << std::ifstream(file, std::ios::binary).rdbuf();
    return bytes.str();
}

void writeBytes(const std::filesystem::path& file, const std::string& bytes)
{
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

std::string randomBytes(std::size_t size, unsigned seed)
{
    std::mt19937 random(seed);
    std::string bytes(size, '\0');
    for (char& c : bytes)
        c = static_cast<char>(random() & 0xFF);
    return bytes;
}

void appendLittleEndian(std::string& bytes, std::uint64_t value)
{
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// `archive` followed by a valid trailer: what saveCheckpoint would write for it.
std::string withTrailer(const std::string& archive)
{
    std::string bytes = archive;
    bytes.append(kCheckpointMagic, 8);
    appendLittleEndian(bytes, archive.size());
    appendLittleEndian(bytes, checkpointHash(archive.data(), archive.size()));
    return bytes;
}

// The CheckpointError's message, or "" when loading succeeds.
template <typename Error = CheckpointError>
std::string failure(const std::filesystem::path& file, WideTransformerImpl& model,
                    torch::optim::Optimizer* optimizer = nullptr)
{
    try {
        loadCheckpoint(file, model, optimizer);
    } catch (const Error& error) {
        return error.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every message a trainer says, from its construction on.
struct Messages : TrainingObserver {
    std::vector<std::pair<std::string, std::string>> lines;
    void onMessage(const std::string& level, const std::string& text) override { lines.emplace_back(level, text); }
    // The messages of `level` that contain every one of `parts`.
    int count(const std::string& level, const std::vector<std::string>& parts) const
    {
        int n = 0;
        for (const auto& [l, text] : lines) {
            bool all = l == level;
            for (const auto& part : parts)
                all = all && contains(text, part);
            n += all ? 1 : 0;
        }
        return n;
    }
    std::string all() const
    {
        std::string text;
        for (const auto& [level, line] : lines)
            text += level + ": " + line + "\n";
        return text;
    }
};

// The parameters of a model, copied.
std::vector<torch::Tensor> weights(WideTransformerImpl& model)
{
    std::vector<torch::Tensor> copies;
    for (const auto& p : model.parameters())
        copies.push_back(p.detach().clone());
    return copies;
}

bool sameWeights(WideTransformerImpl& model, const std::vector<torch::Tensor>& expected)
{
    const auto parameters = model.parameters();
    for (std::size_t i = 0; i < parameters.size(); ++i)
        if (!torch::equal(parameters[i], expected[i]))
            return false;
    return true;
}

// A checkpoint archive of `model` whose configuration record is `config`:
// format 1 (before checksums) is the archive alone; format 2 adds the trailer,
// so that a damaged record sits under a valid checksum.
void saveArchive(const std::filesystem::path& file, WideTransformerImpl& model, const torch::optim::Optimizer& optimizer,
                 std::int64_t step, std::int64_t format, const std::string& config)
{
    torch::serialize::OutputArchive archive;
    archive.write("format", torch::tensor(format));
    archive.write("config", torch::from_blob(const_cast<char*>(config.data()),
                                             {static_cast<std::int64_t>(config.size())}, torch::kUInt8)
                                .clone());
    archive.write("step", torch::tensor(step));
    archive.write("sampler_position", torch::tensor(std::int64_t{0}));
    archive.write("best_validation_loss", torch::tensor(1.5, torch::kFloat64));
    archive.write("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
    for (const auto& item : model.named_parameters())
        archive.write("model/" + item.key(), item.value().detach());
    for (const auto& item : model.named_buffers())
        archive.write("model/" + item.key(), item.value().detach(), /*is_buffer=*/true);
    torch::serialize::OutputArchive optimizerArchive;
    optimizer.save(optimizerArchive);
    archive.write("optimizer", optimizerArchive);
    std::ostringstream bytes;
    archive.save_to(bytes);
    writeBytes(file, format == 1 ? bytes.str() : withTrailer(bytes.str()));
}

// What saveCheckpoint wrote before format 2: the archive alone, format 1.
void saveFormatOne(const std::filesystem::path& file, WideTransformerImpl& model, const torch::optim::Optimizer& optimizer,
                   std::int64_t step)
{
    saveArchive(file, model, optimizer, step, 1, model.config().toJson().dump());
}

// A tiny run of 20 steps with checkpoints at 10 and 20, both kept.
std::filesystem::path trainedRun(const QTemporaryDir& dir, const std::string& overrides = R"({"train": {"keep_last": 5}})")
{
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    Trainer(tinyRun(overrides), run).run(stop);
    return run;
}

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hashMatchesTheReferenceVectors();
    void savedFileEndsWithItsChecksum();
    void flippedByteIsRefusedNamingTheFile();
    void truncationIsRefusedNamingTheFile();
    void damagedArchiveIndexNamesTheFile();
    void randomBytesAreNotACheckpoint();
    void nonFiniteWeightsAreRefusedNamingTheTensor();
    void formatOneLoadsUnverified();
    void resumeFallsBackToThePreviousGoodCheckpoint();
    void readersFallBackWithoutChangingTheRun();
    void noReadableCheckpointIsAnErrorThatChangesNothing();
    void keepLastNeverCountsABadFile();
    void trainerNeverDeletesAGoodCheckpointForABadOne();
    void damagedConfigurationRecordFallsBack();
    void keysAddedSinceACheckpointTakeTheirDefaults();
    void checkpointOfAnEarlierWideLabLoads();
    void unreadableRunFilesSayWhy();
    void orphanTemporaryFilesGoAtTheNextStart();
    void temporaryNamesFitTheLongestFileName();
    void lowSpaceIsWarnedBeforeTheDiskIsFull();
};

void TestCheckpoint::hashMatchesTheReferenceVectors()
{
    // XXH64, seed 0: the values of the reference implementation (xxHash's own tests).
    auto hash = [](const char* text) { return checkpointHash(text, std::strlen(text)); };
    QCOMPARE(hash(""), std::uint64_t{0xEF46DB3751D8E999ULL});
    QCOMPARE(hash("a"), std::uint64_t{0xD24EC4F1A98C6E5BULL});
    QCOMPARE(hash("Call me Ishmael."), std::uint64_t{0x6D04390FC9D61A90ULL});                    // 16 bytes
    QCOMPARE(hash("Nobody inspects the spammish repetition"), std::uint64_t{0xFBCEA83C8A378BF1ULL});  // 39
    QCOMPARE(hash("Some years ago--never mind how long precisely-"), std::uint64_t{0x8F26F2B986AFDC52ULL});  // 46
    // Every byte counts, wherever it is.
    const std::string block = randomBytes(1000, 1);
    for (std::size_t at : {std::size_t{0}, std::size_t{31}, std::size_t{500}, std::size_t{999}}) {
        std::string changed = block;
        changed[at] = static_cast<char>(changed[at] ^ 0x01);
        QVERIFY(checkpointHash(changed.data(), changed.size()) != checkpointHash(block.data(), block.size()));
    }
}

void TestCheckpoint::savedFileEndsWithItsChecksum()
{
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path file = fresh(dir, "model.pt");
    saveCheckpoint(file, *model, optimizer, stateAt(7, 3, 0.5));
    const std::string bytes = readBytes(file);
    QVERIFY(bytes.size() > kCheckpointTrailerSize);
    const std::string archive = bytes.substr(0, bytes.size() - kCheckpointTrailerSize);
    QCOMPARE(bytes, withTrailer(archive));
    QCOMPARE(bytes.substr(0, 2), std::string("PK"));  // the LibTorch (zip) archive comes first

    WideTransformer other(tinyRun().model);
    const CheckpointState state = loadCheckpoint(file, *other, nullptr);
    QCOMPARE(state.step, std::int64_t{7});
    QVERIFY(state.verified);
    QVERIFY(sameWeights(*other, weights(*model)));
    QVERIFY(!checkpointIntegrity(file).has_value());
}

void TestCheckpoint::flippedByteIsRefusedNamingTheFile()
{
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path file = fresh(dir, "model.pt");
    saveCheckpoint(file, *model, optimizer, CheckpointState{});
    flipMiddleByte(file);

    WideTransformer target(tinyRun().model);
    const auto before = weights(*target);
    const std::string message = failure<CheckpointUnreadable>(file, *target);
    QVERIFY2(contains(message, file.string() + ": damaged"), message.c_str());
    QVERIFY2(contains(message, "checksum"), message.c_str());
    QVERIFY(sameWeights(*target, before));  // nothing of the damaged file reached the model
    QCOMPARE(checkpointIntegrity(file).value_or(""), message);

    // A changed trailer is damage too.
    saveCheckpoint(file, *model, optimizer, CheckpointState{});
    std::string bytes = readBytes(file);
    bytes[bytes.size() - 12] = static_cast<char>(bytes[bytes.size() - 12] ^ 0x40);  // the recorded length
    writeBytes(file, bytes);
    QVERIFY2(contains(failure<CheckpointUnreadable>(file, *target), file.string() + ": damaged"),
             failure(file, *target).c_str());
}

void TestCheckpoint::truncationIsRefusedNamingTheFile()
{
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path whole = fresh(dir, "whole.pt");
    saveCheckpoint(whole, *model, optimizer, CheckpointState{});
    const auto size = std::filesystem::file_size(whole);
    // Cut in the archive, in the trailer, and exactly at the trailer (a whole archive without it).
    for (const auto length : {size / 2, size - 5, size - kCheckpointTrailerSize, std::uintmax_t{0}}) {
        const std::filesystem::path cut = fresh(dir, "cut.pt");
        std::filesystem::copy_file(whole, cut, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::resize_file(cut, length);
        const std::string message = failure<CheckpointUnreadable>(cut, *model);
        QVERIFY2(contains(message, cut.string() + ": "), message.c_str());
        QVERIFY2(contains(message, "cut short") || contains(message, "cannot be read"), message.c_str());
        QVERIFY(checkpointIntegrity(cut).has_value());
    }
}

void TestCheckpoint::damagedArchiveIndexNamesTheFile()
{
    // The zip's central directory (its index, at the end of the archive) names
    // each record; renaming the tensor records there leaves a well-formed zip whose
    // records cannot be found. Behind a valid checksum (damage before the save),
    // the load must still fail naming the file, whatever LibTorch throws.
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path file = fresh(dir, "model.pt");
    saveCheckpoint(file, *model, optimizer, CheckpointState{});
    const std::string bytes = readBytes(file);
    std::string archive = bytes.substr(0, bytes.size() - kCheckpointTrailerSize);
    const std::size_t index = archive.find("PK\x01\x02");  // the first central directory entry
    QVERIFY(index != std::string::npos);
    int renamed = 0;
    for (std::size_t at = archive.find("/data/", index); at != std::string::npos; at = archive.find("/data/", at + 1)) {
        archive[at + 2] = 'X';  // "/dXta/": not a change of case, which the zip reader's lookup ignores
        ++renamed;
    }
    QVERIFY(renamed > 0);
    writeBytes(file, withTrailer(archive));
    const std::string message = failure<CheckpointUnreadable>(file, *model);
    QVERIFY2(contains(message, file.string() + ": cannot be read"), message.c_str());
    QVERIFY2(!message.ends_with(": "), message.c_str());  // and says what LibTorch found wrong
}

void TestCheckpoint::randomBytesAreNotACheckpoint()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::filesystem::create_directories(run / "checkpoints");
    const std::filesystem::path file = run / "checkpoints" / "step-00000010.pt";
    writeBytes(file, randomBytes(100000, 2));
    WideTransformer model(tinyRun().model);
    const std::string message = failure<CheckpointUnreadable>(file, *model);
    QVERIFY2(contains(message, file.string() + ": cannot be read"), message.c_str());
    // Random bytes that end like a trailer fail its checks instead.
    writeBytes(file, randomBytes(1000, 3) + std::string(kCheckpointMagic, 8) + randomBytes(16, 4));
    QVERIFY2(contains(failure<CheckpointUnreadable>(file, *model), file.string() + ": damaged"),
             failure(file, *model).c_str());
    // A valid checksum around bytes that are no archive.
    writeBytes(file, withTrailer(randomBytes(5000, 5)));
    QVERIFY2(contains(failure<CheckpointUnreadable>(file, *model), file.string() + ": cannot be read"),
             failure(file, *model).c_str());
    QVERIFY(checkpointIntegrity(file).has_value());
}

void TestCheckpoint::nonFiniteWeightsAreRefusedNamingTheTensor()
{
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    const auto named = model->named_parameters();
    const std::string name = named.keys()[named.size() / 2];
    {
        torch::NoGradGuard noGrad;
        named[name].view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
    }
    const std::filesystem::path file = fresh(dir, "nan.pt");
    saveCheckpoint(file, *model, optimizer, CheckpointState{});
    QVERIFY(!checkpointIntegrity(file).has_value());  // its bytes are as written: the weights are what is wrong

    WideTransformer target(tinyRun().model);
    const auto before = weights(*target);
    const std::string message = failure<CheckpointUnreadable>(file, *target);
    QVERIFY2(contains(message, file.string() + ": model/" + name + " holds 1 NaN"), message.c_str());
    QVERIFY(sameWeights(*target, before));

    // An infinite momentum in the optimizer's state, by the parameter it belongs to.
    WideTransformer finite(tinyRun().model);
    torch::optim::SGD momentum(finite->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    for (auto& p : finite->parameters())
        p.mutable_grad() = torch::ones_like(p);
    momentum.step();
    const std::string first = finite->named_parameters().keys().front();
    {
        torch::NoGradGuard noGrad;
        auto& state = static_cast<torch::optim::SGDParamState&>(*momentum.state().begin()->second);  // one parameter's
        state.momentum_buffer().view(-1)[0] = std::numeric_limits<float>::infinity();
    }
    const std::filesystem::path stateFile = fresh(dir, "state.pt");
    saveCheckpoint(stateFile, *finite, momentum, CheckpointState{});
    WideTransformer target2(tinyRun().model);
    torch::optim::SGD optimizer2(target2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    const std::string stateMessage = failure<CheckpointUnreadable>(stateFile, *target2, &optimizer2);
    QVERIFY2(contains(stateMessage, stateFile.string() + ": optimizer state momentum_buffer of model/"),
             stateMessage.c_str());
    QVERIFY2(contains(stateMessage, "1 infinite"), stateMessage.c_str());
    QVERIFY(failure(stateFile, *target2).empty());  // the weights alone are fine
}

void TestCheckpoint::formatOneLoadsUnverified()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::filesystem::create_directories(run / "checkpoints");
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path file = run / "checkpoints" / "step-00000004.pt";
    saveFormatOne(file, *model, optimizer, 4);

    WideTransformer target(tinyRun().model);
    const CheckpointState state = loadCheckpoint(file, *target, nullptr);
    QCOMPARE(state.step, std::int64_t{4});
    QVERIFY(!state.verified);
    QVERIFY(sameWeights(*target, weights(*model)));
    QVERIFY(!checkpointIntegrity(file).has_value());

    std::vector<std::string> warnings;
    const LoadedCheckpoint loaded = CheckpointDirectory(run, false).load(
        "latest", *target, nullptr, [&](const std::string& text) { warnings.push_back(text); });
    QCOMPARE(loaded.file, file);
    QCOMPARE(warnings.size(), std::size_t{1});
    QVERIFY2(contains(warnings[0], file.string() + ": a format-1 checkpoint") && contains(warnings[0], "not verified"),
             warnings[0].c_str());

    // A format-2 archive without its trailer is one cut short, not a format-1 file.
    const std::filesystem::path current = fresh(dir, "current.pt");
    saveCheckpoint(current, *model, optimizer, CheckpointState{});
    std::filesystem::resize_file(current, std::filesystem::file_size(current) - kCheckpointTrailerSize);
    const std::string message = failure<CheckpointUnreadable>(current, *target);
    QVERIFY2(contains(message, current.string() + ": its checksum trailer is missing"), message.c_str());
}

void TestCheckpoint::resumeFallsBackToThePreviousGoodCheckpoint()
{
    QTemporaryDir dir;
    const std::filesystem::path run = trainedRun(dir);
    const std::filesystem::path checkpoints = run / "checkpoints";
    flipMiddleByte(checkpoints / "step-00000020.pt");

    Messages messages;
    TrainerOptions resume;
    resume.resume = true;
    resume.observers = {&messages};
    {
        Trainer resumed(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
        QCOMPARE(resumed.step(), std::int64_t{10});
    }
    // Said while the trainer was being constructed, to the observers given with it.
    QVERIFY2(messages.count("warning", {(checkpoints / "step-00000020.pt").string() + ": damaged",
                                        "trying step-00000010.pt"}) == 1,
             messages.all().c_str());
    QVERIFY2(messages.count("warning", {"step-00000020.pt set aside as step-00000020.pt.unreadable"}) == 1,
             messages.all().c_str());
    QVERIFY2(messages.count("info", {"resumed from step-00000010.pt at step 10"}) == 1, messages.all().c_str());
    // The damaged file is kept aside, not deleted, and no longer a step checkpoint.
    QVERIFY(!std::filesystem::exists(checkpoints / "step-00000020.pt"));
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000020.pt.unreadable"));

    // Asked for by name, a damaged checkpoint is an error naming it, not a substitute.
    std::filesystem::copy_file(checkpoints / "step-00000010.pt", checkpoints / "step-00000015.pt");
    flipMiddleByte(checkpoints / "step-00000015.pt");
    resume.checkpoint = "step-00000015.pt";
    try {
        Trainer named(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
        QFAIL("a damaged checkpoint asked for by name was loaded");
    } catch (const CheckpointUnreadable& error) {
        QVERIFY2(contains(error.what(), (checkpoints / "step-00000015.pt").string() + ": damaged"), error.what());
    }
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000015.pt"));  // left where it is
}

void TestCheckpoint::readersFallBackWithoutChangingTheRun()
{
    QTemporaryDir dir;
    const std::filesystem::path run = trainedRun(dir);
    const std::filesystem::path latest = run / "checkpoints" / "step-00000020.pt";
    std::filesystem::resize_file(latest, std::filesystem::file_size(latest) / 3);
    const std::string orphan = "step-00000030.pt.tmp-999999-0";
    writeBytes(run / "checkpoints" / orphan, "partial");

    // eval: a read-only trainer.
    Messages messages;
    TrainerOptions readOnly;
    readOnly.resume = true;
    readOnly.readOnly = true;
    readOnly.observers = {&messages};
    {
        Trainer evaluator(tinyRun(R"({"train": {"keep_last": 5}})"), run, readOnly);
        QCOMPARE(evaluator.step(), std::int64_t{10});
    }
    QVERIFY2(messages.count("warning", {latest.string() + ": cannot be read", "trying step-00000010.pt"}) == 1,
             messages.all().c_str());
    // inspect, export: openRun.
    const OpenedRun opened = openRun(run);
    QCOMPARE(opened.state.step, std::int64_t{10});
    QCOMPARE(opened.checkpoint, run / "checkpoints" / "step-00000010.pt");
    QCOMPARE(opened.warnings.size(), std::size_t{1});
    QVERIFY2(contains(opened.warnings[0], latest.string() + ": cannot be read"), opened.warnings[0].c_str());
    // Neither set anything aside nor removed anything.
    QVERIFY(std::filesystem::exists(latest));
    QVERIFY(!std::filesystem::exists(latest.string() + ".unreadable"));
    QVERIFY(std::filesystem::exists(run / "checkpoints" / orphan));
    // Asked for by name: an error naming it.
    try {
        openRun(run, "step-00000020.pt");
        QFAIL("a truncated checkpoint asked for by name was opened");
    } catch (const CheckpointUnreadable& error) {
        QVERIFY2(contains(error.what(), latest.string() + ": "), error.what());
    }
}

void TestCheckpoint::noReadableCheckpointIsAnErrorThatChangesNothing()
{
    QTemporaryDir dir;
    const std::filesystem::path run = trainedRun(dir);
    const std::filesystem::path checkpoints = run / "checkpoints";
    flipMiddleByte(checkpoints / "step-00000010.pt");
    flipMiddleByte(checkpoints / "step-00000020.pt");
    Messages messages;
    TrainerOptions resume;
    resume.resume = true;
    resume.observers = {&messages};
    try {
        Trainer resumed(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
        QFAIL("a run without a readable checkpoint resumed");
    } catch (const CheckpointUnreadable& error) {
        QVERIFY2(contains(error.what(), (checkpoints / "step-00000010.pt").string() + ": damaged"), error.what());
        QVERIFY2(contains(error.what(), "none of the run's 2 step checkpoint(s) can be read"), error.what());
    }
    QCOMPARE(messages.count("warning", {(checkpoints / "step-00000020.pt").string() + ": damaged"}), 1);
    // A problem with every file may be this machine's: none is set aside.
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000010.pt"));
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000020.pt"));
}

void TestCheckpoint::keepLastNeverCountsABadFile()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::filesystem::create_directories(run / "checkpoints");
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    CheckpointDirectory directory(run, /*mayWrite=*/true);
    for (std::int64_t step : {10, 20})
        saveCheckpoint(directory.stepFile(step), *model, optimizer, stateAt(step));
    // Newer by name than both: a damaged copy and random bytes.
    std::filesystem::copy_file(directory.stepFile(20), directory.stepFile(30));
    flipMiddleByte(directory.stepFile(30));
    writeBytes(directory.stepFile(40), randomBytes(4096, 6));

    std::vector<std::string> warnings;
    const auto warn = [&](const std::string& text) { warnings.push_back(text); };
    QVERIFY(directory.prune(2, warn).empty());  // the two intact ones are the two kept
    QVERIFY(std::filesystem::exists(directory.stepFile(10)));
    QVERIFY(std::filesystem::exists(directory.stepFile(20)));
    QCOMPARE(warnings.size(), std::size_t{2});
    for (const std::int64_t step : {30, 40}) {
        const std::string name = directory.stepFile(step).filename().string();
        QVERIFY(!std::filesystem::exists(directory.stepFile(step)));
        QVERIFY(std::filesystem::exists(directory.path() / (name + ".unreadable")));
        QVERIFY(std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) {
            return contains(w, directory.stepFile(step).string()) && contains(w, "set aside as " + name + ".unreadable")
                   && contains(w, "nor count it toward train.keep_last");
        }));
    }
    QCOMPARE(directory.stepFiles().size(), std::size_t{2});

    // Another bad file by the same name later is set aside beside the first.
    writeBytes(directory.stepFile(40), randomBytes(4096, 7));
    saveCheckpoint(directory.stepFile(50), *model, optimizer, stateAt(50));
    directory.written(directory.stepFile(50));
    const auto removed = directory.prune(2, warn);
    QCOMPARE(removed, std::vector<std::filesystem::path>{directory.stepFile(10)});
    QVERIFY(std::filesystem::exists(directory.path() / "step-00000040.pt.unreadable-2"));
    QCOMPARE(directory.stepFiles(), (std::vector<std::filesystem::path>{directory.stepFile(20), directory.stepFile(50)}));

    // A reader prunes nothing.
    CheckpointDirectory reader(run, /*mayWrite=*/false);
    QVERIFY(reader.prune(1, warn).empty());
    QCOMPARE(reader.stepFiles().size(), std::size_t{2});
}

void TestCheckpoint::trainerNeverDeletesAGoodCheckpointForABadOne()
{
    // keep_last 2 with a damaged step file newer by name than the one resumed from:
    // it is never one of the two kept, so a good one goes only for a newer good one.
    QTemporaryDir dir;
    const std::string overrides = R"({"train": {"keep_last": 2, "steps": 40}})";
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    {
        TrainerOptions twenty;
        twenty.steps = 20;
        Trainer(tinyRun(overrides), run, twenty).run(stop);
    }
    const std::filesystem::path checkpoints = run / "checkpoints";
    std::filesystem::copy_file(checkpoints / "step-00000020.pt", checkpoints / "step-00000025.pt");
    flipMiddleByte(checkpoints / "step-00000025.pt");

    Messages messages;
    TrainerOptions resume;
    resume.resume = true;
    resume.checkpoint = "step-00000020.pt";
    resume.observers = {&messages};
    resume.steps = 30;
    Trainer resumed(tinyRun(overrides), run, resume);
    QCOMPARE(resumed.step(), std::int64_t{20});
    QCOMPARE(resumed.run(stop).outcome, TrainOutcome::Completed);
    // After the save at step 30 the two kept are 30 and 20; the bad 25 took no place.
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000030.pt"));
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000020.pt"));
    QVERIFY(!std::filesystem::exists(checkpoints / "step-00000010.pt"));
    QVERIFY(std::filesystem::exists(checkpoints / "step-00000025.pt.unreadable"));
    QCOMPARE(messages.count("warning", {(checkpoints / "step-00000025.pt").string() + ": damaged", "set aside"}), 1);
}

// A configuration record that is not a model (under a valid checksum) is damage,
// as a flipped byte is: "latest" falls back to the checkpoint before it.
void TestCheckpoint::damagedConfigurationRecordFallsBack()
{
    for (const std::string& record : {std::string(R"({"layers": 2, "heads")"), std::string(R"({"layers": 0})"),
                                      std::string("[]")}) {
        QTemporaryDir dir;
        const std::filesystem::path run = trainedRun(dir);
        const std::filesystem::path newest = run / "checkpoints" / "step-00000020.pt";
        WideTransformer model(tinyRun().model);
        torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
        saveArchive(newest, *model, optimizer, 20, 2, record);
        QVERIFY(!checkpointIntegrity(newest).has_value());  // the checksum vouches for the bytes

        const std::string message = failure<CheckpointUnreadable>(newest, *model);
        QVERIFY2(contains(message, newest.string() + ": damaged: its configuration record"), message.c_str());
        const OpenedRun opened = openRun(run);
        QCOMPARE(opened.state.step, std::int64_t{10});
        QCOMPARE(opened.warnings.size(), std::size_t{1});
        QVERIFY2(contains(opened.warnings[0], "its configuration record") && contains(opened.warnings[0], "trying step-00000010.pt"),
                 opened.warnings[0].c_str());
    }
}

// A checkpoint written before a key existed lacks it: the key takes its default,
// and only a value that differs from this run's is another architecture.
void TestCheckpoint::keysAddedSinceACheckpointTakeTheirDefaults()
{
    QTemporaryDir dir;
    WideTransformer model(tinyRun().model);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    nlohmann::json older = model->config().toJson();
    QCOMPARE(older.at("router_z_loss_weight"), nlohmann::json(0.0));
    QCOMPARE(older.at("attention"), nlohmann::json("full"));
    older.erase("router_z_loss_weight");
    older.erase("attention");
    const std::filesystem::path file = fresh(dir, "older.pt");
    saveArchive(file, *model, optimizer, 7, 2, older.dump());
    WideTransformer target(tinyRun().model);
    QCOMPARE(loadCheckpoint(file, *target, nullptr).step, std::int64_t{7});
    QVERIFY(sameWeights(*target, weights(*model)));

    // Absent from the checkpoint, so 0 there: a run asking for 0.01 is another model.
    WideTransformer other(tinyRun(R"({"model": {"router_z_loss_weight": 0.01}})").model);
    const std::string message = failure(file, *other);
    QVERIFY2(contains(message, "another architecture: model.router_z_loss_weight (checkpoint 0.0, now 0.01)"),
             message.c_str());
}

// tests/core/fixtures/earlier-widelab: a run that widelab-cli train wrote at commit
// 63b608b, before model.router_z_loss_weight existed (its README). It opens, and
// its validation loss is the one that earlier WideLab recorded.
void TestCheckpoint::checkpointOfAnEarlierWideLabLoads()
{
    const std::filesystem::path fixture = std::filesystem::path(WIDELAB_TEST_FIXTURES) / "earlier-widelab";
    const std::string recorded = [&] {
        torch::serialize::InputArchive archive;
        archive.load_from((fixture / "checkpoints" / "step-00000004.pt").string());
        torch::Tensor config;
        archive.read("config", config);
        return std::string(static_cast<const char*>(config.data_ptr()), static_cast<std::size_t>(config.numel()));
    }();
    QVERIFY2(contains(recorded, "\"experts\":2") && !contains(recorded, "router_z_loss_weight"), recorded.c_str());
    const OpenedRun opened = openRun(fixture);
    QCOMPARE(opened.state.step, std::int64_t{4});
    QVERIFY(opened.state.verified);
    QVERIFY2(opened.warnings.empty(), opened.warnings.empty() ? "" : opened.warnings.front().c_str());
    QCOMPARE(opened.model->config().routerZLossWeight, 0.0);

    const std::vector<nlohmann::json> evals = test::metricLines(fixture, "eval");
    QCOMPARE(evals.size(), std::size_t{1});
    const EvaluationResult result = evaluateRun(fixture, Split::Validation).result;
    QCOMPARE(result.step, std::int64_t{4});
    // Within float rounding of another LibTorch (the fixture is 1.13's); another
    // model's weights would be off by far more.
    QVERIFY2(std::abs(result.loss - evals[0].at("loss").get<double>()) < 1e-4,
             qPrintable(QString("loss %1, recorded %2").arg(result.loss).arg(evals[0].at("loss").get<double>())));
}

// A file that cannot be read says why, rather than passing for a missing or
// malformed one (as root, whom no permission stops, a folder where a file should
// be and a file where a folder should be stand in for a denied read).
void TestCheckpoint::unreadableRunFilesSayWhy()
{
    QTemporaryDir dir;
    const std::filesystem::path run = trainedRun(dir);
    const std::filesystem::path checkpoints = run / "checkpoints";
    std::filesystem::rename(checkpoints, run / "elsewhere");
    writeBytes(checkpoints, "not a folder");
    try {
        openRun(run);
        QFAIL("a checkpoints/ that cannot be listed passed for a run without checkpoints");
    } catch (const CheckpointError& error) {
        QVERIFY2(contains(error.what(), checkpoints.string() + ": cannot list the checkpoints: Not a directory (ENOTDIR)"),
                 error.what());
    }
    const std::filesystem::path config = run / "config.json";
    std::filesystem::remove(config);
    std::filesystem::create_directory(config);
    try {
        readRunDocument(run);
        QFAIL("a config.json that cannot be read was read");
    } catch (const DataError& error) {
        QVERIFY2(contains(error.what(), config.string() + ": cannot be read: Is a directory (EISDIR)"), error.what());
    }
}

void TestCheckpoint::orphanTemporaryFilesGoAtTheNextStart()
{
    QTemporaryDir dir;
    const std::filesystem::path run = trainedRun(dir);
    const std::filesystem::path checkpoints = run / "checkpoints";
    const std::vector<std::string> orphans = {"best.pt.tmp-999998-3", "step-00000030.pt.tmp-999999-0"};
    for (const auto& name : orphans)
        writeBytes(checkpoints / name, randomBytes(100, 8));
    const std::string own = "step-00000040.pt.tmp-" + std::to_string(::getpid()) + "-0";  // this process is saving it
    writeBytes(checkpoints / own, "in progress");
    // And in the run's own folder (config.json, status.json, ...), names cut to fit included.
    const std::vector<std::string> rootOrphans = {"config.json.tmp-999997-1", "status.json.tmp-999996-0",
                                                  std::string(230, 'n') + ".tmp-999995-2"};
    for (const auto& name : rootOrphans)
        writeBytes(run / name, "partial");

    Messages messages;
    TrainerOptions resume;
    resume.resume = true;
    resume.observers = {&messages};
    Trainer resumed(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
    for (const auto& name : orphans) {
        QVERIFY2(!std::filesystem::exists(checkpoints / name), name.c_str());
        QCOMPARE(messages.count("info", {"removed checkpoints/" + name}), 1);
    }
    for (const auto& name : rootOrphans) {
        QVERIFY2(!std::filesystem::exists(run / name), name.c_str());
        QCOMPARE(messages.count("info", {"removed " + name + ", left by a write that was interrupted"}), 1);
    }
    QVERIFY(std::filesystem::exists(run / "config.json"));
    QVERIFY(std::filesystem::exists(checkpoints / own));
    QCOMPARE(resumed.step(), std::int64_t{20});
}

// writeFileAtomically's temporary name is cut to fit, so any name the file system
// takes can be written.
void TestCheckpoint::temporaryNamesFitTheLongestFileName()
{
    QTemporaryDir dir;
    const std::filesystem::path longest = fresh(dir, std::string(255, 'n').c_str());
    writeFileAtomically(longest, "255 bytes of name");
    QCOMPARE(readBytes(longest), std::string("255 bytes of name"));
    QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                           std::filesystem::directory_iterator()),
             std::ptrdiff_t{1});  // no temporary left beside it
}

// A save needs a whole new file beside the old ones: with room for fewer than
// two more, the trainer warns, naming the folder and both sizes.
void TestCheckpoint::lowSpaceIsWarnedBeforeTheDiskIsFull()
{
    constexpr std::uintmax_t MiB = 1024 * 1024;
    QCOMPARE(lowSpaceText("/runs/a/checkpoints", 2 * 300 * MiB, 300 * MiB), std::nullopt);
    const auto warning = lowSpaceText("/runs/a/checkpoints", 2 * 300 * MiB - 1, 300 * MiB);
    QVERIFY(warning.has_value());
    QVERIFY2(warning->find("/runs/a/checkpoints has 600.0 MiB free") != std::string::npos, warning->c_str());
    QVERIFY2(warning->find("two more checkpoints of 300.0 MiB") != std::string::npos, warning->c_str());
    // This machine's own disk: a checkpoint of its whole size never fits twice.
    QTemporaryDir dir;
    const CheckpointDirectory checkpoints(dir.path().toStdString(), true);
    std::filesystem::create_directories(checkpoints.path());
    const auto space = std::filesystem::space(dir.path().toStdString());
    QVERIFY(checkpoints.lowSpaceWarning(space.capacity).has_value());
    QCOMPARE(checkpoints.lowSpaceWarning(1), std::nullopt);
}

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "tst_checkpoint.moc"
