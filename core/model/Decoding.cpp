#include "Decoding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace widelab {

namespace {

// The most tokens a translation of `model` gets under `options`, after checking
// that the model can decode.
std::int64_t decodingLimit(const WideTransformerImpl& model, const DecodeOptions& options)
{
    const ModelConfig& c = model.config();
    if (!c.isTranslation())
        throw std::invalid_argument("decoding: the model is not a translation model (model.head \"translation\")");
    if (model.is_training())
        throw std::invalid_argument("decoding: the model is in training mode; call eval() first");
    return options.maxLength > 0 && options.maxLength < c.maxLen ? options.maxLength : c.maxLen;
}

void checkBeamOptions(const DecodeOptions& options)
{
    if (options.beamSize < 1)
        throw std::invalid_argument("beam search: the beam size is " + std::to_string(options.beamSize)
                                    + "; it must be at least 1");
    if (!(options.lengthPenalty >= 0.0))
        throw std::invalid_argument("beam search: the length penalty's alpha is "
                                    + std::to_string(options.lengthPenalty) + "; it must be 0 or more");
    if (options.maxLength < 1)
        throw std::invalid_argument("beam search: no maximum length (it must be at least 1)");
}

// The step's logits with the rows that are no token (options.vocabulary) out of reach.
torch::Tensor writable(torch::Tensor logits, const DecodeOptions& options)
{
    if (options.vocabulary > 0 && options.vocabulary < logits.size(-1))
        logits = logits.narrow(-1, 0, options.vocabulary);
    return logits;
}

}  // namespace

std::vector<std::vector<std::int64_t>> greedyDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                    const torch::Tensor& sourceMask, const DecodeOptions& options)
{
    const std::int64_t limit = decodingLimit(model, options);
    torch::NoGradGuard noGrad;
    const std::int64_t B = source.size(0);
    const auto ids = torch::TensorOptions(torch::kLong).device(source.device());

    DecoderState state;
    if (options.cache)
        state = model.beginDecoding(source, sourceMask, limit);
    torch::Tensor prefix = torch::full({B, 1}, options.startId, ids);  // the decoder's input so far
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(B));
    std::vector<bool> finished(static_cast<std::size_t>(B), false);
    std::int64_t open = B;
    for (std::int64_t t = 0; t < limit && open > 0; ++t) {
        const torch::Tensor logits = options.cache ? model.decodeStep(state, prefix.select(1, t))
                                                   : model.forward(source, sourceMask, {prefix, {}}).logits.select(1, t);
        const torch::Tensor next = writable(logits, options).argmax(-1);  // [B]
        const torch::Tensor onHost = next.to(torch::kCPU);
        const auto* chosen = onHost.data_ptr<std::int64_t>();
        for (std::int64_t b = 0; b < B; ++b) {
            if (finished[static_cast<std::size_t>(b)])
                continue;
            if (chosen[b] == options.endId) {
                finished[static_cast<std::size_t>(b)] = true;
                --open;
            } else {
                out[static_cast<std::size_t>(b)].push_back(chosen[b]);
            }
        }
        prefix = torch::cat({prefix, next.unsqueeze(1)}, 1);
    }
    return out;
}

