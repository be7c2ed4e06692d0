#include "RunCommands.h"

#include "vocab/EvaluationText.h"
#include "vocab/Utf8.h"

#include "StopOnSignals.h"
#include "TextTable.h"
#include "vocab/JsonText.h"
#include "config/Presets.h"
#include "runtime/Runtime.h"
#include "runtime/SystemError.h"
#include "task/ImageTask.h"
#include "LocalWorld.h"
#include "dist/Collective.h"
#include "dist/World.h"
#include "run/RunDirectory.h"
#include "run/RunEvaluation.h"
#include "run/RunLayout.h"
#include "export/Safetensors.h"
#include "export/ExportSet.h"
#include "export/TensorBoardExport.h"
#include "train/Trainer.h"
#include "measure/ValidationInsight.h"

#include <torch/serialize.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <unistd.h>

namespace widelab {
namespace {

// A translation run's BLEU and chrF in an evaluation's line; nothing for other runs.
// A progress bar on a terminal, plain lines otherwise. Observes the trainer from
// its construction on, so that what resuming says (a checkpoint passed over)
// reaches the terminal; the run's length is known once it is constructed.
class Progress : public TrainingObserver {
public:
    Progress(std::ostream& out, bool terminal) : m_out(out), m_terminal(terminal) {}

    void setTotalSteps(std::int64_t totalSteps) { m_total = totalSteps; }

    void onSnapshot(const TrainingSnapshot& s) override
    {
        const double perStep = s.stepSeconds;
        const double left = perStep * static_cast<double>(m_total - s.step);
        std::ostringstream line;
        line << "step " << s.step << "/" << m_total << std::fixed << std::setprecision(4) << "  loss " << s.loss
             << std::setprecision(1) << "  acc " << 100.0 * s.accuracy << "%  " << std::setprecision(0)
             << s.tokensPerSecond << " tok/s  left " << durationText(left);
        if (m_terminal) {
            const int width = 24;
            const auto done = static_cast<int>(width * static_cast<double>(s.step) / static_cast<double>(m_total));
            m_out << "\r[" << std::string(static_cast<std::size_t>(done), '#')
                  << std::string(static_cast<std::size_t>(width - done), '.') << "] " << line.str() << "   " << std::flush;
        } else {
            m_out << line.str() << "\n" << std::flush;
        }
    }

    void onEvaluation(const EvaluationResult& r) override
    {
        const std::string line = r.split + " at step " + std::to_string(r.step) + ": " + evaluationText(r);
        m_out << (m_terminal ? "\r" : "") << line << (m_terminal ? std::string(40, ' ') : "") << "\n" << std::flush;
    }

    void onMessage(const std::string& level, const std::string& text) override
    {
        if (level == "warning" || level == "error")
            m_out << (m_terminal ? "\n" : "") << level << ": " << text << "\n" << std::flush;
    }

private:
    std::ostream& m_out;
    std::int64_t m_total = 0;
    bool m_terminal;
};

// A trainer's warnings and errors, one a line (on stderr, for commands whose
// standard output is their result).

void printWarnings(const OpenedRun& opened, std::ostream& err)
{
    for (const std::string& text : opened.warnings)
        err << "warning: " << text << "\n";
}

std::string top(const std::vector<float>& values, const std::vector<std::string>& labels, std::size_t count)
{
    std::vector<std::size_t> order(values.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(count, order.size())),
                      order.end(), [&](std::size_t a, std::size_t b) { return values[a] > values[b]; });
    std::ostringstream text;
    for (std::size_t i = 0; i < std::min(count, order.size()); ++i)
        text << (i ? ", " : "") << std::quoted(labels[order[i]]) << " " << std::fixed << std::setprecision(3)
             << values[order[i]];
    return text.str();
}

int trainRank(const RunArguments& a, const World& world, RunDocument run, std::ostream& out, std::ostream& err);

}  // namespace

void Warnings::onMessage(const std::string& level, const std::string& text)
{
    if (level == "warning" || level == "error")
        m_err << level << ": " << text << "\n" << std::flush;
    else if (m_withProgress && level == "info")
        m_err << text << "\n" << std::flush;
}

