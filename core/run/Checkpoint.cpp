#include "Checkpoint.h"

#include "train/OptimizerState.h"
#include "vocab/JsonText.h"
#include "runtime/SystemError.h"

#include <torch/serialize.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

namespace widelab {
namespace {

// 1: the archive alone. 2: the archive followed by the checksum trailer.
constexpr std::int64_t kFormat = 2;
constexpr std::int64_t kLegacyFormat = 1;

// A little-endian word from `bytes`, whatever the machine's byte order (the
// compiler makes one load of it where the machine is little-endian).
template <typename Word>
Word readLittleEndian(const unsigned char* bytes)
{
    Word value = 0;
    for (std::size_t i = 0; i < sizeof(Word); ++i)
        value |= static_cast<Word>(bytes[i]) << (8 * i);
    return value;
}

void appendLittleEndian64(std::string& bytes, std::uint64_t value)
{
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::string readWholeFile(const std::filesystem::path& file)
{
    try {
        return readFileBytes(file);
    } catch (const FileError& error) {
        throw CheckpointUnreadable(error.what());
    }
}

// The archive's bytes within a checkpoint file's, and whether a trailer vouched
// for them. Throws CheckpointUnreadable when the trailer and the bytes disagree.
struct ArchiveBytes {
    std::size_t size = 0;
    bool verified = false;
};

ArchiveBytes checkTrailer(const std::filesystem::path& file, const std::string& bytes)
{
    const std::size_t magicSize = sizeof kCheckpointMagic - 1;
    if (bytes.size() < kCheckpointTrailerSize
        || bytes.compare(bytes.size() - kCheckpointTrailerSize, magicSize, kCheckpointMagic) != 0)
        return {bytes.size(), false};  // format 1, or a file cut short: the archive decides
    const auto* trailer = reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size() - kCheckpointTrailerSize;
    const std::size_t size = bytes.size() - kCheckpointTrailerSize;
    const std::uint64_t recordedSize = readLittleEndian<std::uint64_t>(trailer + magicSize);
    if (recordedSize != size)
        throw CheckpointUnreadable(file.string() + ": damaged: its trailer records " + std::to_string(recordedSize)
                                   + " bytes of archive, the file holds " + std::to_string(size));
    if (readLittleEndian<std::uint64_t>(trailer + magicSize + 8) != checkpointHash(bytes.data(), size))
        throw CheckpointUnreadable(file.string() + ": damaged: its checksum does not match its contents "
                                                   "(a changed or lost block: a failing disk, a bad copy)");
    return {size, true};
}

void syncPath(const std::filesystem::path& path, bool directory)
{
    const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0)
        throw CheckpointError(path.string() + ": cannot open to flush it to disk");
    const int result = ::fsync(fd);
    ::close(fd);
    if (result != 0)
        throw CheckpointError(path.string() + ": cannot flush it to disk");
}

torch::Tensor textTensor(const std::string& text)
{
    return torch::from_blob(const_cast<char*>(text.data()), {static_cast<std::int64_t>(text.size())}, torch::kUInt8)
        .clone();
}

std::string tensorText(const torch::Tensor& tensor)
{
    const torch::Tensor bytes = tensor.to(torch::kCPU).contiguous();
    return {reinterpret_cast<const char*>(bytes.data_ptr<std::uint8_t>()), static_cast<std::size_t>(bytes.numel())};
}

// The first line that says something (a TorchScript error starts with an empty one).
std::string firstLine(const std::string& text)
{
    std::size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string::npos)
        return "(no detail)";
    return text.substr(start, text.find('\n', start) - start);
}

// The model configuration a checkpoint records, every key resolved as this
// WideLab reads it: keys added since the checkpoint was written take their
// defaults, so only a real difference of architecture remains. A record that is
// not a model configuration is damage (CheckpointUnreadable: "latest" falls
// back past it), not another architecture.
nlohmann::json savedConfiguration(const std::filesystem::path& file, const std::string& text)
{
    const auto json = tryParseJsonText(text);
    if (!json || !json->is_object())
        throw CheckpointUnreadable(file.string() + ": damaged: its configuration record is not a JSON object");
    std::vector<ConfigIssue> issues;
    const ModelConfig config = ModelConfig::fromJson(*json, issues);
    if (!issues.empty())
        throw CheckpointUnreadable(file.string() + ": damaged: its configuration record is not a valid model ("
                                   + issues.front().text() + ")");
    return config.toJson();
}

// The keys whose values differ between two model configurations.
std::string differences(const nlohmann::json& saved, const nlohmann::json& current)
{
    std::string list;
    for (const auto& item : current.items()) {
        const auto it = saved.find(item.key());
        if (it == saved.end() || *it != item.value())
            list += (list.empty() ? "" : ", ") + ("model." + item.key()) + " (checkpoint "
                    + (it == saved.end() ? std::string("absent") : it->dump()) + ", now " + item.value().dump() + ")";
    }
    return list;
}

// Optimiser state loads on the CPU; each tensor moves to its parameter's device.
void moveStateToParameters(torch::optim::Optimizer& optimizer)
{
    for (const auto& group : optimizer.param_groups())
        for (const auto& p : group.params())
            for (const StateTensor& state : optimizerStateTensors(optimizer, p))
                if (state.tensor->defined())
                    *state.tensor = state.tensor->to(p.device());
}

c10::Device modelDevice(WideTransformerImpl& model)
{
    const auto parameters = model.parameters();
    return parameters.empty() ? c10::Device(c10::kCPU) : parameters.front().device();
}

// A handle to the device's default generator (shared with every other handle).
at::Generator cudaGenerator(const c10::Device& device)
{
    return at::globalContext().defaultGenerator(device);
}

void restoreGenerator(at::Generator generator, const torch::Tensor& state)
{
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
}

}  // namespace

