#include "Checkpoint.h"

#include "Lamb.h"
#include "config/JsonText.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>

namespace widelab {
namespace {

constexpr std::int64_t kFormat = 1;

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

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

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
    auto& states = optimizer.state();
    for (const auto& group : optimizer.param_groups()) {
        for (const auto& p : group.params()) {
            const auto it = states.find(optimizerStateKey(states, p));
            if (it == states.end())
                continue;
            const torch::Device device = p.device();
            if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
                adamw->exp_avg(adamw->exp_avg().to(device));
                adamw->exp_avg_sq(adamw->exp_avg_sq().to(device));
                if (adamw->max_exp_avg_sq().defined())
                    adamw->max_exp_avg_sq(adamw->max_exp_avg_sq().to(device));
            } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
                if (sgd->momentum_buffer().defined())
                    sgd->momentum_buffer(sgd->momentum_buffer().to(device));
            } else if (auto* lamb = dynamic_cast<LambParamState*>(it->second.get())) {
                lamb->exp_avg(lamb->exp_avg().to(device));
                lamb->exp_avg_sq(lamb->exp_avg_sq().to(device));
            }
        }
    }
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

void writeFileAtomically(const std::filesystem::path& file, const std::string& bytes)
{
    static std::atomic<std::uint64_t> counter{0};
    const std::filesystem::path temporary =
        file.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw CheckpointError(file.string() + ": cannot write (no such directory, no permission, or disk full)");
        }
    }
    syncPath(temporary, false);
    std::error_code error;
    std::filesystem::rename(temporary, file, error);
    if (error)
        throw CheckpointError(file.string() + ": cannot replace: " + error.message());
    syncPath(file.parent_path().empty() ? "." : file.parent_path(), true);
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
    archive.write("schedule_steps", torch::tensor(state.scheduleSteps));
    archive.write("interval_sums", torch::tensor(state.intervalSums, torch::kFloat64));
    archive.write("interval_steps", torch::tensor(state.intervalSteps));
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

    std::ostringstream bytes;
    archive.save_to(bytes);
    writeFileAtomically(file, bytes.str());
}

CheckpointState loadCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                               torch::optim::Optimizer* optimizer)
{
    std::error_code error;
    if (!std::filesystem::is_regular_file(file, error))
        throw CheckpointUnreadable(file.string() + ": no such checkpoint");
    torch::serialize::InputArchive archive;
    torch::Tensor format, config;
    try {
        archive.load_from(file.string(), torch::kCPU);  // a GPU run's checkpoint opens on any machine
        archive.read("format", format);
        archive.read("config", config);
    } catch (const c10::Error& e) {
        throw CheckpointUnreadable(file.string() + ": cannot be read (truncated, or not a WideLab checkpoint): "
                              + firstLine(e.what_without_backtrace()));
    }
    if (format.item<std::int64_t>() != kFormat)
        throw CheckpointError(file.string() + ": checkpoint format " + std::to_string(format.item<std::int64_t>())
                              + ", this WideLab reads format " + std::to_string(kFormat));
    const nlohmann::json saved = tryParseJsonText(tensorText(config)).value_or(nlohmann::json::value_t::discarded);
    const nlohmann::json current = model.config().toJson();
    if (saved.is_discarded() || saved != current)
        throw CheckpointError(file.string() + ": a checkpoint of another architecture: "
                              + (saved.is_discarded() ? std::string("its configuration is unreadable")
                                                      : differences(saved, current)));

    CheckpointState state;
    try {
        torch::Tensor step, position, best, rng;
        archive.read("step", step);
        archive.read("sampler_position", position);
        archive.read("best_validation_loss", best);
        archive.read("rng_cpu", rng);
        state.step = step.item<std::int64_t>();
        state.samplerPosition = position.item<std::int64_t>();
        state.bestValidationLoss = best.item<double>();
        torch::Tensor scheduleSteps;
        if (archive.try_read("schedule_steps", scheduleSteps))  // checkpoints written before it was recorded lack it
            state.scheduleSteps = scheduleSteps.item<std::int64_t>();
        torch::Tensor intervalSums, intervalSteps;  // nor these
        if (archive.try_read("interval_sums", intervalSums) && archive.try_read("interval_steps", intervalSteps)) {
            const torch::Tensor sums = intervalSums.to(torch::kFloat64).contiguous();
            state.intervalSums.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
            state.intervalSteps = intervalSteps.item<std::int64_t>();
        }

        torch::NoGradGuard noGrad;
        auto restore = [&](const std::string& name, torch::Tensor& target, bool buffer) {
            torch::Tensor value;
            archive.read("model/" + name, value, buffer);
            if (value.sizes() != target.sizes())
                throw CheckpointError(file.string() + ": " + name + " has shape " + c10::str(value.sizes())
                                      + " in the checkpoint, " + c10::str(target.sizes()) + " in the model");
            target.copy_(value);
        };
        for (auto& item : model.named_parameters())
            restore(item.key(), item.value(), false);
        for (auto& item : model.named_buffers())
            restore(item.key(), item.value(), true);
        if (optimizer) {
            torch::serialize::InputArchive optimizerArchive;
            archive.read("optimizer", optimizerArchive);
            optimizer->load(optimizerArchive);
            moveStateToParameters(*optimizer);
        }
        restoreGenerator(at::detail::getDefaultCPUGenerator(), rng);
        // A GPU run's generator state, restored when the run resumes on a GPU
        // (on the CPU there is no such generator to restore).
        torch::Tensor rngCuda;
        if (const auto device = modelDevice(model); device.is_cuda() && archive.try_read("rng_cuda", rngCuda))
            restoreGenerator(cudaGenerator(device), rngCuda);
    } catch (const c10::Error& e) {
        throw CheckpointUnreadable(file.string() + ": incomplete checkpoint: " + firstLine(e.what_without_backtrace()));
    }
    return state;
}

}  // namespace widelab
