// Tests of measure/ParameterHistograms and ValueHistogram: which group a
// parameter is in, the buckets its values fall into and when a train line holds
// them, on values whose counts are worked out by hand in the comments.
#include "TestSupport.h"
#include "measure/ParameterHistograms.h"

#include <QtTest>

using namespace widelab;

namespace {

std::vector<std::int64_t> bucketsWith(std::initializer_list<std::pair<int, std::int64_t>> filled)
{
    std::vector<std::int64_t> counts(kHistogramBuckets, 0);
    for (const auto& [bucket, count] : filled)
        counts[static_cast<std::size_t>(bucket)] = count;
    return counts;
}

// Two FFN blocks (a ModuleList), a head and a frozen parameter.
struct Blocks : torch::nn::Module {
    Blocks()
    {
        ffn = register_module("ffn", torch::nn::ModuleList(torch::nn::Linear(2, 3), torch::nn::Linear(3, 2)));
        head = register_module("head", torch::nn::Linear(2, 1));
        frozen = register_parameter("frozen", torch::zeros({4}), /*requires_grad=*/false);
    }
    torch::nn::ModuleList ffn;
    torch::nn::Linear head{nullptr};
    torch::Tensor frozen;
};

}  // namespace

class TestParameterHistograms : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aParameterIsGroupedUpToItsFirstNumber();
    void groupsFollowTheModulesAndLeaveFrozenOnesOut();
    void valuesFallIntoThirtyEqualBuckets();
    void equalValuesAllFallIntoTheFirstBucket();
    void gradientsLeaveOutParametersWithoutOne();
    void theFirstLineEachValidationAndTheLastHoldHistograms();
    void quantilesSpreadEachBucketEvenly();
};

void TestParameterHistograms::aParameterIsGroupedUpToItsFirstNumber()
{
    QCOMPARE(parameterGroupOf("attention.0.qkv.weight"), std::string("attention.0"));
    QCOMPARE(parameterGroupOf("ln_att.12.weight"), std::string("ln_att.12"));
    QCOMPARE(parameterGroupOf("decoder.ffn.1.w_in"), std::string("decoder.ffn.1"));
    QCOMPARE(parameterGroupOf("embed.token.weight"), std::string("embed"));
    QCOMPARE(parameterGroupOf("cls"), std::string("cls"));
    QCOMPARE(parameterGroupOf("blocks.3x.weight"), std::string("blocks"));  // "3x" is not a number
}

void TestParameterHistograms::groupsFollowTheModulesAndLeaveFrozenOnesOut()
{
    Blocks model;
    const std::vector<ParameterGroup> groups = parameterGroups(model);
    QCOMPARE(groups.size(), std::size_t{3});
    QCOMPARE(groups[0].name, std::string("ffn.0"));
    QCOMPARE(groups[1].name, std::string("ffn.1"));
    QCOMPARE(groups[2].name, std::string("head"));
    QCOMPARE(groups[0].parameters.size(), std::size_t{2});  // weight 3x2 and bias 3
    QCOMPARE(groups[0].parameters[0].numel() + groups[0].parameters[1].numel(), std::int64_t{9});
}

void TestParameterHistograms::valuesFallIntoThirtyEqualBuckets()
{
    // From 0 to 30 the buckets are 1 wide: 0 in bucket 0, 3 twice in bucket 3,
    // 15 in bucket 15, and the largest, 30, in the last bucket (29).
    const std::vector<ParameterGroup> groups{
        {"a", {torch::tensor({0.0f, 3.0f, 3.0f, 30.0f}), torch::tensor({15.0f})}},
        // From -1 to 1 the buckets are 1/15 wide: 0 starts bucket 15, 0.1 is in 16.
        {"b", {torch::tensor({-1.0f, 0.0f, 0.1f, 1.0f}).view({2, 2})}}};
    const std::vector<ValueHistogram> read = readHistograms(histogramsOnDevice(groups, HistogramOf::Weights));
    QCOMPARE(read.size(), std::size_t{2});
    QCOMPARE(read[0].group, std::string("a"));
    QCOMPARE(read[0].low, 0.0);
    QCOMPARE(read[0].high, 30.0);
    QCOMPARE(read[0].counts, bucketsWith({{0, 1}, {3, 2}, {15, 1}, {29, 1}}));
    QCOMPARE(read[1].low, -1.0);
    QCOMPARE(read[1].high, 1.0);
    QCOMPARE(read[1].counts, bucketsWith({{0, 1}, {15, 1}, {16, 1}, {29, 1}}));
}

