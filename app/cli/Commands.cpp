#include "Commands.h"

#include "AblateCommand.h"
#include "AttentionCommand.h"
#include "AverageCommand.h"
#include "BleuCommand.h"
#include "CorpusCommand.h"
#include "DiffCommand.h"
#include "DistributedBench.h"
#include "KeysCommand.h"
#include "RunCommands.h"
#include "StudyCommand.h"
#include "TensorBoardCommand.h"
#include "TranslateCommand.h"
#include "TextTable.h"
#include "vocab/ConfigError.h"
#include "config/ModelConfig.h"
#include "config/Presets.h"
#include "dist/World.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Runtime.h"
#include "train/MemoryEstimate.h"
#include "train/RunConfig.h"
#include "benchmark/Benchmark.h"
#include "benchmark/DecodeBenchmark.h"
#include "train/Trainer.h"

#include <torch/torch.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

namespace widelab {
namespace {

const char* kUsage = R"(WideLab command-line tool

usage:
  widelab-cli params CONFIG [--json]    parameter and FLOP accounting of a model
  widelab-cli check CONFIG              validate a run configuration as train does, print it
                                        resolved: every key with the value train uses,
                                        defaults and derived defaults written out
                                        (warnings on stderr)
  widelab-cli diff A B [--json]         the keys whose values differ between two runs (their
                                        config.json), configuration files or presets, each
                                        resolved as check prints it
  widelab-cli presets [--json]          the shipped presets, and the folder they are read from
  widelab-cli attention [--json]        the attention mechanisms, their keys and defaults
  widelab-cli keys [--json]             every key of a run document: type, default, accepted
                                        values and meaning
  widelab-cli forward CONFIG [--batch N] [--length T] [--steps N] [--threads N]
                                        timed forward and backward passes on random tokens
  widelab-cli bench CONFIG [--mode train|infer] [--batch B] [--seq T] [--steps N] [--warmup W]
                    [--threads N] [--device cpu|cuda|cuda:N] [--bf16] [--cuda-graph]
                    [--peak-tflops F] [--kernels N] [--json]
                                        throughput, MFU against the measured matmul peak (and
                                        a nominal one), peak memory, phases; --cuda-graph
                                        replays a captured training step (timing only);
                                        --kernels N: the N operators and kernels one more
                                        step spends most time in (device time on a GPU)
  widelab-cli bench CONFIG --mode decode [--batch B] [--seq S] [--steps N] [--threads N] [--device D]
                    [--json]
                                        a translation model's greedy decoding to 50 and 200 target
                                        tokens from S-token sources: tokens/s with cached keys and
                                        values against recomputing the prefix (best of N)
  widelab-cli bench CONFIG --nproc N [--batch B] [--seq T] [--steps N] [--warmup W] [--json]
                                        training on N processes against one at the same global
                                        batch: tokens/s, and the all-reduce share that overlapping
                                        it with backward hides (docs/distributed.md)
  widelab-cli train CONFIG --out RUN_DIR [--steps N] [--device D] [--threads N] [--force]
                    [--tensorboard LOGDIR] [--nproc N]
                                        train (Ctrl-C saves a checkpoint and stops; --force:
                                        even when the memory estimate exceeds what is available;
                                        --tensorboard: TensorBoard events into LOGDIR/RUN as it goes;
                                        --nproc: N processes sharing each batch, docs/distributed.md;
                                        under torchrun, srun or mpirun each process is one rank)
  widelab-cli train --resume --out RUN_DIR [--steps N] [--device D] [--threads N] [--force]
                    [--tensorboard LOGDIR] [--nproc N]
                                        continue a run as it was configured
  widelab-cli eval RUN_DIR [--split validation|test] [--checkpoint latest|best|FILE]
                       [--device D] [--threads N] [--beam N] [--length-penalty A] [--json]
                                        loss and accuracy on a split; a translation run's BLEU and
                                        chrF of the whole split, by beam search (default 4, 0.6)
  widelab-cli inspect RUN_DIR --text "..." [--checkpoint latest|best|FILE] [--heads] [--json]
  widelab-cli inspect RUN_DIR --image FILE|validation:N [--checkpoint ...] [--heads] [--json]
                                        attention, routing, the logit lens and the prediction
                                        on a text; --heads: every head's role scores
  widelab-cli ablate RUN_DIR [--heads|--experts|--paths|--sublayers] [--mode zero|mean]
                     [--checkpoint latest|best|FILE] [--batches N] [--text T|--image I]
                     [--device D] [--threads N] [--json]
                                        switch every head (expert, path, sublayer) off in turn:
                                        validation loss and accuracy against the whole model
  widelab-cli export RUN_DIR --out model.safetensors [--format safetensors|pt]
                     [--checkpoint latest|best|FILE] [--force]
                                        the weights for Python (safetensors, or with --format pt
                                        or a .pt name a state_dict for torch.load), the run
                                        document beside them as .json, and the run's tokenizer,
                                        image and labels files as NAME.tokenizer.json and so on;
                                        replaces an earlier export, other files only with --force
  widelab-cli average RUN_DIR [--last N]
                                        the mean of the weights of the run's last N step checkpoints
                                        (default 5) as checkpoints/average-last-N.pt, which
                                        --checkpoint takes; the newest's step and optimiser state
  widelab-cli export-tb RUN_DIR --out LOGDIR [--replace]
                                        metrics.jsonl as TensorBoard events in LOGDIR/RUN (scalars,
                                        LayerNorm and expert-load histograms, probes' attention
                                        maps); --replace: that run's earlier events there go first
  widelab-cli study STUDY.json|BUILTIN --out STUDY_DIR [--steps N] [--seeds N] [--jobs N]
                    [--device D] [--threads N]
                                        train every member of a study as a run under STUDY_DIR/runs/,
                                        measure each, write results.csv and results.md (Ctrl-C saves;
                                        the same command, or --out STUDY_DIR alone, continues)
  widelab-cli study --report STUDY_DIR  the results table of a study, finished or not
  widelab-cli study --list              the built-in studies
  widelab-cli translate RUN_DIR --text "..." | --file FILE [--checkpoint latest|best|FILE]
                     [--beam N] [--length-penalty A] [--batch N] [--json]
                                        a translation run's translations, one a line in the order
                                        of the sources: beam search (default beam 4, length
                                        penalty 0.6, the Multi-Path paper's) with cached keys
                                        and values; --beam 1: greedy
  widelab-cli bleu --hyp FILE --ref FILE [--width N] [--json]
                                        corpus BLEU and chrF of two line-aligned UTF-8 files, one
                                        reference a line, as sacreBLEU prints them with its
                                        defaults (13a, exp smoothing; chrF2); --width: decimals
  widelab-cli corpus bible --from NAME --to NAME --out PAIRS.tsv [--keys]
                                        a verse-aligned parallel corpus from Debian's SWORD Bibles
                                        (web, sparv, kjv): one "source TAB target" line a verse in
                                        both, markup stripped; --keys: the verse as a third column
  widelab-cli corpus bible --list       the Bibles, their SWORD modules and Debian packages
  widelab-cli corpus fortunes --out TEXTS.tsv [--categories A,B,...]
                                        a classification file from Debian's fortunes: one
                                        "category TAB text" line a fortune (default: computers,
                                        definitions, politics, science, songs-poems, work)
  widelab-cli corpus fortunes --list    the fortune categories and their sizes
  widelab-cli corpus bible-sections --from NAME --out TEXTS.tsv
                                        a long-document classification file from one Bible: one
                                        "section TAB text" line a chapter (1,189 of them), the
                                        section its book's part: law, history, poetry, prophets,
                                        gospels, letters
  widelab-cli corpus bible-text --from NAME --out TEXT.txt
                                        one Bible's chapters as plain text, one a line (for a
                                        masked language model's pretraining)
  widelab-cli corpus bible-pairs --from NAME [--to NAME] --out PAIRS.tsv
                                        a pair-classification file: one "same|other TAB verse TAB
                                        verse" line a verse, its partner from the same book half of
                                        the time; with --to, the same verse in the other Bible half
                                        of the time, else another verse of it (seeded: the same file
                                        every time)
  widelab-cli --help | --version

CONFIG is a JSON file or the name of a preset (see `widelab-cli presets`).
)";

// Wrong arguments: exit status 2, with the usage. One type with the run
// commands' own (RunCommands.h), so the dispatcher answers both alike.
using UsageError = RunUsageError;

// Arguments after the subcommand: positionals, --flags, and --options with a value.
class Arguments {
public:
    Arguments(std::vector<std::string> args, const std::vector<std::string>& flags,
              const std::vector<std::string>& options)
    {
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string& a = args[i];
            if (a.rfind("--", 0) != 0) {
                m_positional.push_back(a);
                continue;
            }
            const bool flag = std::find(flags.begin(), flags.end(), a) != flags.end();
            if (!flag && std::find(options.begin(), options.end(), a) == options.end())
                throw UsageError("unknown option " + a);
            if (m_values.count(a) > 0)  // which one was meant?
                throw UsageError(a + " is given twice");
            if (flag) {
                m_values[a] = "";
                continue;
            }
            if (i + 1 >= args.size())
                throw UsageError(a + " needs a value");
            if (args[i + 1].empty())
                throw UsageError(a + " needs a value, not an empty one");
            m_values[a] = args[++i];
        }
    }

