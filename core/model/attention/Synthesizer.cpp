// defines: synthesizerMechanism: Synthesizer (Tay et al., 2021): attention
// weights synthesised from each query alone (dense) or learned outright per
// position pair (random, factorized random), no query-key dot products
#include "Mechanisms.h"

#include "model/BatchedMatmul.h"
#include "model/Dropout.h"

#include <cmath>

namespace widelab {
namespace {

enum class Variant { Dense, Random, FactorizedRandom };

const std::vector<std::string>& variantNames()
{
    static const std::vector<std::string> names = {"dense", "random", "factorized_random"};
    return names;
}

Variant variantOf(const ModelConfig& c)
{
    const std::string name = c.attentionText("synthesizer_variant");
    return name == "dense" ? Variant::Dense : name == "random" ? Variant::Random : Variant::FactorizedRandom;
}

std::int64_t rankOf(const ModelConfig& c) { return c.attentionInteger("synthesizer_rank"); }

// B = batch, G = heads, T = sequence, A = head_dim, P = positions, r = rank
class SynthesizerImpl : public MechanismImpl {
public:
    SynthesizerImpl(const MechanismShape& shape, Variant variant_, std::int64_t rank) : variant(variant_)
    {
        const std::int64_t G = shape.heads, P = shape.positions, A = shape.headDim;
        // LeCun-normal (std 1/sqrt(fan-in)), as LRA's kernels; biases zero.
        switch (variant) {
        case Variant::Dense:
            // The first layer is the head's own query projection (shared with every
            // mechanism); the second maps relu(q) [A] to one score per key position.
            denseWeight = register_parameter("dense_weight", torch::randn({G, A, P}) / std::sqrt(double(A)));
            denseBias = register_parameter("dense_bias", torch::zeros({G, P}));
            break;
        case Variant::Random:
            random = register_parameter("random", torch::randn({G, P, P}) / std::sqrt(double(P)));
            break;
        case Variant::FactorizedRandom:
            randomLeft = register_parameter("random_left", torch::randn({G, P, rank}) / std::sqrt(double(P)));
            randomRight = register_parameter("random_right", torch::randn({G, rank, P}) / std::sqrt(double(rank)));
            break;
        }
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        const torch::Tensor& q = in.q;
        const std::int64_t B = q.size(0), G = q.size(1), T = q.size(2);
        torch::Tensor scores;  // [B, G, T, T] or [1, G, T, T]
        switch (variant) {
        case Variant::Dense:
            scores = torch::matmul(torch::relu(q), denseWeight.narrow(2, 0, T).unsqueeze(0))
                     + denseBias.narrow(1, 0, T).view({1, G, 1, T});
            break;
        case Variant::Random:
            scores = random.narrow(1, 0, T).narrow(2, 0, T).unsqueeze(0);
            break;
        case Variant::FactorizedRandom:
            scores = torch::matmul(randomLeft.narrow(1, 0, T), randomRight.narrow(2, 0, T)).unsqueeze(0);
            break;
        }
        // Padded keys hidden, and future ones in a language model.
        if (in.bias.defined())
            scores = scores + maskIn(in.bias, scores.scalar_type());
        if (scores.size(0) != B)
            scores = scores.expand({B, G, T, T});
        torch::Tensor probs = torch::softmax(scores, -1);
        if (map)
            *map = probs;
        probs = applyDropout(probs, in.dropout, in.dropout > 0.0);
        return batchedMatmul(probs, in.v);
    }

    Variant variant;
    torch::Tensor denseWeight, denseBias;    // dense: [G, A, P], [G, P]
    torch::Tensor random;                    // random: [G, P, P]
    torch::Tensor randomLeft, randomRight;   // factorized random: [G, P, r], [G, r, P]
};

}  // namespace

const MechanismSpec& synthesizerMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "synthesizer";
        s.title = "Synthesizer (Tay et al., 2021): attention weights synthesised without query-key products";
        s.map = MapKind::Exact;
        s.causal = true;  // the synthesised scores are masked like full attention's
        s.linearCost = false;
        s.keys = {
            choiceKey("model.synthesizer_variant", variantNames(),
                      "Synthesizer: dense (scores from each query: relu(q) W + b), random (a learned score per "
                      "position pair) or factorized_random (its rank-r product; the Long Range Arena's default, "
                      "used by the Wide Attention paper)",
                      2),
            integerKey("model.synthesizer_rank", 1, 65536, 32,
                       "Synthesizer: the rank r of factorized_random's scores (32: the Long Range Arena's k)"),
        };
        s.make = [](const MechanismShape& shape, const ModelConfig& c) -> std::shared_ptr<MechanismImpl> {
            return std::make_shared<SynthesizerImpl>(shape, variantOf(c), rankOf(c));
        };
        s.parameters = [](const MechanismShape& shape, const ModelConfig& c) {
            const std::int64_t G = shape.heads, P = shape.positions;
            switch (variantOf(c)) {
            case Variant::Dense:
                return G * (shape.headDim + 1) * P;
            case Variant::Random:
                return G * P * P;
            case Variant::FactorizedRandom:
                break;
            }
            return 2 * G * P * rankOf(c);
        };
        // Per token and head: its row of scores (dense: A T; factorized: r T;
        // random: none) and the probabilities times the values (T A).
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const double t = static_cast<double>(T), a = static_cast<double>(shape.headDim);
            double perHead = t * a;
            switch (variantOf(c)) {
            case Variant::Dense:
                perHead += t * a;
                break;
            case Variant::Random:
                break;
            case Variant::FactorizedRandom:
                perHead += t * static_cast<double>(rankOf(c));
                break;
            }
            return 2.0 * perHead * static_cast<double>(shape.heads);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
