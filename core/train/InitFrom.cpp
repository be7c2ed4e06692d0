#include "InitFrom.h"

#include "run/RunDirectory.h"
#include "run/RunLayout.h"
#include "vocab/Format.h"

#include <map>

namespace widelab {

namespace {

// Every parameter and buffer of a model by name, parameters first.
std::vector<std::pair<std::string, torch::Tensor>> namedTensors(const torch::nn::Module& model)
{
    std::vector<std::pair<std::string, torch::Tensor>> all;
    for (const auto& item : model.named_parameters())
        all.emplace_back(item.key(), item.value());
    for (const auto& item : model.named_buffers())
        all.emplace_back(item.key(), item.value());
    return all;
}

std::string joined(const std::vector<std::string>& names)
{
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : ", ") + name;
    return text;
}

}  // namespace

std::string InitFromReport::text() const
{
    std::string text = "train.init_from: " + std::to_string(loaded.size()) + " tensors ("
                       + groupDigits(loadedValues) + " values) loaded from " + checkpoint.string() + ", step "
                       + std::to_string(step);
    if (headKept)
        text += ", the task's head included (the same task and classes)";
    if (!initialised.empty())
        text += "; newly initialised: " + joined(initialised);
    if (!leftOut.empty())
        text += "; left out, the source's head: " + joined(leftOut);
    return text;
}

// Checked when a run starts, not with the document: a fine-tuned run resumes from
// its own checkpoints even when the run it started from is gone.
void checkInitFromFolder(const InitFromSpec& from)
{
    std::error_code error;
    if (!std::filesystem::is_regular_file(runlayout::configFile(from.directory), error))
        throw ConfigError({{"train.init_from", from.directory.string() + " is not a run folder: it has no config.json"}});
}

InitFromReport initialiseFrom(const RunDocument& run, const std::vector<std::string>& labels, WideTransformerImpl& model)
{
    const InitFromSpec from = parseInitFrom(run.train.initFrom);
    const std::string which = from.checkpoint == "latest" || from.checkpoint == "best"
                                  ? from.checkpoint
                                  : runlayout::checkpointFileName(std::stoll(from.checkpoint));
    checkInitFromFolder(from);
    const OpenedRun source = openRun(from.directory, which);

    InitFromReport report;
    report.checkpoint = source.checkpoint;
    report.step = source.state.step;
    report.warnings = source.warnings;
    report.headKept = source.document.task.kind == run.task.kind && source.document.model.head == run.model.head
                      && source.labels == labels;

    auto mismatch = [&](const std::string& what) {
        std::string reason = what;
        const std::vector<std::string> keys =
            differingKeys(source.document.toJson().at("model"), run.toJson().at("model"), "model");
        reason += keys.empty() ? "" : " (the runs differ in " + joined(keys) + ")";
        return ConfigError({{"train.init_from", reason + ": a run starts from another's weights only where its "
                                                         "model has the same body"}});
    };

    // The commonest mismatch, said in the user's terms: a classifier's CLS token
    // (and its position) that a language model never had.
    if (run.model.usesClsToken() && !source.document.model.usesClsToken())
        throw ConfigError({{"model.pooling", "\"cls\" adds a token and a position that the model of train.init_from ("
                                                 + from.directory.string() + ") never learned; a classifier started "
                                                 "from it pools by \"mean\""}});

    std::map<std::string, torch::Tensor> given;
    for (auto& [name, tensor] : namedTensors(*source.model))
        given.emplace(name, tensor);
    const std::string file = source.checkpoint.string();

    torch::NoGradGuard noGrad;
    for (auto& [name, tensor] : namedTensors(model)) {
        const bool head = WideTransformerImpl::isTaskHead(name);
        const auto found = given.find(name);
        if (head && !report.headKept) {
            report.initialised.push_back(name);
            continue;
        }
        // A pair task's segment embeddings are new to a model of single texts (a masked LM): they start anew.
        if (found == given.end() && name.rfind("embed.segment.", 0) == 0) {
            report.initialised.push_back(name);
            continue;
        }
        if (found == given.end())
            throw mismatch(file + " has no tensor " + name + ", which this run's model has");
        if (!found->second.sizes().equals(tensor.sizes()))
            throw mismatch(name + " is " + c10::str(found->second.sizes()) + " in " + file + " but "
                           + c10::str(tensor.sizes()) + " in this run's model");
        tensor.copy_(found->second);
        report.loaded.push_back(name);
        report.loadedValues += tensor.numel();
        given.erase(found);
    }
    for (const auto& [name, tensor] : given) {
        if (!WideTransformerImpl::isTaskHead(name))
            throw mismatch(file + " holds " + name + ", which this run's model has not");
        report.leftOut.push_back(name);
    }
    return report;
}

}  // namespace widelab