namespace {

// The file systems WideLab runs on (ext4, xfs, btrfs, tmpfs) allow names of up to
// 255 bytes; a temporary's name is cut to fit there, keeping its suffix.
constexpr std::size_t kLongestName = 255;

// NAME.tmp-PID-N beside `file`, NAME cut when the whole would not fit.
std::filesystem::path temporaryFor(const std::filesystem::path& file)
{
    static std::atomic<std::uint64_t> counter{0};
    const std::string suffix = ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    std::string name = file.filename().string();
    if (name.size() + suffix.size() > kLongestName)
        name.resize(kLongestName - suffix.size());
    return file.parent_path() / (name + suffix);
}

}  // namespace

std::vector<std::string> removeInterruptedWrites(const std::filesystem::path& folder)
{
    // temporaryFor's names, from another process: this one's may be being written.
    static const std::regex pattern(R"(.+\.tmp-(\d+)-\d+)");
    const std::string self = std::to_string(::getpid());
    std::vector<std::string> removed;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::string name = entry.path().filename().string();
        std::smatch match;
        if (!std::regex_match(name, match, pattern) || match[1] == self)
            continue;
        std::error_code ignored;
        if (entry.is_regular_file(ignored) && std::filesystem::remove(entry.path(), ignored))
            removed.push_back(name);
    }
    std::sort(removed.begin(), removed.end());
    return removed;
}

std::filesystem::path stageFile(const std::filesystem::path& file, const std::string& bytes)
{
    const std::filesystem::path temporary = temporaryFor(file);
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int error = fd < 0 ? errno : writeAll(fd, bytes);
    if (error == 0 && ::fsync(fd) != 0)
        error = errno;
    if (fd >= 0 && ::close(fd) != 0 && error == 0)
        error = errno;
    if (error != 0) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw CheckpointError(file.string() + ": cannot write: " + systemReason(error));
    }
    return temporary;
}

void commitStagedFile(const std::filesystem::path& temporary, const std::filesystem::path& file)
{
    if (::rename(temporary.c_str(), file.c_str()) != 0) {
        const int error = errno;
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw CheckpointError(file.string() + ": cannot replace: " + systemReason(error));
    }
    syncPath(file.parent_path().empty() ? "." : file.parent_path(), true);
}

void writeFileAtomically(const std::filesystem::path& file, const std::string& bytes)
{
    commitStagedFile(stageFile(file, bytes), file);
}

void saveCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                    const torch::optim::Optimizer& optimizer, const CheckpointState& state)
{
    torch::serialize::OutputArchive archive;
    archive.write("format", torch::tensor(kFormat));
    archive.write("config", textTensor(model.config().toJson().dump()));
    archive.write("step", torch::tensor(state.step));
    archive.write("sampler_position", torch::tensor(state.samplerPosition));
    archive.write("best_validation_loss", torch::tensor(state.bestValidationLoss, torch::kFloat64));
    archive.write("best_validation_accuracy", torch::tensor(state.bestValidationAccuracy, torch::kFloat64));
    archive.write("schedule_steps", torch::tensor(state.scheduleSteps));
    archive.write("interval_sums", torch::tensor(state.intervalSums, torch::kFloat64));
    archive.write("interval_steps", torch::tensor(state.intervalSteps));
    archive.write("world_size", torch::tensor(state.worldSize));
    archive.write("evaluation_pending", torch::tensor(static_cast<std::int64_t>(state.evaluationPending ? 1 : 0)));
    archive.write("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
    if (const auto device = modelDevice(model); device.is_cuda())  // dropout and router noise draw on the GPU
        archive.write("rng_cuda", cudaGenerator(device).get_state());
    for (const auto& item : model.named_parameters())
        archive.write("model/" + item.key(), item.value().detach().to(torch::kCPU));
    for (const auto& item : model.named_buffers())
        archive.write("model/" + item.key(), item.value().detach().to(torch::kCPU), /*is_buffer=*/true);
    torch::serialize::OutputArchive optimizerArchive;
    optimizer.save(optimizerArchive);
    archive.write("optimizer", optimizerArchive);

    std::ostringstream stream;
    archive.save_to(stream);
    std::string bytes = stream.str();
    const std::uint64_t hash = checkpointHash(bytes.data(), bytes.size());
    const std::uint64_t size = bytes.size();
    bytes.append(kCheckpointMagic, sizeof kCheckpointMagic - 1);
    appendLittleEndian64(bytes, size);
    appendLittleEndian64(bytes, hash);
    writeFileAtomically(file, bytes);
}

std::uint64_t checkpointHash(const void* data, std::size_t size)
{
    // XXH64 as its specification gives it (github.com/Cyan4973/xxHash, doc/xxhash_spec.md).
    constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ULL, p2 = 0xC2B2AE3D27D4EB4FULL, p3 = 0x165667B19E3779F9ULL,
                            p4 = 0x85EBCA77C2B2AE63ULL, p5 = 0x27D4EB2F165667C5ULL;
    const auto round = [&](std::uint64_t accumulator, std::uint64_t lane) {
        return std::rotl(accumulator + lane * p2, 31) * p1;
    };
    const auto merge = [&](std::uint64_t hash, std::uint64_t accumulator) {
        return (hash ^ round(0, accumulator)) * p1 + p4;
    };
    const auto* p = static_cast<const unsigned char*>(data);
    const unsigned char* const end = p + size;
    std::uint64_t hash;
    if (size >= 32) {
        std::uint64_t v1 = p1 + p2, v2 = p2, v3 = 0, v4 = 0 - p1;
        for (; end - p >= 32; p += 32) {
            v1 = round(v1, readLittleEndian<std::uint64_t>(p));
            v2 = round(v2, readLittleEndian<std::uint64_t>(p + 8));
            v3 = round(v3, readLittleEndian<std::uint64_t>(p + 16));
            v4 = round(v4, readLittleEndian<std::uint64_t>(p + 24));
        }
        hash = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
        hash = merge(merge(merge(merge(hash, v1), v2), v3), v4);
    } else {
        hash = p5;
    }
    hash += size;
    for (; end - p >= 8; p += 8)
        hash = std::rotl(hash ^ round(0, readLittleEndian<std::uint64_t>(p)), 27) * p1 + p4;
    if (end - p >= 4) {
        hash = std::rotl(hash ^ (readLittleEndian<std::uint32_t>(p) * p1), 23) * p2 + p3;
        p += 4;
    }
    for (; p < end; ++p)
        hash = std::rotl(hash ^ (*p * p5), 11) * p1;
    hash = (hash ^ (hash >> 33)) * p2;
    hash = (hash ^ (hash >> 29)) * p3;
    return hash ^ (hash >> 32);
}

namespace {

// LibTorch's and the standard library's errors while reading an archive, as
// CheckpointUnreadable naming the file; a CheckpointError passes unchanged.
template <typename Read>
auto readingArchive(const std::filesystem::path& file, const std::string& what, Read read)
{
    try {
        return read();
    } catch (const CheckpointError&) {
        throw;
    } catch (const c10::Error& e) {
        throw CheckpointUnreadable(file.string() + ": " + what + ": " + firstLine(e.what_without_backtrace()));
    } catch (const std::exception& e) {  // a damaged index: "Argument passed to at() was not in the map."
        throw CheckpointUnreadable(file.string() + ": " + what + ": " + firstLine(e.what()));
    }
}

// Reads `file` into `archive` after checking its trailer, and checks its format;
// returns whether a checksum vouched for it and the configuration text.
struct OpenedArchive {
    bool verified = false;
    std::string config;
    std::string bytes;  // the file: kept while the archive read from it is in use
};

OpenedArchive openArchive(const std::filesystem::path& file, torch::serialize::InputArchive& archive)
{
    std::error_code error;
    if (!std::filesystem::is_regular_file(file, error))
        throw CheckpointUnreadable(file.string() + ": no such checkpoint");
    OpenedArchive opened;
    opened.bytes = readWholeFile(file);
    const std::string& bytes = opened.bytes;
    const ArchiveBytes archiveBytes = checkTrailer(file, bytes);
    opened.verified = archiveBytes.verified;
    const std::int64_t format =
        readingArchive(file, "cannot be read (truncated, damaged, or not a WideLab checkpoint)", [&] {
            // A GPU run's checkpoint opens on any machine.
            archive.load_from(bytes.data(), archiveBytes.size, torch::Device(torch::kCPU));
            torch::Tensor format, config;
            archive.read("format", format);
            archive.read("config", config);
            opened.config = tensorText(config);
            return format.item<std::int64_t>();
        });
    if (format > kFormat)
        throw CheckpointError(file.string() + ": checkpoint format " + std::to_string(format)
                              + ", this WideLab reads formats " + std::to_string(kLegacyFormat) + " and "
                              + std::to_string(kFormat));
    if (format < kLegacyFormat)
        throw CheckpointUnreadable(file.string() + ": not a WideLab checkpoint (format " + std::to_string(format) + ")");
    if (!opened.verified && format != kLegacyFormat)
        throw CheckpointUnreadable(file.string() + ": its checksum trailer is missing: the file was cut short or "
                                                   "damaged at its end");
    return opened;
}

std::string nonFinite(const torch::Tensor& tensor)
{
    if (!tensor.defined() || !tensor.is_floating_point() || torch::isfinite(tensor).all().item<bool>())
        return {};
    const std::int64_t nan = torch::isnan(tensor).sum().item<std::int64_t>();
    const std::int64_t infinite = torch::isinf(tensor).sum().item<std::int64_t>();
    return std::to_string(nan) + " NaN and " + std::to_string(infinite) + " infinite value(s) of "
           + std::to_string(tensor.numel());
}

// The first optimiser state tensor that is not finite, named after its parameter.
std::optional<std::string> nonFiniteState(torch::optim::Optimizer& optimizer, WideTransformerImpl& model)
{
    std::map<const void*, std::string> names;
    for (const auto& item : model.named_parameters())
        names[item.value().unsafeGetTensorImpl()] = item.key();
    for (const auto& group : optimizer.param_groups()) {
        for (const auto& p : group.params()) {
            for (const StateTensor& state : optimizerStateTensors(optimizer, p)) {
                if (const std::string problem = nonFinite(*state.tensor); !problem.empty()) {
                    const auto name = names.find(p.unsafeGetTensorImpl());
                    return std::string("optimizer state ") + state.name + " of "
                           + (name == names.end() ? std::string("a parameter") : "model/" + name->second) + " holds "
                           + problem;
                }
            }
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> checkpointIntegrity(const std::filesystem::path& file)
{
    try {
        torch::serialize::InputArchive archive;
        openArchive(file, archive);
    } catch (const CheckpointUnreadable& error) {
        return error.what();
    }
    return std::nullopt;
}

CheckpointState loadCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                               torch::optim::Optimizer* optimizer)
{
    torch::serialize::InputArchive archive;
    const OpenedArchive opened = openArchive(file, archive);
    const nlohmann::json saved = savedConfiguration(file, opened.config);
    const nlohmann::json current = model.config().toJson();
    if (saved != current)
        throw CheckpointError(file.string() + ": a checkpoint of another architecture: " + differences(saved, current));

    CheckpointState state;
    state.verified = opened.verified;
    torch::Tensor rng;
    // Every tensor is read and checked before the model changes.
    std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;  // model tensor, checkpoint value
    readingArchive(file, "incomplete checkpoint", [&] {
        torch::Tensor step, position, best;
        archive.read("step", step);
        archive.read("sampler_position", position);
        archive.read("best_validation_loss", best);
        archive.read("rng_cpu", rng);
        state.step = step.item<std::int64_t>();
        state.samplerPosition = position.item<std::int64_t>();
        state.bestValidationLoss = best.item<double>();
        torch::Tensor bestAccuracy;  // checkpoints written before train.select_best lack it
        if (archive.try_read("best_validation_accuracy", bestAccuracy))
            state.bestValidationAccuracy = bestAccuracy.item<double>();
        torch::Tensor scheduleSteps;
        if (archive.try_read("schedule_steps", scheduleSteps))  // checkpoints written before it was recorded lack it
            state.scheduleSteps = scheduleSteps.item<std::int64_t>();
        torch::Tensor intervalSums, intervalSteps;  // nor these
        if (archive.try_read("interval_sums", intervalSums) && archive.try_read("interval_steps", intervalSteps)) {
            const torch::Tensor sums = intervalSums.to(torch::kFloat64).contiguous();
            state.intervalSums.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
            state.intervalSteps = intervalSteps.item<std::int64_t>();
        }
        torch::Tensor worldSize;  // written since distributed training
        if (archive.try_read("world_size", worldSize))
            state.worldSize = worldSize.item<std::int64_t>();
        torch::Tensor pending;  // written since a stop during a validation is finished on resume
        if (archive.try_read("evaluation_pending", pending))
            state.evaluationPending = pending.item<std::int64_t>() != 0;

        auto check = [&](const std::string& name, const torch::Tensor& target, bool buffer) {
            torch::Tensor value;
            archive.read("model/" + name, value, buffer);
            if (value.sizes() != target.sizes())
                throw CheckpointError(file.string() + ": " + name + " has shape " + c10::str(value.sizes())
                                      + " in the checkpoint, " + c10::str(target.sizes()) + " in the model");
            if (const std::string problem = nonFinite(value); !problem.empty())
                throw CheckpointUnreadable(file.string() + ": model/" + name + " holds " + problem
                                           + ": the weights were saved broken");
            copies.emplace_back(target, value);
        };
        for (const auto& item : model.named_parameters())
            check(item.key(), item.value(), false);
        for (const auto& item : model.named_buffers())
            check(item.key(), item.value(), true);
        if (optimizer) {
            torch::serialize::InputArchive optimizerArchive;
            archive.read("optimizer", optimizerArchive);
            optimizer->load(optimizerArchive);
            if (const auto problem = nonFiniteState(*optimizer, model))
                throw CheckpointUnreadable(file.string() + ": " + *problem + ": the optimizer was saved broken");
        }
        return 0;
    });
    torch::NoGradGuard noGrad;
    for (auto& [target, value] : copies)
        target.copy_(value);
    if (optimizer)
        moveStateToParameters(*optimizer);
    readingArchive(file, "incomplete checkpoint", [&] {
        restoreGenerator(at::detail::getDefaultCPUGenerator(), rng);
        // A GPU run's generator state, restored when the run resumes on a GPU
        // (on the CPU there is no such generator to restore).
        torch::Tensor rngCuda;
        if (const auto device = modelDevice(model); device.is_cuda() && archive.try_read("rng_cuda", rngCuda))
            restoreGenerator(cudaGenerator(device), rngCuda);
        return 0;
    });
    return state;
}

}  // namespace widelab
