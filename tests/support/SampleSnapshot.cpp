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

}  // namespace widelab::test