double lengthPenalty(std::int64_t length, double alpha)
{
    return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<BeamHypothesis> beamSearch(std::int64_t sources, const BeamStep& step, const DecodeOptions& options)
{
    checkBeamOptions(options);
    const std::int64_t K = options.beamSize, limit = options.maxLength;
    const double alpha = options.lengthPenalty;
    constexpr double none = -std::numeric_limits<double>::infinity();
    // What a live beam of log-probability p can still score: p / lp(limit), since p only falls and lp grows.
    const double longest = lengthPenalty(limit, alpha);

    std::vector<BeamHypothesis> best(static_cast<std::size_t>(sources), BeamHypothesis{{}, none, none});
    auto finish = [&](std::int64_t source, std::vector<std::int64_t> tokens, double logProb, std::int64_t length) {
        BeamHypothesis& kept = best[static_cast<std::size_t>(source)];
        const double score = logProb / lengthPenalty(length, alpha);
        if (score > kept.score)  // the first found of equal scores stays
            kept = {std::move(tokens), logProb, score};
    };

    std::vector<std::int64_t> active(static_cast<std::size_t>(sources));  // the unfinished sources, in order
    for (std::int64_t s = 0; s < sources; ++s)
        active[static_cast<std::size_t>(s)] = s;
    torch::Tensor prefixes = torch::full({sources * K, 1}, options.startId, torch::kLong);
    std::vector<double> beamScores(static_cast<std::size_t>(sources * K), none);  // each row's log-probability
    for (std::int64_t s = 0; s < sources; ++s)
        beamScores[static_cast<std::size_t>(s * K)] = 0.0;  // one beam, the start token, until the first step
    torch::Tensor from;

    for (std::int64_t t = 0; t < limit && !active.empty(); ++t) {
        const auto A = static_cast<std::int64_t>(active.size()), R = A * K;
        const torch::Tensor logProbs = step(prefixes, from);
        if (logProbs.dim() != 2 || logProbs.size(0) != R)
            throw std::logic_error("beam search: a step gave log-probabilities of " + std::to_string(logProbs.dim())
                                   + " dimensions for " + std::to_string(R) + " prefixes");
        const std::int64_t V = logProbs.size(1);
        const torch::Tensor scores = torch::tensor(beamScores, torch::kFloat64).to(logProbs.device());
        const torch::Tensor total = (logProbs.to(torch::kFloat64) + scores.unsqueeze(1)).view({A, K * V});
        const std::int64_t candidates = std::min(2 * K, K * V);  // at most K of them the end token
        const auto [values, indices] = total.topk(candidates, 1);
        const torch::Tensor valuesHere = values.to(torch::kCPU), indicesHere = indices.to(torch::kCPU);
        const auto value = valuesHere.accessor<double, 2>();
        const auto index = indicesHere.accessor<std::int64_t, 2>();
        const auto prefix = prefixes.accessor<std::int64_t, 2>();
        auto tokensOf = [&](std::int64_t row) {
            std::vector<std::int64_t> tokens;
            for (std::int64_t i = 1; i <= t; ++i)
                tokens.push_back(prefix[row][i]);
            return tokens;
        };

        std::vector<std::int64_t> nextActive, nextFrom, nextTokens;
        std::vector<double> nextScores;
        for (std::int64_t a = 0; a < A; ++a) {
            const std::int64_t source = active[static_cast<std::size_t>(a)];
            std::vector<std::int64_t> liveFrom, liveTokens;
            std::vector<double> liveScores;
            for (std::int64_t c = 0; c < candidates && static_cast<std::int64_t>(liveFrom.size()) < K; ++c) {
                const double p = value[a][c];
                if (!(p > none))
                    break;  // the rest are impossible too (or not a number)
                const std::int64_t row = a * K + index[a][c] / V, token = index[a][c] % V;
                if (token != options.endId) {
                    liveFrom.push_back(row);
                    liveTokens.push_back(token);
                    liveScores.push_back(p);
                } else if (c < K) {  // an end among the K best finishes; further down it is dropped
                    finish(source, tokensOf(row), p, t + 1);
                }
            }
            const bool last = t + 1 == limit;
            if (last)
                for (std::size_t l = 0; l < liveFrom.size(); ++l) {
                    std::vector<std::int64_t> tokens = tokensOf(liveFrom[l]);
                    tokens.push_back(liveTokens[l]);
                    finish(source, std::move(tokens), liveScores[l], t + 1);
                }
            const double kept = best[static_cast<std::size_t>(source)].score;
            if (last || liveFrom.empty() || kept >= liveScores.front() / longest)
                continue;  // done
            nextActive.push_back(source);
            for (std::int64_t l = 0; l < K; ++l) {  // beams short of K stay empty
                const bool real = l < static_cast<std::int64_t>(liveFrom.size());
                nextFrom.push_back(real ? liveFrom[static_cast<std::size_t>(l)] : a * K);
                nextTokens.push_back(real ? liveTokens[static_cast<std::size_t>(l)] : options.endId);
                nextScores.push_back(real ? liveScores[static_cast<std::size_t>(l)] : none);
            }
        }
        if (nextActive.empty())
            break;
        from = torch::tensor(nextFrom, torch::kLong);
        prefixes = torch::cat({prefixes.index_select(0, from), torch::tensor(nextTokens, torch::kLong).unsqueeze(1)}, 1);
        beamScores = std::move(nextScores);
        active = std::move(nextActive);
    }
    return best;
}

std::vector<std::vector<std::int64_t>> beamDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                  const torch::Tensor& sourceMask, const DecodeOptions& options)
{
    DecodeOptions search = options;
    search.maxLength = decodingLimit(model, options);
    torch::NoGradGuard noGrad;
    const std::int64_t B = source.size(0), K = options.beamSize;
    checkBeamOptions(search);  // before the caches are sized by the beam
    const torch::Device device = source.device();
    // Each row's source: every source's K beams, in order, until sources finish.
    torch::Tensor rowSource = torch::arange(B, torch::TensorOptions(torch::kLong).device(device)).repeat_interleave(K);
    DecoderState state;
    if (options.cache) {
        state = model.beginDecoding(source, sourceMask, search.maxLength);  // the source encoded once, not once a beam
        state.reorder(rowSource);
    }
    const BeamStep step = [&](const torch::Tensor& prefixes, const torch::Tensor& from) {
        if (from.defined()) {
            const torch::Tensor rows = from.to(device);
            if (options.cache)
                state.reorder(rows);
            else
                rowSource = rowSource.index_select(0, rows);
        }
        const torch::Tensor logits =
            options.cache ? model.decodeStep(state, prefixes.select(1, -1).to(device))
                          : model
                                .forward(source.index_select(0, rowSource),
                                         sourceMask.defined() ? sourceMask.index_select(0, rowSource) : sourceMask,
                                         {prefixes.to(device), {}})
                                .logits.select(1, -1);
        return writable(logits, options).to(torch::kFloat32).log_softmax(-1);
    };
    std::vector<std::vector<std::int64_t>> out;
    for (BeamHypothesis& found : beamSearch(B, step, search))
        out.push_back(std::move(found.tokens));
    return out;
}

}  // namespace widelab