int trainCommand(const RunArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() > 1 || (a.positional.empty() && !a.resume) || a.out.empty())
        throw RunUsageError("usage: widelab-cli train CONFIG --out RUN_DIR [--steps N] [--device D] [--threads N] [--force] "
                            "[--tensorboard LOGDIR] [--nproc N]\n"
                            "       widelab-cli train --resume --out RUN_DIR [--steps N] [--device D] [--threads N] [--force] "
                            "[--tensorboard LOGDIR] [--nproc N]");
    // One rank of a distributed run (started by torchrun, srun, mpirun or --nproc)?
    const World world = worldFromEnvironment();
    // Resuming without a configuration continues the run as RUN_DIR/config.json says;
    // with one, the trainer checks that it is the run's own.
    RunDocument run = a.positional.empty() ? readRunDocument(a.out)
                                           : loadRunDocument(resolveConfigPath(a.positional.front()));
    if (a.processes > 1 && world.distributed())
        throw RunUsageError("--nproc " + std::to_string(a.processes) + ": this process is already rank "
                            + std::to_string(world.rank) + " of " + std::to_string(world.size) + " (started by "
                            + world.launcher + "); leave --nproc to one launcher");
    // --nproc, else the document's train.processes; under a launcher, the launcher's count.
    const int processes = a.processes > 0 ? a.processes : static_cast<int>(run.train.processes);
    if (processes > 1 && !world.distributed())  // a document that cannot be read stopped above, once
        return launchLocalWorld(processes, a.arguments, err);
    if (world.rank > 0) {
        static std::ostream nowhere(nullptr);  // rank 0 speaks for the run; the others only fail aloud
        return trainRank(a, world, std::move(run), nowhere, err);
    }
    return trainRank(a, world, std::move(run), out, err);
}

namespace {

int trainRank(const RunArguments& a, const World& world, RunDocument run, std::ostream& out, std::ostream& err)
{
    for (const ConfigIssue& warning : run.warnings)  // the trainer logs them too
        if (world.rank == 0)
            err << "warning: " << warning.text() << "\n";
    TrainerOptions options;
    options.resume = a.resume;
    if (a.steps > 0)
        options.steps = a.steps;
    if (!a.device.empty())
        options.device = a.device;
    if (a.threads >= 0)
        options.threads = a.threads;
    options.force = a.force;
    if (world.distributed()) {
        // The ranks wait this long for each other, from the rendezvous on.
        options.world = Collective::join(world, std::chrono::seconds(run.train.collectiveTimeoutSeconds));
    }

    const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
    Progress progress(out, terminal);
    options.observers.push_back(&progress);
    std::unique_ptr<Trainer> made;
    try {
        made = std::make_unique<Trainer>(std::move(run), a.out, options);
    } catch (const InsufficientMemory& error) {
        throw InsufficientMemory(std::string(error.what()) + ", or train anyway with --force");
    }
    Trainer& trainer = *made;
    progress.setTotalSteps(trainer.totalSteps());
    // Made once the trainer is (a resume has trimmed metrics.jsonl by then); an
    // unwritable LOGDIR stops the command before any step.
    std::unique_ptr<TensorBoardFollower> tensorboard;
    if (!a.tensorboard.empty()) {
        tensorboard = std::make_unique<TensorBoardFollower>(a.out, a.tensorboard, trainer.step());
        trainer.addObserver(tensorboard.get());
    }
    const std::string title = !trainer.document().name.empty() ? trainer.document().name
                              : a.positional.empty()          ? a.out
                                                              : a.positional.front();
    out << "training " << title << " on "
        << trainer.device().str()
        << (world.distributed() ? " and " + std::to_string(world.size - 1) + " more processes" : std::string())
        << " into " << a.out << (trainer.step() > 0 ? " from step " + std::to_string(trainer.step()) : "")
        << "\n";
    out << runtimeSummary() << "\n";
    if (tensorboard)
        out << "TensorBoard events: " << tensorboard->file().string() << "\n";
    if (const BlasInfo blas = blasLibrary(); blas.reference)
        err << slowMatmulWarning(0.0, computeThreads(), blas) << "\n";

    StopOnSignals signals;
    const TrainSummary summary = trainer.run(StopOnSignals::flag());
    if (terminal)
        out << "\n";
    if (tensorboard && !tensorboard->error().empty())
        err << "warning: TensorBoard events stopped: " << tensorboard->error() << "\n";
    if (summary.outcome == TrainOutcome::NonFinite || summary.outcome == TrainOutcome::OutOfMemory) {
        err << summary.message << "\n";
        return 1;
    }
    out << summary.message << "; checkpoint in " << runlayout::checkpointsDirectory(a.out).string() << "\n";
    return 0;
}

}  // namespace

