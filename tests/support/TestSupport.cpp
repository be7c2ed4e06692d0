#include "TestSupport.h"

#include "config/Presets.h"
#include "train/Trainer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <stdexcept>

namespace widelab::test {

QString printed(const torch::Tensor& t)
{
    std::ostringstream text;
    text << t;
    return QString::fromStdString(text.str());
}

double relativeError(const torch::Tensor& a, const torch::Tensor& b)
{
    const torch::Tensor x = a.detach().to(torch::kFloat64), y = b.detach().to(torch::kFloat64);
    const double difference = (x - y).norm().item<double>();
    const double scale = y.norm().item<double>();
    if (scale == 0.0)
        return difference;
    return difference / scale;
}

ModelConfig modelConfig(const std::string& base, const std::string& overrides)
{
    nlohmann::json json = nlohmann::json::parse(base);
    json.update(nlohmann::json::parse(overrides));
    std::vector<ConfigIssue> issues;
    ModelConfig config = ModelConfig::fromJson(json, issues);
    if (!issues.empty())
        throw std::runtime_error(ConfigError(issues).what());
    return config;
}

RunDocument tinyRun(const std::string& overrides)
{
    nlohmann::json json = nlohmann::json::parse(R"({
        "model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
                  "dropout": 0.1, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 256, "validation_size": 64,
                 "test_size": 64},
        "train": {"steps": 20, "batch_size": 16, "learning_rate": 0.003, "warmup_steps": 5, "log_every": 1,
                  "eval_every": 10, "checkpoint_every": 10, "threads": 1}})");
    json.merge_patch(nlohmann::json::parse(overrides));
    return parseRunDocument(json.dump());
}

CheckpointState stateAt(std::int64_t step, std::int64_t samplerPosition, double bestValidationLoss)
{
    CheckpointState state;
    state.step = step;
    state.samplerPosition = samplerPosition;
    state.bestValidationLoss = bestValidationLoss;
    return state;
}

void flipMiddleByte(const std::filesystem::path& file)
{
    std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(0, std::ios::end);
    const std::streamoff middle = stream.tellg() / 2;
    stream.seekg(middle);
    const char byte = static_cast<char>(~stream.get());
    stream.seekp(middle);
    stream.put(byte);
}

std::vector<nlohmann::json> metricLines(const std::filesystem::path& run, const std::string& type)
{
    std::vector<nlohmann::json> lines;
    std::ifstream in(run / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        nlohmann::json json = nlohmann::json::parse(line);
        if (json["type"] == type)
            lines.push_back(json);
    }
    return lines;
}

std::vector<std::pair<std::string, ModelDocument>> shippedPresets()
{
    std::vector<std::pair<std::string, ModelDocument>> presets;
    for (const auto& name : listPresets())
        presets.emplace_back(name, loadModelDocument(resolveConfigPath(name)));
    return presets;
}

std::map<std::string, torch::Tensor> runReference(const ModelConfig& config, const std::string& mode,
                                                  const std::map<std::string, torch::Tensor>& tensors,
                                                  const std::string& caseName, const char* dtype)
{
    if (std::string(WIDELAB_REFERENCE_PYTHON).empty())
        throw std::runtime_error("no Python with torch was found at configure time (apt-get install python3-torch)");
    const std::filesystem::path directory = std::filesystem::temp_directory_path() / "widelab-reference";
    std::filesystem::create_directories(directory);
    std::string stem = caseName;
    if (std::string_view(dtype) != "float32")
        stem.append(".").append(dtype);
    const std::filesystem::path json = directory / (stem + ".json");
    const std::filesystem::path input = directory / (stem + ".pt");
    const std::filesystem::path output = directory / (stem + ".out.pt");
    std::filesystem::remove(output);

    std::ofstream(json) << nlohmann::json{{"model", config.toJson()}, {"mode", mode}, {"dtype", dtype}}.dump(2);
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& [name, tensor] : tensors)
        dict.insert(name, tensor.detach().contiguous());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    std::ofstream(input, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

    const std::string command = std::string("\"") + WIDELAB_REFERENCE_PYTHON + "\" \"" WIDELAB_REFERENCE_SCRIPT "\" \""
                                + json.string() + "\" \"" + input.string() + "\" \"" + output.string() + "\" 2>&1";
    std::string log;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe)
        throw std::runtime_error("cannot start " + command);
    char buffer[4096];
    while (const std::size_t got = fread(buffer, 1, sizeof buffer, pipe))
        log.append(buffer, got);
    const int status = pclose(pipe);
    if (status != 0)
        throw std::runtime_error("reference failed (" + command + "):\n" + log);

    std::ifstream in(output, std::ios::binary);
    const std::vector<char> result((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const c10::IValue value = torch::pickle_load(result);
    std::map<std::string, torch::Tensor> outputs;
    for (const auto& entry : value.toGenericDict())
        outputs[entry.key().toStringRef()] = entry.value().toTensor();
    return outputs;
}

TrainSummary runStoppedAt(Trainer& trainer, std::int64_t step)
{
    struct StopAt : TrainingObserver {
        std::atomic<bool> flag{false};
        std::int64_t at = 0;
        void onSnapshot(const TrainingSnapshot& s) override { flag = flag || s.step == at; }
    } stopAt;
    stopAt.at = step;
    trainer.addObserver(&stopAt);
    return trainer.run(stopAt.flag);
}

}  // namespace widelab::test
