#include "SampleSnapshot.h"

namespace widelab::test {

TrainingSnapshot snapshotWithInsights(std::int64_t step)
{
    TrainingSnapshot s;
    s.step = step;
    RoutingStats r;
    r.block = 1;
    r.tokensPerExpert = {5, 0, 7};
    r.droppedPercentPerChoice = {12.5, 40.0};
    r.unusedExperts = 1;
    r.routerEntropy = 0.75;
    r.loadVsFair = {1.25, 0.0, 1.75};
    s.routing = {r};
    s.attentionGamma = {{1.0f, 0.5f}, {2.0f, 1.5f}};
    s.attentionBeta = {{0.0f, -0.25f}, {0.25f, 0.5f}};
    s.ffnGamma = {{1.0f, 1.0f}, {0.75f, 1.25f}};
    s.ffnBeta = {{0.125f, 0.0f}, {0.0f, -0.125f}};
    s.divergence = {0.25, 0.125, 0.5, 0.0625};
    s.attentionDivergence = {1.5, 2.5, 3.5, 4.5};
    PathWeights p;
    p.block = 0;
    p.sublayer = "ffn";
    p.paths = 2;
    p.alpha = {0.5f, 0.25f, 0.125f, 0.0625f};
    p.beta = 0.75f;
    p.diversity = 0.375;
    s.paths = {p};
    return s;
}

ProbeResult imageProbe(std::int64_t step)
{
    ProbeResult p;
    p.step = step;
    p.text = "validation:3";
    p.tokens = {"CLS", "r0c0", "r0c1", "r1c0", "r1c1"};
    // Row = query. Only CLS's row matters to the views; the others spread evenly.
    const std::vector<float> even(5, 0.2f);
    p.attention = {{{{0.0f, 0.1f, 0.2f, 0.3f, 0.4f}, even, even, even, even}}};
    p.experts = {{{0}, {1}, {0}, {-1}, {2}}};
    p.prediction = {0.25f, 0.75f};
    p.predictionLabels = {"circle", "square"};
    p.label = 1;
    p.image.width = 4;
    p.image.height = 4;
    p.image.channels = 3;
    p.image.gridRows = 2;
    p.image.gridCols = 2;
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x)
            p.image.pixels.insert(p.image.pixels.end(), {static_cast<std::uint8_t>(40 * x),
                                                         static_cast<std::uint8_t>(40 * y), std::uint8_t{200}});
    return p;
}

}  // namespace widelab::test