int evalCommand(const RunArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1)
        throw RunUsageError("usage: widelab-cli eval RUN_DIR [--split validation|test] [--checkpoint latest|best|FILE] "
                            "[--beam N] [--length-penalty A] [--json]");
    if (a.split != "validation" && a.split != "test")
        throw RunUsageError("--split: \"" + a.split + "\" is not validation or test");
    Warnings warnings(err, /*withProgress=*/true);
    const EvaluationResult r =
        evaluateRun(a.positional.front(), a.split == "test" ? Split::Test : Split::Validation, a.checkpoint,
                    a.device.empty() ? std::nullopt : std::optional<std::string>(a.device),
                    a.threads >= 0 ? std::optional<std::int64_t>(a.threads) : std::nullopt, {&warnings}, a.beam,
                    a.lengthPenalty)
            .result;
    if (a.json) {
        out << toJson(r).dump(2) << "\n";
        return 0;
    }
    out << r.split << " split, step " << r.step << ", " << r.examples << " examples: " << evaluationText(r) << "\n";
    return 0;
}

int inspectCommand(const RunArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1 || a.text.empty() == a.image.empty())
        throw RunUsageError("usage: widelab-cli inspect RUN_DIR --text \"...\" | --image FILE|validation:N [--heads] [--json]");
    OpenedRun opened = openRun(a.positional.front(), a.checkpoint);
    printWarnings(opened, err);
    const ModelConfig& model = opened.document.model;
    if (model.imageInput() != !a.image.empty())
        throw RunUsageError(model.imageInput() ? "the run's model reads images: inspect it with --image FILE|validation:N"
                                               : "the run's model reads text: inspect it with --text \"...\"");
    if (a.heads && model.isTranslation())
        throw RunUsageError("--heads: head roles are measured on encoder-only models so far, not on a translation "
                            "model's encoder and decoder");
    ProbeResult r;
    if (model.imageInput()) {
        // validation:N needs the run's data (generated, or its folder); a file does not.
        std::unique_ptr<ImageTask> task;
        if (a.image.rfind("validation:", 0) == 0)
            task = std::make_unique<ImageTask>(prepareImageTask(opened.document, opened.labels, &opened.imageStats));
        std::int64_t label = -1;
        const Image image = probeImage(a.image, task ? task->validation.get() : nullptr, imageFormat(model), label);
        r = probeImageModel(*opened.model, opened.labels, image, opened.imageStats, a.image);
        r.label = label;
    } else {
        r = probeModel(*opened.model, opened.tokenizer, opened.labels, a.text, opened.document.sequenceLength());
    }
    r.step = opened.state.step;
    std::optional<HeadRoleScores> roles;
    if (a.heads) {
        // The text alone (and, for a language model, repeated random sequences).
        InsightInputs inputs;
        if (model.imageInput()) {
            std::int64_t label = -1;
            std::unique_ptr<ImageTask> task;
            if (a.image.rfind("validation:", 0) == 0)
                task = std::make_unique<ImageTask>(prepareImageTask(opened.document, opened.labels, &opened.imageStats));
            inputs.probes.push_back(
                imageTensor(probeImage(a.image, task ? task->validation.get() : nullptr, imageFormat(model), label),
                            opened.imageStats));
        } else {
            const std::vector<std::int64_t> ids =
                probeTokenIds(opened.tokenizer, opened.document.model, a.text, opened.document.sequenceLength());
            inputs.probes.push_back(torch::tensor(ids, torch::kLong).unsqueeze(0));
        }
        roles = measureValidationInsights(*opened.model, inputs, r.step, static_cast<std::uint64_t>(opened.document.train.seed)).heads;
    }
    if (a.json) {
        nlohmann::json line = toJson(r);
        if (roles) {
            // One object per layer and head: its scores by role, and the role it is drawn as.
            nlohmann::json heads = nlohmann::json::array();
            for (std::size_t l = 0; l < roles->scores.size(); ++l) {
                for (std::size_t h = 0; h < roles->scores[l].size(); ++h) {
                    nlohmann::json head = {{"layer", l}, {"head", h}};
                    for (std::size_t k = 0; k < roles->roles.size(); ++k) {
                        std::string key = roles->roles[k];
                        std::replace(key.begin(), key.end(), ' ', '_');
                        head[key] = roles->scores[l][h][k];
                    }
                    head["dominant"] = roles->roles[static_cast<std::size_t>(roles->dominant[l][h])];
                    heads.push_back(std::move(head));
                }
            }
            line["head_roles"] = std::move(heads);
        }
        out << line.dump() << "\n";
        return 0;
    }
    if (r.cutTokens > 0)
        out << "the text is longer than the run's sequence length (" << opened.document.sequenceLength()
            << " tokens): the model reads its first " << opened.document.sequenceLength() << " tokens; the last "
            << r.cutTokens << " were cut\n";
    if (model.isTranslation())  // greedy; an untrained model's may be empty
        out << "translation: " << replaceInvalidUtf8(r.translation) << "\n";
    out << "step " << r.step << ", " << r.tokens.size() << " tokens:";
    for (const auto& token : r.tokens)
        out << " " << std::quoted(token);
    out << "\n\nattention: for each head, the token each query attends to most\n";
    for (std::size_t layer = 0; layer < r.attention.size(); ++layer) {
        for (std::size_t head = 0; head < r.attention[layer].size(); ++head) {
            out << "  layer " << layer << " head " << std::setw(2) << head << ":";
            for (const auto& row : r.attention[layer][head]) {
                const auto best = std::max_element(row.begin(), row.end()) - row.begin();
                out << " " << r.tokens[static_cast<std::size_t>(best)];
            }
            out << "\n";
        }
    }
    if (!r.experts.empty()) {
        out << "\nrouting: the experts of each token in each routing block (-1: dropped)\n";
        for (std::size_t block = 0; block < r.experts.size(); ++block) {
            out << "  block " << block << ":";
            for (std::size_t token = 0; token < r.experts[block].size(); ++token) {
                out << " " << r.tokens[token] << "->";
                for (std::size_t c = 0; c < r.experts[block][token].size(); ++c)
                    out << (c ? "," : "") << r.experts[block][token][c];
            }
            out << "\n";
        }
    }
    if (!r.logitLens.empty()) {
        out << "\nlogit lens: the prediction read after each sublayer\n";
        for (const LensStage& stage : r.logitLens) {
            std::vector<std::string> labels;
            for (std::size_t i = 0; i < stage.distribution.size(); ++i) {
                const std::size_t column = r.lensColumns.empty() ? i : static_cast<std::size_t>(r.lensColumns[i]);
                labels.push_back(column < r.predictionLabels.size() ? r.predictionLabels[column] : std::to_string(column));
            }
            out << "  block " << stage.block << " " << std::setw(9) << std::left << stage.sublayer << std::right << " "
                << top(stage.distribution, labels, 3) << "\n";
        }
    }
    if (roles) {
        out << "\nhead roles: the role each head is drawn as, and its score\n";
        for (std::size_t l = 0; l < roles->scores.size(); ++l) {
            out << "  layer " << l << ":";
            for (std::size_t h = 0; h < roles->scores[l].size(); ++h) {
                const auto role = static_cast<std::size_t>(roles->dominant[l][h]);
                out << (h % 4 == 0 ? "\n   " : "") << " h" << h << " " << roles->roles[role] << " " << std::fixed
                    << std::setprecision(2) << roles->scores[l][h][role] << ";";
            }
            out << "\n";
        }
    }
    out << "\nprediction: " << top(r.prediction, r.predictionLabels, 5) << "\n";
    if (r.label >= 0 && r.label < static_cast<std::int64_t>(r.predictionLabels.size()))
        out << "true class: " << r.predictionLabels[static_cast<std::size_t>(r.label)] << "\n";
    return 0;
}

