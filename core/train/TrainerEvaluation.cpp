#include "Trainer.h"

#include "measure/Bleu.h"
#include "measure/ValidationInsight.h"
#include "model/BatchDecoding.h"
#include "vocab/Utf8.h"
#include "run/RunDirectory.h"
#include "data/PairInput.h"
#include "task/ImageTask.h"

#include <algorithm>
#include <cmath>

// The trainer's measurements outside the loop: evaluation of a split (whole or
// ablated), the validation insights, and probes of texts and images.

namespace widelab {

namespace {

// A whole split of this many examples or more reports its evaluation's progress.
constexpr std::int64_t kEvaluationProgressFrom = 1000;

// The class of the validation example whose whole text `text` is, among the
// first few that the default probe is chosen from; -1 when it is none of them
// (a typed text, a cut example, a language model's text).
// A text pair's example is read back as "first || second" (separator: its model's, else -1).
std::int64_t knownLabel(const Dataset& validation, const Tokenizer& tokenizer, const std::string& text,
                        std::int64_t separator)
{
    constexpr std::int64_t kCandidates = 64;  // as defaultProbeText
    for (std::int64_t i = 0; i < std::min(kCandidates, validation.size()); ++i) {
        const Example example = validation.get(i);
        const std::string exampleText =
            separator >= 0 ? pairText(tokenizer, example.ids, separator) : tokenizer.decode(example.ids);
        if (example.label >= 0 && exampleText == text)
            return example.label;
    }
    return -1;
}

}  // namespace

EvaluationResult Trainer::evaluate(Split split, std::int64_t maxBatches, bool reportProgress)
{
    const EvaluationResult result = measure(split, maxBatches, {}, reportProgress);
    for (auto* observer : m_observers)
        observer->onEvaluation(result);
    return result;
}

EvaluationResult Trainer::evaluateAblated(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations)
{
    return measure(split, maxBatches, ablations);
}

EvaluationResult Trainer::measure(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations,
                                  bool reportProgress)
{
    Dataset& data = split == Split::Test ? *m_data.test : *m_data.validation;
    const bool perToken = m_run.model.predictsTokens();  // a target at every position
    const std::int64_t batchSize = m_run.train.batchSize;
    torch::NoGradGuard noGrad;
    m_model->eval();
    EvaluationResult result;
    result.step = m_state.step;
    result.split = toString(split);
    double lossSum = 0.0, weightSum = 0.0, hits = 0.0, counted = 0.0;
    std::int64_t batches = 0;
    std::int64_t reportedTenths = 0;
    for (std::int64_t start = 0; start < data.size(); start += batchSize) {
        if (maxBatches > 0 && batches++ >= maxBatches)
            break;
        // A distributed run evaluates to the end: its ranks agree on stopping between steps.
        if (m_control != nullptr && !m_world && m_control->stopRequested())
            throw Interrupted{};
        std::vector<Example> examples;
        for (std::int64_t i = start; i < std::min(data.size(), start + batchSize); ++i)
            examples.push_back(data.get(i));
        const Batch batch = makeDeviceBatch(examples, /*training=*/false, start);  // never augmented
        const torch::Tensor& input = batch.pixels.defined() ? batch.pixels : batch.ids;
        const TargetInput target{batch.targetIds, modelTargetMask(batch)};  // translation: the decoder's input
        ModelOutput output;
        if (ablations.empty()) {
            output = m_model->forward(input, modelMask(batch), target, batch.routed);
        } else {
            ForwardTrace trace;
            trace.captureAttention = trace.captureRouting = false;
            trace.ablations = ablations;
            output = m_model->inspect(input, modelMask(batch), trace, target, batch.routed);
        }
        const torch::Tensor counts = correctCounts(output.logits, batch, perToken).to(torch::kCPU);
        const double h = counts[0].item<double>(), c = counts[1].item<double>();
        const double weight = perToken ? c : static_cast<double>(examples.size());
        lossSum += taskLoss(m_run.model, output.logits, batch.targets, targetPositions(batch)).item<double>() * weight;
        weightSum += weight;
        hits += h;
        counted += c;
        result.examples += static_cast<std::int64_t>(examples.size());
        // A long evaluation says how far it has come, at each tenth.
        const std::int64_t tenths = result.examples * 10 / data.size();
        if (reportProgress && data.size() >= kEvaluationProgressFrom && tenths > reportedTenths) {
            reportedTenths = tenths;
            message("info", "evaluating the " + result.split + " split: " + std::to_string(10 * tenths) + "% ("
                                + std::to_string(result.examples) + " of " + std::to_string(data.size())
                                + " examples)");
        }
    }
    result.loss = weightSum > 0 ? lossSum / weightSum : 0.0;
    result.accuracy = counted > 0 ? hits / counted : 0.0;
    result.perplexity = perToken ? std::exp(result.loss) : 0.0;
    // An evaluation while training (run() sets m_control) translates the split's
    // first bleu_sentences; one outside training (widelab-cli eval) all of them.
    if (m_run.model.isTranslation() && ablations.empty())
        scoreTranslations(data, m_control != nullptr ? m_run.train.bleuSentences : data.size(), result, reportProgress);
    return result;
}

void Trainer::scoreTranslations(Dataset& data, std::int64_t sentences, EvaluationResult& result, bool reportProgress)
{
    const std::int64_t count = std::min(sentences, data.size());
    if (count <= 0)
        return;
    std::vector<std::vector<std::int64_t>> sources;
    std::vector<std::string> hypotheses, references;
    for (std::int64_t i = 0; i < count; ++i) {
        Example example = data.get(i);
        references.push_back(m_data.tokenizer.decode(example.targets));  // </s> is not text
        sources.push_back(std::move(example.ids));
    }
    DecodeOptions options = decodingFor(m_data.tokenizer);
    if (m_control == nullptr) {  // outside training: the search the caller asked for
        options.beamSize = m_options.beamSize;
        options.lengthPenalty = m_options.lengthPenalty;
    }
    std::int64_t done = 0, reportedTenths = 0;
    const auto between = [&] {
        if (m_control != nullptr && !m_world && m_control->stopRequested())
            throw Interrupted{};
        const std::int64_t tenths = done * 10 / count;
        if (reportProgress && count >= kEvaluationProgressFrom && tenths > reportedTenths) {
            reportedTenths = tenths;
            message("info", "translating the " + result.split + " split: " + std::to_string(10 * tenths) + "% ("
                                + std::to_string(done) + " of " + std::to_string(count) + " sentences)");
        }
        done += std::min(m_run.train.batchSize, count - done);
    };
    for (const std::vector<std::int64_t>& ids : decodeAll(*m_model, sources, options, m_run.train.batchSize, between))
        hypotheses.push_back(replaceInvalidUtf8(m_data.tokenizer.decode(ids)));  // bytes may end mid-character
    result.bleu = corpusBleu(hypotheses, references).score;
    result.chrf = corpusChrf(hypotheses, references).score;
    result.translated = count;
}

// Head roles and expert specialisation on the first validation examples and the
// probes (ValidationInsight.h), to metrics.jsonl and the observers.
void Trainer::measureInsights()
{
    // Head roles and expert intake read one stack of blocks over one sequence; a
    // translation model's decoder and cross-attention have no such measures yet.
    if (m_run.model.isTranslation())
        return;
    constexpr std::int64_t kSample = 32;
    InsightInputs inputs;
    const std::int64_t chunk = insightChunkSize(m_run.model, m_run.model.positions());
    std::vector<Example> examples;
    auto addSample = [&] {
        Batch batch = makeDeviceBatch(examples, /*training=*/false);
        if (m_data.masking)  // a masked language model is inspected on the text itself, nothing hidden
            batch.ids = batch.targets;
        inputs.sample.push_back(std::move(batch));
        examples.clear();
    };
    for (std::int64_t i = 0; i < std::min(kSample, m_data.validation->size()); ++i) {
        examples.push_back(m_data.validation->get(i));
        if (static_cast<std::int64_t>(examples.size()) == chunk)
            addSample();
    }
    if (!examples.empty())
        addSample();
    for (const std::string& text : m_run.train.probes) {
        try {
            if (m_data.imageStats) {
                std::int64_t label = -1;
                inputs.probes.push_back(imageTensor(probeImage(text, m_data.validation.get(), imageFormat(m_run.model), label),
                                                    *m_data.imageStats));
            } else {
                const std::vector<std::int64_t> ids = probeTokenIds(m_data.tokenizer, m_run.model, text, m_run.sequenceLength());
                inputs.probes.push_back(torch::tensor(ids, torch::kLong).unsqueeze(0));
            }
        } catch (const std::exception&) {
            // probeAll says why a probe cannot be read
        }
    }
    if (!m_data.imageStats)
        inputs.tokenText = [this](std::int64_t id) { return inputTokenText(m_data.tokenizer, m_run.model, id); };
    if (m_run.model.head == HeadKind::Classification)
        inputs.classNames = m_data.labels;
    const ValidationInsights insights = measureValidationInsights(
        *m_model, inputs, m_state.step, static_cast<std::uint64_t>(m_run.train.seed) + static_cast<std::uint64_t>(m_state.step));
    for (auto* observer : m_observers)
        observer->onValidationInsights(insights);
}

// Every probe text of the run; one that cannot be probed is skipped with a warning.
void Trainer::probeAll()
{
    for (const std::string& text : m_run.train.probes) {
        try {
            probe(text);
        } catch (const std::exception& error) {
            message("warning", std::string("probe skipped: ") + error.what());
        }
    }
}

// A short validation example, so that a run shows attention and routing on its
// own kind of text before the user types one: the shortest of the first few,
// cut to a length whose attention maps stay readable.
std::string Trainer::defaultProbeText() const
{
    if (m_data.imageStats)
        return "validation:0";
    constexpr std::int64_t kCandidates = 64;
    constexpr std::size_t kMaxTokens = 40;
    std::vector<std::int64_t> best;
    for (std::int64_t i = 0; i < std::min(kCandidates, m_data.validation->size()); ++i) {
        std::vector<std::int64_t> ids = m_data.validation->get(i).ids;
        if (i == 0 || ids.size() < best.size())
            best = std::move(ids);
    }
    if (m_run.model.segments > 0)  // a pair whole: a window of it could lose a text
        return pairText(m_data.tokenizer, best, separatorId(m_run.model.vocabSize));
    // Byte tokens: a window of UTF-8 text may start inside a character, and the
    // cut must not end inside one (at most three continuation bytes follow a lead).
    const bool bytes = m_data.tokenizer.kind() == TokenizerKind::Byte;
    auto continuation = [&](std::int64_t id) {
        const std::int64_t byte = id - Tokenizer::kFirstToken;
        return bytes && byte >= 0x80 && byte < 0xc0;
    };
    std::size_t begin = 0;
    while (begin < 3 && begin + 1 < best.size() && continuation(best[begin]))
        ++begin;
    std::size_t end = std::min(best.size(), begin + kMaxTokens);
    std::size_t lead = end;  // the last character's first byte, if it is among the last four
    while (lead > begin && end - lead < 4 && continuation(best[lead - 1]))
        --lead;
    if (bytes && lead > begin && end - lead < 4) {
        const std::int64_t first = best[lead - 1] - Tokenizer::kFirstToken;
        const std::size_t length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
        if (lead - 1 + length > end && lead - 1 > begin)
            end = lead - 1;  // that character does not fit: cut before it
    }
    std::string text = m_data.tokenizer.decode({best.begin() + static_cast<std::ptrdiff_t>(begin),
                                                best.begin() + static_cast<std::ptrdiff_t>(end)});
    if (m_data.tokenizer.kind() == TokenizerKind::Bpe) {
        // Its tokens are bytes too, several to a token: the same cut, made on the text.
        const auto follows = [&](std::size_t i) { return (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80; };
        std::size_t from = 0, to = text.size();
        while (from < 3 && from < to && follows(from))
            ++from;
        std::size_t last = to;  // the last character's first byte, if it is among the last four
        while (last > from && to - last < 4 && follows(last - 1))
            --last;
        if (last > from && to - last < 4) {
            const auto first = static_cast<unsigned char>(text[last - 1]);
            const std::size_t length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
            if (last - 1 + length > to)
                to = last - 1;
        }
        text = text.substr(from, to - from);
    }
    return text;
}

// A probe the user asked the run to keep: inspected with the others from now
// on, and written into config.json so that it stays with the run.
void Trainer::keepProbe(const std::string& text)
{
    std::vector<std::string>& probes = m_run.train.probes;
    if (!m_writes) {  // read-only, or another rank than the one that writes the run
        if (std::find(probes.begin(), probes.end(), text) == probes.end())
            probes.push_back(text);
        return;
    }
    probes = addProbeTexts(m_directory, {text});
}

ProbeResult Trainer::probe(const std::string& text)
{
    ProbeResult result;
    if (m_data.imageStats) {
        std::int64_t label = -1;
        const Image image = probeImage(text, m_data.validation.get(), imageFormat(m_run.model), label);
        result = probeImageModel(*m_model, m_data.labels, image, *m_data.imageStats, text);
        result.label = label;
    } else {
        result = probeModel(*m_model, m_data.tokenizer, m_data.labels, text, m_run.sequenceLength());
    }
    result.step = m_state.step;
    if (!result.prediction.empty() && !m_data.imageStats) {
        const std::int64_t label = knownLabel(*m_data.validation, m_data.tokenizer, text,
                                              m_run.model.segments > 0 ? separatorId(m_run.model.vocabSize) : -1);
        if (label >= 0 && label < static_cast<std::int64_t>(result.prediction.size()))
            result.label = label;
    }
    for (auto* observer : m_observers)
        observer->onProbe(result);
    return result;
}

}  // namespace widelab