void TestParameterHistograms::equalValuesAllFallIntoTheFirstBucket()
{
    const std::vector<ParameterGroup> groups{{"ln.0", {torch::ones({5}) * 2}}};
    const std::vector<ValueHistogram> read = readHistograms(histogramsOnDevice(groups, HistogramOf::Weights));
    QCOMPARE(read.size(), std::size_t{1});
    QCOMPARE(read[0].low, 2.0);
    QCOMPARE(read[0].high, 2.0);
    QCOMPARE(read[0].counts, bucketsWith({{0, 5}}));
}

void TestParameterHistograms::gradientsLeaveOutParametersWithoutOne()
{
    Blocks model;
    // ffn.0's weight has a gradient, its bias none; ffn.1 and the head have none.
    model.ffn[0]->as<torch::nn::Linear>()->weight.mutable_grad() = torch::tensor({-3.0f, 0.0f, 0.0f, 1.0f, 2.0f, 3.0f}).view({3, 2});
    const std::vector<ValueHistogram> read
        = readHistograms(histogramsOnDevice(parameterGroups(model), HistogramOf::Gradients));
    QCOMPARE(read.size(), std::size_t{1});
    QCOMPARE(read[0].group, std::string("ffn.0"));
    // From -3 to 3, buckets 0.2 wide: -3 in 0, 0 twice in 15, 1 in 20, 2 in 25, 3 in the last.
    QCOMPARE(read[0].counts, bucketsWith({{0, 1}, {15, 2}, {20, 1}, {25, 1}, {29, 1}}));
    QCOMPARE(read[0].total(), std::int64_t{6});
}

void TestParameterHistograms::theFirstLineEachValidationAndTheLastHoldHistograms()
{
    // Lines of 10 steps, validation every 200, 1000 steps.
    QVERIFY(histogramsDue(1, 10, 200, 1000));      // the first line
    QVERIFY(!histogramsDue(11, 20, 200, 1000));
    QVERIFY(histogramsDue(191, 200, 200, 1000));   // ends at a validation
    QVERIFY(histogramsDue(195, 204, 200, 1000));   // passes one
    QVERIFY(!histogramsDue(201, 210, 200, 1000));
    QVERIFY(!histogramsDue(981, 990, 200, 1000));
    QVERIFY(histogramsDue(991, 1000, 200, 1000));  // the last
    QVERIFY(histogramsDue(996, 1000, 300, 1000));  // the last, short line
}

void TestParameterHistograms::quantilesSpreadEachBucketEvenly()
{
    // From 0 to 3 in buckets 1 wide: one value in [0, 1), three in [2, 3].
    const ValueHistogram h{"g", 0.0, 3.0, {1, 0, 3}};
    QCOMPARE(h.quantile(0.0), 0.0);
    QCOMPARE(h.quantile(0.25), 1.0);        // the first value fills its bucket
    QCOMPARE(h.quantile(0.5), 2.0 + 1.0 / 3.0);  // one of the three in [2, 3]
    QCOMPARE(h.quantile(1.0), 3.0);
    QCOMPARE((ValueHistogram{"g", 2.0, 2.0, {4, 0}}.quantile(0.5)), 2.0);  // all equal
    QCOMPARE((ValueHistogram{"g", 0.0, 1.0, {0, 0}}.quantile(0.5)), 0.0);  // none
}

QTEST_GUILESS_MAIN(TestParameterHistograms)
#include "tst_parameterhistograms.moc"