namespace {

// export's format: --format when given, else --out's extension (.safetensors or .pt),
// else safetensors; a --format that the extension contradicts is a usage error.
std::string exportFormat(const RunArguments& a)
{
    const std::string extension = std::filesystem::path(a.out).extension().string();
    const std::string implied = extension == ".pt" ? "pt" : extension == ".safetensors" ? "safetensors" : "";
    if (!a.format.empty() && a.format != "safetensors" && a.format != "pt")
        throw RunUsageError("--format " + a.format + ": expected safetensors or pt");
    if (!a.format.empty() && !implied.empty() && a.format != implied)
        throw RunUsageError("--format " + a.format + " disagrees with --out " + a.out + " (a " + extension
                            + " file): change one of them");
    if (!a.format.empty())
        return a.format;
    return implied.empty() ? "safetensors" : implied;
}

// A run directory: where a trainer writes (its checkpoints, its config.json).
bool isRunDirectory(const std::filesystem::path& folder)
{
    std::error_code error;
    return std::filesystem::is_directory(runlayout::checkpointsDirectory(folder), error)
           && std::filesystem::exists(runlayout::configFile(folder), error);
}

// An earlier export of this name (in either format): NAME.json holds a run document.
bool earlierExport(const std::filesystem::path& weights)
{
    const std::filesystem::path config = std::filesystem::path(weights).replace_extension(".json");
    std::error_code error;
    if (!std::filesystem::is_regular_file(config, error))
        return false;
    std::ifstream in(config, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const auto json = tryParseJsonText(text.str());
    return json && json->is_object() && json->contains("model");
}

// Refuses targets an export must not replace: anything in a run directory (its
// checkpoints), anything but a regular file (a device, a folder), and, unless
// `force`, files that an earlier export did not write.
void checkExportTargets(const std::filesystem::path& weights, const std::vector<std::filesystem::path>& sidecars,
                        bool force)
{
    const std::filesystem::path folder = std::filesystem::absolute(weights).parent_path();
    for (const std::filesystem::path& candidate : {folder, folder.parent_path()})
        if (isRunDirectory(candidate) && (candidate == folder || folder.filename() == "checkpoints"))
            throw std::runtime_error("--out " + weights.string() + ": " + candidate.string() + " is a run directory, "
                                "whose files an export would replace; export outside it");
    std::vector<std::filesystem::path> targets = {weights};
    targets.insert(targets.end(), sidecars.begin(), sidecars.end());
    std::vector<std::string> foreign;
    for (const std::filesystem::path& target : targets) {
        std::error_code error;
        const std::filesystem::file_status status = std::filesystem::symlink_status(target, error);
        if (!std::filesystem::exists(status))
            continue;
        if (!std::filesystem::is_regular_file(status))
            throw std::runtime_error("--out " + weights.string() + ": " + target.string()
                                + " exists and is not a regular file (a device, a folder, a link); export to another "
                                  "name");
        foreign.push_back(target.string());
    }
    if (foreign.empty() || force || earlierExport(weights))
        return;
    std::string list;
    for (const std::string& name : foreign)
        list += (list.empty() ? "" : ", ") + name;
    throw std::runtime_error("--out " + weights.string() + ": " + list + (foreign.size() == 1 ? " exists" : " exist")
                        + " and " + (foreign.size() == 1 ? "is" : "are") + " not an earlier export (no "
                        + std::filesystem::path(weights).replace_extension(".json").string()
                        + " run document beside the weights); export to another name, or --force to replace");
}

}  // namespace

int exportCommand(const RunArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1 || a.out.empty())
        throw RunUsageError("usage: widelab-cli export RUN_DIR --out model.safetensors [--format safetensors|pt]");
    const std::filesystem::path weights = a.out;
    if (weights.extension() == ".json")
        throw RunUsageError("--out " + a.out + ": the weights go to a .safetensors or .pt file, the configuration "
                            "beside it as .json");
    const std::string format = exportFormat(a);
    const std::filesystem::path run = a.positional.front();
    const std::string stem = weights.stem().string();
    const std::vector<std::filesystem::path> sources = {runlayout::tokenizerFile(run), runlayout::imageStatsFile(run),
                                                        runlayout::labelsFile(run)};
    std::vector<std::filesystem::path> sidecars = {std::filesystem::path(weights).replace_extension(".json")};
    for (const std::filesystem::path& source : sources)
        sidecars.push_back(weights.parent_path() / (stem + "." + source.filename().string()));
    // From the first look at the folder to the last rename: another export of
    // this name, renaming its set in, is never seen half done.
    const std::filesystem::path folder = weights.parent_path().empty() ? "." : weights.parent_path();
    const ExportTurn turn(folder, weights);
    checkExportTargets(weights, sidecars, a.force);
    const OpenedRun opened = openRun(run, a.checkpoint);
    printWarnings(opened, err);
    SafetensorsTensors tensors;
    for (const auto& item : opened.model->named_parameters())
        tensors.emplace(item.key(), item.value().detach().contiguous());
    for (const auto& item : opened.model->named_buffers())
        tensors.emplace(item.key(), item.value().detach().contiguous());
    std::vector<ExportFile> files;
    if (format == "pt") {
        c10::Dict<std::string, torch::Tensor> stateDict;
        for (const auto& [name, tensor] : tensors)
            stateDict.insert(name, tensor);
        const std::vector<char> bytes = torch::pickle_save(c10::IValue(stateDict));
        files.push_back({weights.filename().string(), std::string(bytes.begin(), bytes.end())});
    } else {
        const SafetensorsMetadata metadata = {{"format", "pt"},
                                              {"config", opened.document.toJson().dump()},
                                              {"step", std::to_string(opened.state.step)}};
        files.push_back({weights.filename().string(), safetensorsBytes(tensors, metadata)});
    }
    // What rebuilds the inputs in Python, as NAME.tokenizer.json and so on (python/widelab finds them there).
    std::vector<std::string> stale;
    for (const std::filesystem::path& source : sources) {
        const std::string copy = stem + "." + source.filename().string();
        std::string content;
        try {
            content = readFileBytes(source);
        } catch (const FileError& error) {
            if (error.error() != ENOENT)
                throw CheckpointError(error.what());
            stale.push_back(copy);  // an earlier export's, if there is one
            continue;
        }
        files.push_back({copy, std::move(content)});
    }
    // And whatever else an earlier export of this name recorded (its weights in the other format).
    const std::string configName = std::filesystem::path(weights).replace_extension(".json").filename().string();
    for (const std::string& name : exportRecordedFiles(folder / configName))
        if (std::none_of(files.begin(), files.end(), [&](const ExportFile& file) { return file.name == name; }))
            stale.push_back(name);
    std::erase_if(stale, [&](const std::string& name) {
        std::error_code error;
        return !std::filesystem::is_regular_file(std::filesystem::symlink_status(folder / name, error));
    });
    writeExportSet(turn, files, opened.document.toJson(), configName, stale);
    std::vector<std::string> written;
    for (const ExportFile& file : files)
        written.push_back((weights.parent_path() / file.name).string());
    written.insert(written.begin() + 1, (weights.parent_path() / configName).string());
    out << "wrote";
    for (std::size_t i = 0; i < written.size(); ++i)
        out << (i == 0 ? " " : i + 1 == written.size() ? " and " : ", ") << written[i];
    out << " (" << format << ", " << tensors.size() << " tensors, step " << opened.state.step
        << "); docs/model.md maps every key to the architecture\n";
    return 0;
}

}  // namespace widelab
