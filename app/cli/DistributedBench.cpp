#include "DistributedBench.h"

#include "ExecArguments.h"
#include "TextTable.h"
#include "config/Presets.h"
#include "vocab/MetricsCodec.h"
#include "train/RunConfig.h"
#include "run/RunLayout.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace widelab {
namespace {

struct Measured {
    int processes = 1;
    bool overlap = true;
    double tokensPerSecond = 0.0;
    double stepSeconds = 0.0;
    double allReduceWait = 0.0;  // rank 0's, a step
};

double median(std::vector<double> values)
{
    if (values.empty())
        return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Runs this program with `args` (and WIDELAB_DISABLE extended by `disable`), its
// output into `log`; the exit status.
int runSelf(const std::vector<std::string>& args, const std::string& disable, const std::filesystem::path& log)
{
    std::vector<std::string> env;
    std::string disabled = disable;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        if (entry.rfind("WIDELAB_DISABLE=", 0) == 0) {
            const std::string earlier = entry.substr(16);
            if (!earlier.empty())
                disabled = disabled.empty() ? earlier : earlier + "," + disabled;
        } else {
            env.push_back(entry);
        }
    }
    if (!disabled.empty())
        env.push_back("WIDELAB_DISABLE=" + disabled);
    std::vector<std::string> argv{"widelab-cli"};
    argv.insert(argv.end(), args.begin(), args.end());
    ExecArguments exec(argv, env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = 0;
    const int error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, exec.argv.data(), exec.envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0)
        return 127;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string readText(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Measured measure(const std::filesystem::path& document, const std::filesystem::path& work, int processes,
                 bool overlap, std::int64_t warmup)
{
    Measured m;
    m.processes = processes;
    m.overlap = overlap;
    const std::string name = std::to_string(processes) + (overlap ? "" : "-no-overlap");
    const std::filesystem::path run = work / name, log = work / (name + ".log");
    const int status = runSelf({"train", document.string(), "--out", run.string(), "--nproc", std::to_string(processes)},
                               overlap ? "" : "gradient_overlap", log);
    if (status != 0)
        throw std::runtime_error("the run on " + std::to_string(processes) + " process" + (processes == 1 ? "" : "es")
                                 + " failed (status " + std::to_string(status) + "):\n" + readText(log));
    std::vector<double> tokens, step, wait;
    std::ifstream in(runlayout::metricsFile(run));
    for (std::string line; std::getline(in, line);) {
        std::string reason;
        const auto record = decodeMetricsLine(line, &reason);
        if (!record || record->type != MetricsRecord::Type::Train || record->step <= warmup)
            continue;
        tokens.push_back(record->train.tokensPerSecond);
        step.push_back(record->train.stepSeconds);
        wait.push_back(record->train.world.allReduceWaitSeconds);
    }
    m.tokensPerSecond = median(tokens);
    m.stepSeconds = median(step);
    m.allReduceWait = median(wait);
    return m;
}

std::string fixedText(double value, int digits)
{
    std::ostringstream text;
    text << std::fixed << std::setprecision(digits) << value;
    return text.str();
}

}  // namespace

int distributedBench(const std::string& source, const DistributedBenchOptions& options, std::ostream& out)
{
    const RunDocument base = loadRunDocument(resolveConfigPath(source));
    nlohmann::json document = base.toJson();
    const std::int64_t steps = options.warmup + options.steps;
    nlohmann::json& train = document["train"];
    train["steps"] = steps;
    train["batch_size"] = options.batch;
    train["log_every"] = 1;
    train["eval_every"] = steps;
    train["eval_batches"] = 1;
    train["checkpoint_every"] = steps;
    train["threads"] = 0;  // each process its share of the cores
    train["processes"] = 1;
    nlohmann::json& task = document["task"];
    if (!base.task.isImageTask() && base.task.kind == TaskKind::ListOps) {
        task["max_length"] = std::min(options.sequence, base.model.maxLen);
        task["min_length"] = std::max<std::int64_t>(1, std::min(options.sequence, base.model.maxLen) / 2);
    }
    task["train_size"] = std::max<std::int64_t>(256, options.batch * steps);
    task["validation_size"] = std::max<std::int64_t>(16, options.batch);
    task["test_size"] = 16;

    char pattern[] = "/tmp/widelab-bench-XXXXXX";
    if (!mkdtemp(pattern))
        throw std::runtime_error("cannot make a temporary directory for the runs");
    const std::filesystem::path work = pattern;
    const std::filesystem::path file = work / "run.json";
    std::ofstream(file) << document.dump(2) << "\n";

    std::vector<Measured> results;
    try {
        results.push_back(measure(file, work, 1, true, options.warmup));
        results.push_back(measure(file, work, options.processes, true, options.warmup));
        results.push_back(measure(file, work, options.processes, false, options.warmup));
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(work, ignored);
        throw;
    }
    std::error_code ignored;
    std::filesystem::remove_all(work, ignored);

    const Measured& one = results[0];
    const Measured& several = results[1];
    const Measured& unhidden = results[2];
    const double ratio = one.tokensPerSecond > 0 ? several.tokensPerSecond / one.tokensPerSecond : 0.0;
    const double hidden = unhidden.allReduceWait > 0 ? 1.0 - several.allReduceWait / unhidden.allReduceWait : 0.0;
    if (options.json) {
        nlohmann::json json = {{"config", source},
                               {"global_batch", options.batch},
                               {"steps", options.steps},
                               {"warmup", options.warmup},
                               {"processes", options.processes},
                               {"ratio", ratio},
                               {"hidden_share", hidden},
                               {"runs", nlohmann::json::array()}};
        for (const Measured& m : results)
            json["runs"].push_back({{"processes", m.processes},
                                    {"overlap", m.overlap},
                                    {"tokens_per_second", m.tokensPerSecond},
                                    {"step_seconds", m.stepSeconds},
                                    {"all_reduce_wait_seconds", m.allReduceWait}});
        out << json.dump(2) << "\n";
        return 0;
    }
    out << source << ": training on 1 and " << options.processes << " processes, global batch " << options.batch
        << ", median of " << options.steps << " steps after " << options.warmup << " warm-up\n\n";
    TextTable table({"processes", "gradients", "tokens/s", "step", "all-reduce wait a step"});
    for (const Measured& m : results)
        table.addRow({std::to_string(m.processes), m.processes == 1 ? "-" : m.overlap ? "overlapped" : "after backward",
                      fixedText(m.tokensPerSecond, 0), fixedText(1e3 * m.stepSeconds, 1) + " ms",
                      m.processes == 1 ? "-" : fixedText(1e3 * m.allReduceWait, 2) + " ms"});
    out << table.render();
    out << "\n" << options.processes << " processes: " << fixedText(ratio, 2) << "x the tokens/s of one; overlap hides "
        << fixedText(100.0 * hidden, 0) << "% of the all-reduce\n";
    return 0;
}

}  // namespace widelab