    bool has(const std::string& name) const { return m_values.count(name) > 0; }
    std::string text(const std::string& name, const std::string& fallback = "") const
    {
        const auto it = m_values.find(name);
        return it == m_values.end() ? fallback : it->second;
    }
    const std::vector<std::string>& positional() const { return m_positional; }

    std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const
    {
        const auto it = m_values.find(name);
        if (it == m_values.end())
            return fallback;
        // Exactly an integer: no spaces around it, no sign but '-', nothing after it.
        const std::string& text = it->second;
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc::result_out_of_range)
            throw UsageError(name + ": " + text + " is outside " + std::to_string(min) + ".." + std::to_string(max));
        if (error != std::errc() || end != text.data() + text.size())
            throw UsageError(name + ": expected an integer, got \"" + text + "\"");
        if (value < min || value > max)
            throw UsageError(name + ": " + it->second + " is outside " + std::to_string(min) + ".."
                             + std::to_string(max));
        return value;
    }

    double real(const std::string& name, double fallback, double min, double max) const
    {
        const auto it = m_values.find(name);
        if (it == m_values.end())
            return fallback;
        const std::string& text = it->second;
        double value = 0.0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size())
            throw UsageError(name + ": expected a number, got \"" + text + "\"");
        if (!(value >= min && value <= max))
            throw UsageError(name + ": " + it->second + " is outside " + std::to_string(min) + ".." + std::to_string(max));
        return value;
    }

    std::string single(const std::string& what) const
    {
        if (m_positional.size() != 1)
            throw UsageError("expected exactly one " + what);
        return m_positional.front();
    }

