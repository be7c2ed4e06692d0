#include "ValidationInsight.h"

#include "HeadRoles.h"
#include "data/Tokenizer.h"

#include <algorithm>
#include <map>
#include <random>

namespace widelab {
namespace {

constexpr std::size_t kTopTokens = 8;
constexpr std::int64_t kRepeatPeriod = 16;
constexpr std::int64_t kRepeatSequences = 4;

// Counts of what each expert of one routing block received.
struct ExpertCounts {
    std::vector<std::map<std::string, std::int64_t>> tokens;  // [expert]
    std::vector<std::vector<std::int64_t>> classes;           // [expert][class]
};

// The name of position t of sequence b: "<cls>" / "CLS", a token's text, or a patch "r0c1".
std::string positionName(const ModelConfig& c, const InsightInputs& inputs,
                         const torch::TensorAccessor<std::int64_t, 2>* ids, std::int64_t b, std::int64_t t)
{
    const std::int64_t offset = c.usesClsToken() ? 1 : 0;
    if (t < offset)
        return c.imageInput() ? "CLS" : "<cls>";
    const std::int64_t p = t - offset;
    if (c.imageInput()) {
        const std::int64_t grid = std::max<std::int64_t>(1, c.patchGrid());
        std::string name = "r";  // appended piecewise: GCC 12 warns falsely on "r" + ... (bug 105329)
        name += std::to_string(p / grid);
        name += 'c';
        name += std::to_string(p % grid);
        return name;
    }
    const std::int64_t id = (*ids)[b][p];
    return inputs.tokenText ? inputs.tokenText(id) : std::to_string(id);
}

}  // namespace

std::int64_t insightChunkSize(const ModelConfig& c, std::int64_t length)
{
    constexpr double kBudget = 256.0 * 1024 * 1024;
    const double perSequence = 4.0 * static_cast<double>(c.layers) * static_cast<double>(c.heads * c.paths)
                               * static_cast<double>(length) * static_cast<double>(length);
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(kBudget / std::max(perSequence, 1.0)));
}

ValidationInsights measureValidationInsights(WideTransformerImpl& model, const InsightInputs& inputs,
                                             std::int64_t step, std::uint64_t seed)
{
    const ModelConfig& c = model.config();
    const bool languageModel = c.causal();        // head roles by earlier tokens, induction on repeats
    const bool perExample = !c.predictsTokens();  // a class per example, whose experts are counted
    torch::NoGradGuard noGrad;
    const bool training = model.is_training();
    model.eval();
    const torch::Device device = model.parameters().front().device();

    ValidationInsights out;
    out.step = step;
    out.classNames = inputs.classNames;
    HeadRoleAccumulator roles(c.layers, c.heads * c.paths, languageModel);
    std::map<std::int64_t, ExpertCounts> experts;  // by routing block

    auto inspect = [&](const torch::Tensor& input, const torch::Tensor& mask, const torch::Tensor& targets) {
        ForwardTrace trace;
        trace.captureRouting = c.isMoe();
        model.inspect(input.to(device), mask.defined() ? mask.to(device) : mask, trace);
        torch::Tensor valid;  // [B, T'] with the CLS position
        if (mask.defined()) {
            valid = mask.to(torch::kCPU, torch::kBool);
            if (c.usesClsToken())
                valid = torch::cat({torch::ones({valid.size(0), 1}, valid.options()), valid}, 1);
        }
        for (std::size_t l = 0; l < trace.blocks.size(); ++l)
            roles.addMaps(static_cast<std::int64_t>(l), trace.blocks[l].attention, valid);
        if (!targets.defined() || !c.isMoe())
            return;
        const torch::Tensor idTensor =
            input.is_floating_point() ? torch::zeros({1, 1}, torch::kLong) : input.to(torch::kCPU, torch::kLong).contiguous();
        const auto idAccess = idTensor.accessor<std::int64_t, 2>();
        const auto* ids = input.is_floating_point() ? nullptr : &idAccess;
        const torch::Tensor positionTensor = trace.tokenIndex.to(torch::kCPU).contiguous();  // [S] flat into [B, T']
        const auto position = positionTensor.accessor<std::int64_t, 1>();
        const std::int64_t T = trace.blocks.front().attention.size(-1);
        const torch::Tensor labelTensor = targets.to(torch::kCPU, torch::kLong).contiguous().view({-1});
        const auto labels = labelTensor.accessor<std::int64_t, 1>();
        for (std::size_t l = 0; l < trace.blocks.size(); ++l) {
            const BlockTrace& block = trace.blocks[l];
            if (!block.routed || !block.expert.defined())
                continue;
            ExpertCounts& counts = experts[static_cast<std::int64_t>(l)];
            counts.tokens.resize(static_cast<std::size_t>(c.experts));
            if (perExample)
                counts.classes.resize(static_cast<std::size_t>(c.experts),
                                      std::vector<std::int64_t>(inputs.classNames.size(), 0));
            const torch::Tensor expertTensor = block.expert.to(torch::kCPU).contiguous();
            const torch::Tensor keptTensor = block.kept.to(torch::kCPU).contiguous();
            const auto expert = expertTensor.accessor<std::int64_t, 2>();
            const auto kept = keptTensor.accessor<bool, 2>();
            for (std::int64_t s = 0; s < expert.size(0); ++s) {
                const std::int64_t flat = position[s];
                const std::int64_t b = flat / T, t = flat % T;
                const std::string name = positionName(c, inputs, ids, b, t);
                for (std::int64_t k = 0; k < expert.size(1); ++k) {
                    if (!kept[s][k])
                        continue;
                    const auto e = static_cast<std::size_t>(expert[s][k]);
                    ++counts.tokens[e][name];
                    if (perExample) {
                        const std::int64_t label = labels[b];
                        if (label >= 0 && label < static_cast<std::int64_t>(inputs.classNames.size()))
                            ++counts.classes[e][static_cast<std::size_t>(label)];
                    }
                }
            }
        }
    };

    for (const Batch& batch : inputs.sample) {
        const torch::Tensor& input = batch.pixels.defined() ? batch.pixels : batch.ids;
        inspect(input, batch.mask, batch.targets);
        out.examples += input.size(0);
    }
    for (const torch::Tensor& probe : inputs.probes)
        inspect(probe, {}, {});

    if (languageModel) {
        // Repeated random sequences [r r] of real tokens (no padding, no special ids).
        const std::int64_t L = std::min(kRepeatPeriod, c.maxLen / 2);
        const std::int64_t first = Tokenizer::kFirstToken;
        if (L >= 2 && c.vocabSize > first + 1) {
            std::mt19937_64 random(seed);
            std::uniform_int_distribution<std::int64_t> pick(first, c.vocabSize - 1);
            std::vector<std::int64_t> ids;
            for (std::int64_t b = 0; b < kRepeatSequences; ++b) {
                std::vector<std::int64_t> r;
                for (std::int64_t i = 0; i < L; ++i)
                    r.push_back(pick(random));
                ids.insert(ids.end(), r.begin(), r.end());
                ids.insert(ids.end(), r.begin(), r.end());
            }
            ForwardTrace trace;
            trace.captureRouting = false;
            model.inspect(torch::tensor(ids, torch::kLong).view({kRepeatSequences, 2 * L}).to(device), {}, trace);
            for (std::size_t l = 0; l < trace.blocks.size(); ++l)
                roles.addRepeated(static_cast<std::int64_t>(l), trace.blocks[l].attention, L);
        }
    }
    model.train(training);

    out.heads = roles.scores();
    for (auto& [block, counts] : experts) {
        ExpertIntake s;
        s.block = block;
        for (const auto& tokens : counts.tokens) {
            std::vector<std::pair<std::string, std::int64_t>> list(tokens.begin(), tokens.end());
            // Most frequent first; equal counts in the tokens' order.
            std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
            if (list.size() > kTopTokens)
                list.resize(kTopTokens);
            s.topTokens.push_back(std::move(list));
        }
        s.classCounts = std::move(counts.classes);
        out.experts.push_back(std::move(s));
    }
    return out;
}

}  // namespace widelab