private:
    std::vector<std::string> m_positional;
    std::map<std::string, std::string> m_values;
};

ModelDocument loadDocument(const std::string& nameOrPath)
{
    return loadModelDocument(resolveConfigPath(nameOrPath));
}

// Warnings go to the error stream, so that what a command prints stays usable.
void printWarnings(const std::vector<ConfigIssue>& warnings, std::ostream& err)
{
    for (const ConfigIssue& warning : warnings)
        err << "warning: " << warning.text() << "\n";
}

std::string title(const ModelDocument& document, const std::string& fallback)
{
    return document.name.empty() ? fallback : document.name;
}

// What training the document would hold on a GPU (bf16 as train.bf16 says) and
// on the CPU; none for a document without a valid train section.
std::optional<std::pair<MemoryEstimate, MemoryEstimate>> trainingMemory(const std::string& source,
                                                                        std::int64_t stored)
{
    try {
        std::ifstream in(resolveConfigPath(source), std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        const RunDocument run = parseRunDocument(text.str(), source, /*requireDataFiles=*/false);
        return std::make_pair(estimateTrainingMemory(run, stored, true), estimateTrainingMemory(run, stored, false));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

int params(const Arguments& a, std::ostream& out, std::ostream& err)
{
    const std::string source = a.single("CONFIG");
    const ModelDocument document = loadDocument(source);
    printWarnings(document.warnings, err);
    const ModelCost cost = modelCost(document.model);
    const auto memory = trainingMemory(source, cost.total.stored);
    if (a.has("--json")) {
        nlohmann::json json = cost.toJson();
        json["name"] = document.name;
        if (memory) {
            json["training_memory_bytes"] = {{"cuda", memory->first.totalBytes()}, {"cpu", memory->second.totalBytes()}};
        }
        out << json.dump(2) << "\n";
        return 0;
    }
    out << title(document, source) << "\n";
    if (!document.description.empty())
        out << document.description << "\n";
    out << "\n";
    TextTable table({"part", "stored", "active", "applied", "FLOPs/token"});
    for (const auto& row : cost.parts) {
        if (row.stored == 0 && row.applied == 0)
            continue;
        table.addRow({row.part, groupDigits(row.stored), groupDigits(row.active), groupDigits(row.applied),
                      shortCount(row.flopsPerToken)});
    }
    table.addRule();
    table.addRow({"total", groupDigits(cost.total.stored), groupDigits(cost.total.active),
                  groupDigits(cost.total.applied), shortCount(cost.total.flopsPerToken)});
    out << table.render() << "\n";
    out << "stored: trainable parameters, shared modules once; active: with top_k of the experts;\n"
           "applied: what one token passes through, a shared module once per block that uses it;\n"
           "FLOPs/token: forward matrix products per token (a multiply-add is 2).\n\n";
    if (document.model.imageInput())
        out << "image input: " << document.model.imageSize << "x" << document.model.imageSize << " pixels, "
            << document.model.channels << " channel(s), " << document.model.patchGrid() << "x"
            << document.model.patchGrid() << " patches of " << document.model.patchSize << "x"
            << document.model.patchSize << (document.model.usesClsToken() ? ", plus the CLS token" : "") << "\n";
    out << "forward FLOPs per token (sequence of " << cost.sequenceLength
        << " tokens): " << shortCount(cost.flopsPerToken);
    if (document.model.isMoe())
        out << ", " << shortCount(cost.flopsPerTokenAtCapacity) << " with expert buffers at capacity";
    if (cost.inferenceFlopsPerToken != cost.flopsPerToken)
        out << ", " << shortCount(cost.inferenceFlopsPerToken)
            << " in inference (the last block computes the CLS token's row alone)";
    out << "\n";
    if (memory)
        out << "training memory, estimated: " << formatBytes(memory->first.totalBytes()) << " on a GPU, "
            << formatBytes(memory->second.totalBytes()) << " on the CPU (weights, gradients and optimizer state "
            << formatBytes(memory->first.parameterBytes) << ")\n";
    return 0;
}

// The whole run document, checked as `train` checks it before it starts (the
// data file must be there and readable; its contents are the trainer's), and
// printed resolved: what check accepts, train accepts.
int check(const Arguments& a, std::ostream& out, std::ostream& err)
{
    const RunDocument run = loadRunDocument(resolveConfigPath(a.single("CONFIG")));
    printWarnings(run.warnings, err);
    // What train checks of this machine: the device is there (else an error, as
    // train's), and the run fits its memory (else train refuses without --force).
    if (const std::string shortfall = memoryShortfall(run, trainingDevice(run.train.device)); !shortfall.empty())
        err << "warning: " << shortfall << " (train refuses it without --force)\n";
    out << run.toJson().dump(2) << "\n";
    return 0;
}

int presets(const Arguments& a, std::ostream& out, std::ostream& err)
{
    const std::vector<std::string> names = listPresets();
    if (names.empty()) {
        err << "error: no shipped presets found; looked in:";
        for (const auto& folder : presetDirectories())
            err << " " << folder.string();
        err << " (set WIDELAB_PRESETS to their folder)\n";
        return 1;
    }
    nlohmann::json list = nlohmann::json::array();
    TextTable table({"preset", "stored", "FLOPs/token", "name"});
    for (const auto& name : names) {
        const ModelDocument document = loadDocument(name);
        const ModelCost cost = modelCost(document.model);
        list.push_back({{"preset", name}, {"name", document.name}, {"description", document.description},
                        {"stored_parameters", cost.total.stored}});
        table.addRow({name, shortCount(static_cast<double>(cost.total.stored)), shortCount(cost.flopsPerToken),
                      document.name});
    }
    if (a.has("--json"))
        out << list.dump(2) << "\n";
    else
        out << table.render() << names.size() << " presets in " << shippedPresetDirectory().string() << "\n";
    return 0;
}

int forward(const Arguments& a, std::ostream& out)
{
    const ModelDocument document = loadDocument(a.single("CONFIG"));
    const ModelConfig& config = document.model;
    const std::int64_t batch = a.integer("--batch", 8, 1, 4096);
    const std::int64_t length = a.integer("--length", std::min<std::int64_t>(config.maxLen, 128), 1, config.maxLen);
    setComputeThreads(static_cast<int>(a.integer("--threads", 0, 0, 1024)));
    out << runtimeSummary() << "\n";

    torch::manual_seed(0);
    WideTransformer model(config);
    model->train();
    // Images: random normalised pixels; their sequence is the patches, whatever --length says.
    const torch::Tensor ids = config.imageInput()
                                  ? torch::randn({batch, config.channels, config.imageSize, config.imageSize})
                                  : torch::randint(config.vocabSize, {batch, length}, torch::kLong);
    const torch::Tensor targets = config.head == HeadKind::Classification
                                      ? torch::randint(config.numClasses, {batch}, torch::kLong)
                                      : torch::randint(config.vocabSize, {batch, length}, torch::kLong);
    // One untimed step first: the first pass allocates and warms caches.
    const std::int64_t steps = a.integer("--steps", 3, 1, 100000);
    torch::Tensor task;
    ModelOutput output;
    double seconds = 0.0;
    for (std::int64_t step = 0; step <= steps; ++step) {
        const auto start = std::chrono::steady_clock::now();
        model->zero_grad();
        output = model->forward(ids);
        task = taskLoss(config, output.logits, targets);
        trainingLoss(config, task, output).backward();
        if (step > 0)
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    seconds /= static_cast<double>(steps);

    char line[256];
    std::snprintf(line, sizeof line, "%s: batch %lld x %lld tokens, task loss %.4f, balance loss %.4f, %.3f s per step (%.0f tokens/s)\n",
                  title(document, "model").c_str(), static_cast<long long>(batch), static_cast<long long>(length),
                  task.item<double>(), output.balanceLoss.item<double>(), seconds,
                  static_cast<double>(batch * length) / seconds);
    out << line;
    return 0;
}

std::string fixed(double value, int decimals)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

// bench --mode decode: greedy decoding with the cache against recomputing the prefix.
int benchDecode(const ModelConfig& model, const Arguments& a, std::ostream& out)
{
    if (a.has("--bf16") || a.has("--cuda-graph") || a.has("--warmup") || a.has("--peak-tflops") || a.has("--kernels"))
        throw UsageError("--mode decode takes --batch, --seq, --steps, --threads, --device and --json");
    const std::int64_t batch = a.integer("--batch", 8, 1, 65536);
    const std::int64_t sourceTokens = a.integer("--seq", 50, 1, 1 << 20);
    const std::int64_t repeats = a.integer("--steps", 3, 1, 1000);
    setComputeThreads(static_cast<int>(a.integer("--threads", 0, 0, 1024)));
    std::vector<DecodeBenchmarkRow> rows;
    try {
        rows = runDecodeBenchmark(model, batch, sourceTokens, {50, 200}, repeats, a.text("--device", "cpu"));
    } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
    }
    if (a.has("--json")) {
        nlohmann::json json = {{"mode", "decode"}, {"batch", batch}, {"source_tokens", sourceTokens},
                               {"threads", computeThreads()}, {"rows", nlohmann::json::array()}};
        for (const DecodeBenchmarkRow& row : rows)
            json["rows"].push_back({{"target_tokens", row.targetTokens},
                                    {"cached_tokens_per_second", row.cachedTokensPerSecond()},
                                    {"recomputed_tokens_per_second", row.recomputedTokensPerSecond()},
                                    {"speedup", row.cachedSeconds > 0.0 ? row.recomputedSeconds / row.cachedSeconds : 0.0}});
        out << json.dump(2) << "\n";
        return 0;
    }
    out << "greedy decoding, " << batch << " sources of " << sourceTokens << " tokens, " << computeThreads()
        << " threads, best of " << repeats << "\n";
    TextTable table({"target tokens", "cached tokens/s", "recomputed tokens/s", "speedup"});
    for (const DecodeBenchmarkRow& row : rows)
        table.addRow({std::to_string(row.targetTokens), fixed(row.cachedTokensPerSecond(), 1),
                      fixed(row.recomputedTokensPerSecond(), 1),
                      fixed(row.recomputedSeconds / row.cachedSeconds, 2) + "x"});
    out << table.render();
    return 0;
}

// bench --kernels: where one more step spent its time, by operator and on a GPU by kernel.
std::string kernelTables(const KernelProfile& profile)
{
    if (!profile.unavailable.empty())
        return "--kernels: nothing profiled: " + profile.unavailable + "\n";
    const auto table = [&](const std::string& heading, const std::vector<OperatorTime>& entries) {
        TextTable rows({heading, "calls", "ms/step", "share"});
        for (const OperatorTime& entry : entries)
            rows.addRow({entry.name, groupDigits(entry.calls), fixed(1e3 * entry.seconds, 3),
                         fixed(profile.seconds > 0.0 ? 100.0 * entry.seconds / profile.seconds : 0.0, 1) + " %"});
        return rows.render();
    };
    const std::string spent = fixed(1e3 * profile.seconds, 2) + " ms";
    const std::string step = "a step of " + fixed(1e3 * profile.span, 2) + " ms";
    std::string text = profile.deviceTime
                           ? "Device time of one more step (" + spent + " in kernels and copies, " + step
                                 + "), by the operator that launched it:\n"
                           : "Self time of one more step's operators (" + spent + " in " + step
                                 + "; an operator's time leaves out the operators it called,\n"
                                   "and the rest of the step is outside any operator: WideLab's own kernels, the "
                                   "host's glue):\n";
    text += table("operator", profile.byOperator);
    if (!profile.byKernel.empty())
        text += "\nThe same by kernel:\n" + table("kernel", profile.byKernel);
    if (!profile.byPhase.empty())
        text += "\nThe same by the phase whose scope was open when the host reached the operator:\n"
                + table("phase", profile.byPhase);
    return text;
}

int bench(const Arguments& a, std::ostream& out)
{
    if (a.has("--nproc")) {  // training on several processes against one (docs/distributed.md)
        DistributedBenchOptions options;
        options.processes = static_cast<int>(a.integer("--nproc", 2, 2, 1024));
        options.batch = a.integer("--batch", 16, 1, 65536);
        options.sequence = a.integer("--seq", 128, 1, 1 << 20);
        options.steps = a.integer("--steps", 20, 1, 100000);
        options.warmup = a.integer("--warmup", 3, 0, 100000);
        options.json = a.has("--json");
        if (a.has("--mode") || a.has("--device") || a.has("--bf16") || a.has("--cuda-graph") || a.has("--threads")
            || a.has("--kernels"))
            throw UsageError("--nproc trains on the CPU, each process with its share of the cores: it takes "
                             "--batch, --seq, --steps, --warmup and --json");
        if (const std::string reason = distributedUnavailableReason(); !reason.empty())
            throw UsageError("--nproc: " + reason);
        return distributedBench(a.single("CONFIG"), options, out);
    }
    const std::string source = a.single("CONFIG");
    const ModelDocument document = loadDocument(source);
    const std::string mode = a.text("--mode", "train");
    if (mode == "decode")
        return benchDecode(document.model, a, out);
    if (mode != "train" && mode != "infer")
        throw UsageError("--mode: \"" + mode + "\" is not train, infer or decode");
    BenchmarkOptions options;
    options.train = mode == "train";
    options.batch = a.integer("--batch", 16, 1, 65536);
    options.sequence = a.integer("--seq", std::min<std::int64_t>(document.model.maxLen, 256), 1, 1 << 20);
    options.steps = a.integer("--steps", 10, 1, 100000);
    options.warmup = a.integer("--warmup", 2, 0, 100000);
    options.device = a.text("--device", "cpu");
    options.bf16 = a.has("--bf16");
    options.cudaGraph = a.has("--cuda-graph");
    options.kernels = a.integer("--kernels", 0, 0, 1000);  // 0: none, as bench/gpu/run.sh and the Python side take it
    if (options.kernels > 0 && options.cudaGraph)
        throw UsageError("--kernels profiles an ordinary step, and --cuda-graph times replays without one: "
                         "give one of them");
    options.nominalPeakFlops = 1e12 * a.real("--peak-tflops", 0.0, 0.0, 1e6);
    setComputeThreads(static_cast<int>(a.integer("--threads", 0, 0, 1024)));

    BenchmarkResult r;
    try {
        r = runBenchmark(document.model, options);
    } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
    }
    if (a.has("--json")) {
        nlohmann::json json = r.toJson();
        json["name"] = title(document, source);
        json["runtime"] = runtimeSummary();
        out << json.dump(2) << "\n";
        return 0;
    }
    out << title(document, source) << ": " << r.mode << " on " << r.device << " in " << r.dtype << ", batch " << r.batch
        << " x " << r.sequence << " tokens, median of " << r.steps << " steps after " << r.warmup << " warm-up"
        << (r.cudaGraph ? ", replaying one captured CUDA graph" : "")
        << (r.clsRowOnly ? ", the last block computing the CLS token's row alone (WIDELAB_DISABLE=cls_row_only: every row)"
                         : "")
        << "\n";
    out << runtimeSummary() << "\n";
    if (!r.blasFile.empty())
        out << "BLAS library: " << r.blasFile << "\n";
    out << "\n";
    TextTable summary({"measure", "value"});
    summary.addRow({"step time (median)", fixed(1e3 * r.medianStepSeconds, 1) + " ms"});
    summary.addRow({"tokens/s", groupDigits(static_cast<std::int64_t>(r.tokensPerSecond))});
    summary.addRow({"model FLOPs per step", shortCount(r.flopsPerStep) + (options.train ? " (3x forward)" : " (forward)")});
    if (r.expertProducts == "batched")  // the work the capacity buffer's empty rows add
        summary.addRow({"  with expert buffers full", shortCount(r.flopsPerStepAtCapacity)});
    summary.addRow({"achieved", fixed(r.achievedFlops / 1e9, 1) + " GFLOP/s"});
    summary.addRow({r.peakDtype + " matmul peak", fixed(r.peakFlops / 1e9, 1) + " GFLOP/s (" + std::to_string(r.peakSize)
                                                      + "^2 mm, best of 5)"});
    summary.addRow({"achieved / peak (MFU)", fixed(100.0 * r.peakRatio, 1) + " %"});
    if (r.nominalPeakFlops > 0.0)
        summary.addRow({"achieved / nominal " + fixed(r.nominalPeakFlops / 1e12, 0) + " TFLOP/s",
                        fixed(100.0 * r.nominalPeakRatio, 1) + " %"});
    const bool cuda = r.device.rfind("cuda", 0) == 0;
    summary.addRow({cuda ? "peak allocated (CUDA allocator)" : "peak resident (process)", formatBytes(r.peakAllocatedBytes)});
    if (cuda)
        summary.addRow({"peak reserved (CUDA allocator)", formatBytes(r.peakReservedBytes)});
    if (r.moeRoutingShare >= 0.0)
        summary.addRow({"routing+dispatch+combine / MoE layer", fixed(100.0 * r.moeRoutingShare, 1) + " % (forward)"});
    if (r.moeRoutingShareByKernels >= 0.0)
        summary.addRow({"  the same in --kernels' profile", fixed(100.0 * r.moeRoutingShareByKernels, 1)
                                                              + (cuda ? " % (device time)" : " % (operators' self time)")});
    if (!r.expertProducts.empty())
        summary.addRow({"expert products", r.expertProducts != "grouped" ? "batched (capacity buffer)"
                                           : cuda                        ? "grouped (at::_grouped_mm)"
                                                                         : "grouped (an mm per expert)"});
    if (r.queueSeconds > 0.0)
        summary.addRow({"host time to queue a step", fixed(1e3 * r.queueSeconds, 1) + " ms of "
                                                         + fixed(1e3 * r.medianStepSeconds, 1) + " ms"});
    if (r.memoryEstimateBytes > 0)
        summary.addRow({"configuration panel's estimate", formatBytes(r.memoryEstimateBytes)});
    const bool counted = r.operators.operators > 0;
    if (counted) {
        summary.addRow({"ATen operators per step", groupDigits(r.operators.operators) + " ("
                                                       + groupDigits(r.operators.innermost()) + " innermost)"});
        std::string waits;
        std::int64_t waiting = 0;
        for (const auto& [name, count] : r.operators.synchronisingInStep()) {
            waits += (waits.empty() ? " (" : ", ") + name + " " + std::to_string(count);
            waiting += count;
        }
        summary.addRow({"operators that wait for the device", std::to_string(waiting) + (waits.empty() ? "" : waits + ")")});
    }
    out << summary.render() << "\n";

    double total = 0.0;
    for (const auto& phase : r.phases)
        total += phase.second;
    std::vector<std::string> columns = {"phase", "ms/step", "share"};
    if (counted)
        columns.push_back("operators");
    TextTable phases(columns);
    for (std::size_t p = 0; p < r.phases.size(); ++p) {
        const auto& [name, seconds] = r.phases[p];
        std::vector<std::string> row = {name, fixed(1e3 * seconds, 2),
                                        fixed(total > 0.0 ? 100.0 * seconds / total : 0.0, 1) + " %"};
        if (counted)
            row.push_back(groupDigits(r.operators.innermost(static_cast<Phase>(p))));
        phases.addRow(row);
    }
    out << phases.render();
    out << "attention, ffn_experts, routing_dispatch_combine and paths_residual are forward time only; the\n"
           "backward pass of all of them is one phase. other: embedding, LayerNorms, head, loss, zero_grad.\n";
    if (counted) {
        out << "operators: innermost ATen operators of one more step (on a GPU each that computes is a kernel\n"
               "launch); the most frequent:";
        for (const auto& [name, count] : r.operators.mostFrequent(8))
            out << " " << name << " " << count;
        out << "\n";
    }
    if (cuda)
        out << "On CUDA the phases come from a second pass of " << r.steps
            << " steps whose scopes synchronise the device (" << fixed(1e3 * r.phaseStepSeconds, 1)
            << " ms per step there).\n";
    if (options.kernels > 0)
        out << "\n" << kernelTables(r.kernels);
    if (!r.warning.empty())
        out << r.warning << "\n";
    return 0;
}

int runCommand(const std::string& command, const std::vector<std::string>& rest, std::ostream& out, std::ostream& err)
{
    // Each command takes only the options that mean something to it.
    const bool train = command == "train", eval = command == "eval";
    std::vector<std::string> flags, options;
    if (train) {
        flags = {"--resume", "--force"};
        options = {"--out", "--steps", "--device", "--threads", "--tensorboard", "--nproc"};
    } else if (eval) {
        flags = {"--json"};
        options = {"--split", "--checkpoint", "--device", "--threads", "--beam", "--length-penalty"};
    } else if (command == "inspect") {
        flags = {"--json", "--heads"};
        options = {"--text", "--image", "--checkpoint"};
    } else {
        flags = {"--force"};
        options = {"--out", "--checkpoint", "--format"};
    }
    const Arguments a(rest, flags, options);
    RunArguments r;
    r.positional = a.positional();
    r.out = a.text("--out");
    r.tensorboard = a.text("--tensorboard");
    r.device = a.text("--device");
    r.split = a.text("--split", "validation");
    r.text = a.text("--text");
    r.image = a.text("--image");
    r.checkpoint = a.text("--checkpoint", "latest");
    r.format = a.text("--format");
    r.steps = a.integer("--steps", -1, 1, std::int64_t{1} << 40);
    r.threads = a.integer("--threads", -1, 0, 4096);
    r.processes = train ? static_cast<int>(a.integer("--nproc", 0, 1, 1024)) : 0;
    if (train) {  // what each process of a local world is started with
        r.arguments.push_back(command);
        for (std::size_t i = 0; i < rest.size(); ++i) {
            if (rest[i] == "--nproc")
                ++i;
            else
                r.arguments.push_back(rest[i]);
        }
    }
    r.resume = a.has("--resume");
    r.force = a.has("--force");
    r.json = a.has("--json");
    r.heads = command == "inspect" && a.has("--heads");
    if (eval) {
        r.beam = a.integer("--beam", kPaperBeamSize, 1, 64);
        r.lengthPenalty = a.real("--length-penalty", kPaperLengthPenalty, 0.0, 10.0);
    }
    if (command == "train")
        return trainCommand(r, out, err);
    if (command == "eval")
        return evalCommand(r, out, err);
    if (command == "inspect")
        return inspectCommand(r, out, err);
    return exportCommand(r, out, err);
}

int ablate(const Arguments& a, std::ostream& out, std::ostream& err)
{
    AblateArguments b;
    b.positional = a.positional();
    int kinds = 0;
    for (const char* kind : {"heads", "experts", "paths", "sublayers"}) {
        if (a.has(std::string("--") + kind)) {
            b.part = kind;
            ++kinds;
        }
    }
    if (kinds > 1)
        throw UsageError("ablate one kind of part at a time: --heads, --experts, --paths or --sublayers");
    b.mode = a.text("--mode", "zero");
    b.checkpoint = a.text("--checkpoint", "latest");
    b.batches = a.integer("--batches", 0, 1, std::int64_t{1} << 40);
    b.text = a.text("--text");
    b.image = a.text("--image");
    b.device = a.text("--device");
    b.threads = a.integer("--threads", -1, 0, 4096);
    b.json = a.has("--json");
    return ablateCommand(b, out, err);
}

int exportTb(const Arguments& a, std::ostream& out, std::ostream& err)
{
    TensorBoardArguments t;
    t.positional = a.positional();
    t.out = a.text("--out");
    t.replace = a.has("--replace");
    return exportTensorBoardCommand(t, out, err);
}

int translate(const Arguments& a, std::ostream& out, std::ostream& err)
{
    TranslateArguments t;
    t.positional = a.positional();
    t.text = a.text("--text");
    t.file = a.text("--file");
    t.checkpoint = a.text("--checkpoint", "latest");
    t.batch = a.integer("--batch", 32, 1, 4096);
    t.beam = a.integer("--beam", kPaperBeamSize, 1, 64);
    t.lengthPenalty = a.real("--length-penalty", kPaperLengthPenalty, 0.0, 10.0);
    t.json = a.has("--json");
    return translateCommand(t, out, err);
}

int average(const Arguments& a, std::ostream& out)
{
    AverageArguments b;
    b.positional = a.positional();
    b.last = a.integer("--last", 5, 1, std::int64_t{1} << 40);
    return averageCommand(b, out);
}

int bleu(const Arguments& a, std::ostream& out)
{
    BleuArguments b;
    b.positional = a.positional();
    b.hypotheses = a.text("--hyp");
    b.references = a.text("--ref");
    b.width = static_cast<int>(a.integer("--width", 2, 0, 10));
    b.json = a.has("--json");
    return bleuCommand(b, out);
}

int corpus(const Arguments& a, std::ostream& out, std::ostream& err)
{
    CorpusArguments c;
    c.positional = a.positional();
    c.from = a.text("--from");
    c.to = a.text("--to");
    c.out = a.text("--out");
    c.keys = a.has("--keys");
    c.list = a.has("--list");
    c.categories = a.text("--categories");
    return corpusCommand(c, out, err);
}

int study(const Arguments& a, std::ostream& out, std::ostream& err)
{
    StudyArguments s;
    s.positional = a.positional();
    s.out = a.text("--out");
    s.report = a.text("--report");
    s.list = a.has("--list");
    s.steps = a.integer("--steps", -1, 1, std::int64_t{1} << 40);
    s.seeds = a.integer("--seeds", -1, 1, 1000);
    s.jobs = a.integer("--jobs", 1, 1, 256);
    s.device = a.text("--device");
    s.threads = a.integer("--threads", -1, 0, 4096);
    return studyCommand(s, out, err);
}

}  // namespace

int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        (args.empty() ? err : out) << kUsage;
        return args.empty() ? 2 : 0;
    }
    // Every core unless a command says otherwise: LibTorch's own default here is one.
    setComputeThreads(0);
    if (args[0] == "--version") {
        out << "widelab-cli " << WIDELAB_VERSION << " (" << runtimeSummary() << ")\n";
        return 0;
    }
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    try {
        if (command == "params")
            return params(Arguments(rest, {"--json"}, {}), out, err);
        if (command == "check")
            return check(Arguments(rest, {}, {}), out, err);
        if (command == "presets")
            return presets(Arguments(rest, {"--json"}, {}), out, err);
        if (command == "attention")
            return attentionCommand(Arguments(rest, {"--json"}, {}).has("--json"), out);
        if (command == "diff") {
            const Arguments diff(rest, {"--json"}, {});
            if (diff.positional().size() != 2)
                throw UsageError("diff takes two runs, configuration files or presets: widelab-cli diff A B");
            return diffCommand(diff.positional()[0], diff.positional()[1], diff.has("--json"), out);
        }
        if (command == "keys")
            return keysCommand(Arguments(rest, {"--json"}, {}).has("--json"), out);
        if (command == "forward")
            return forward(Arguments(rest, {}, {"--batch", "--length", "--steps", "--threads"}), out);
        if (command == "bench")
            return bench(Arguments(rest, {"--json", "--bf16", "--cuda-graph"},
                                   {"--mode", "--batch", "--seq", "--steps", "--warmup", "--threads", "--device",
                                    "--peak-tflops", "--nproc", "--kernels"}),
                         out);
        if (command == "train" || command == "eval" || command == "inspect" || command == "export")
            return runCommand(command, rest, out, err);
        if (command == "average")
            return average(Arguments(rest, {}, {"--last"}), out);
        if (command == "export-tb")
            return exportTb(Arguments(rest, {"--replace"}, {"--out"}), out, err);
        if (command == "ablate")
            return ablate(Arguments(rest, {"--json", "--heads", "--experts", "--paths", "--sublayers"},
                                    {"--mode", "--checkpoint", "--batches", "--text", "--image", "--device", "--threads"}),
                          out, err);
        if (command == "study")
            return study(Arguments(rest, {"--list"}, {"--out", "--report", "--steps", "--seeds", "--jobs", "--device", "--threads"}),
                         out, err);
        if (command == "bleu")
            return bleu(Arguments(rest, {"--json"}, {"--hyp", "--ref", "--width"}), out);
        if (command == "translate")
            return translate(Arguments(rest, {"--json"},
                                       {"--text", "--file", "--checkpoint", "--batch", "--beam", "--length-penalty"}),
                             out, err);
        if (command == "corpus")
            return corpus(Arguments(rest, {"--keys", "--list"}, {"--from", "--to", "--out", "--categories"}), out, err);
        throw UsageError("unknown command \"" + command + "\"");
    } catch (const UsageError& error) {
        err << "widelab-cli " << command << ": " << error.what() << "\n\n" << kUsage;
        return 2;
    } catch (const ConfigError& error) {
        err << error.what() << "\n";
        return 1;
    } catch (const c10::Error& error) {  // LibTorch's own: its first line, without the C++ backtrace
        const std::string what = error.what_without_backtrace();
        err << "widelab-cli " << command << ": " << what.substr(0, what.find('\n')) << "\n";
        return 1;
    } catch (const std::exception& error) {
        err << "widelab-cli " << command << ": " << error.what() << "\n";
        return 1;
    }
}

}  // namespace widelab
