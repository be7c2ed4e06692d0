// tst_cuda: the GPU path against the CPU. Each case runs on the device that
// WIDELAB_TEST_DEVICE names ("cuda" when unset) and is skipped, saying why,
// where there is none, so a CPU-only machine lists every case as skipped.
// WIDELAB_TEST_DEVICE=cpu runs the cases CPU against CPU, which checks the
// cases themselves on a machine without a GPU.
//
// Tolerances: both sides compute in fp32 (TF32 is switched off here), so they
// differ only in the order of additions. A GPU kernel sums a reduction in
// blocks and a CPU kernel in another order; over the few hundred terms of these
// small models that moves a result by a few units of fp32's 6e-8, and the
// errors compound over the layers and the backward pass: 1e-4 relative is over
// a hundred times what that gives, and far below what a real bug gives (a
// wrong mask, a lost residual or a missing gradient are errors of order 1).
#include <torch/torch.h>

#include "TestSupport.h"
#include "model/ExpertRows.h"
#include "model/FeedForward.h"
#include "model/FusedRouting.h"
#include "model/GroupPlan.h"
#include "model/GroupedExperts.h"
#include "model/Router.h"
#include "model/WideTransformer.h"
#include "runtime/Autocast.h"
#include "runtime/DeviceMemory.h"
#include "runtime/KernelProfile.h"
#include "runtime/PhaseTimer.h"
#include "runtime/Runtime.h"
#include "run/Checkpoint.h"
#include "run/RunDirectory.h"
#include "train/FusedAdamW.h"
#include "train/Trainer.h"

#ifdef WIDELAB_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <fstream>

using namespace widelab;

namespace {

#ifdef WIDELAB_TORCH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

std::string testDevice()
{
    const char* name = std::getenv("WIDELAB_TEST_DEVICE");
    return name && *name ? name : "cuda";
}

// The device to test, or a reason to skip.
std::optional<torch::Device> deviceUnderTest(QString* reason)
{
    const torch::Device device(testDevice());
    if (device.is_cuda() && !torch::cuda::is_available()) {
        *reason = QStringLiteral("no CUDA device: this LibTorch (%1) %2")
                      .arg(QStringLiteral(TORCH_VERSION))
                      .arg(kCudaBuild ? QStringLiteral("has CUDA, but no GPU is present")
                                                    : QStringLiteral("is a CPU-only build"));
        return std::nullopt;
    }
    return device;
}

#define REQUIRE_DEVICE(device)                                 \
    QString skipReason;                                        \
    const auto device##Found = deviceUnderTest(&skipReason);   \
    if (!device##Found)                                        \
        QSKIP(qPrintable(skipReason));                         \
    const torch::Device device = *device##Found

std::filesystem::path fresh(const QTemporaryDir& dir, const char* name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

// test::tinyRun on `device`.
RunDocument tinyRun(const std::string& device, const std::string& overrides = "{}")
{
    nlohmann::json patch = nlohmann::json::parse(overrides);
    patch["train"]["device"] = device;
    return test::tinyRun(patch.dump());
}

std::vector<nlohmann::json> trainLines(const std::filesystem::path& run)
{
    std::vector<nlohmann::json> lines;
    std::ifstream in(run / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        nlohmann::json json = nlohmann::json::parse(line);
        if (json["type"] == "train")
            lines.push_back(json);
    }
    return lines;
}

// A small model of each family, without dropout or router noise so that the
// two devices compute the same function.
std::vector<std::pair<const char*, const char*>> families()
{
    return {
        {"dense", R"({"vocab_size": 30, "max_len": 16, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64})"},
        {"widenet", R"({"vocab_size": 30, "max_len": 16, "d_model": 32, "layers": 3, "heads": 4, "ffn_dim": 64,
                        "experts": 4, "top_k": 2, "share_attention": true, "share_ffn": true})"},
        {"multipath", R"({"vocab_size": 30, "max_len": 16, "d_model": 32, "layers": 2, "heads": 2, "ffn_dim": 32,
                          "paths": 3, "path_extra_features": true})"},
        {"language model", R"({"vocab_size": 30, "max_len": 16, "d_model": 32, "layers": 2, "heads": 4,
                               "ffn_dim": 64, "head": "language_model", "experts": 2, "top_k": 1})"},
    };
}

ModelConfig familyConfig(const char* json)
{
    return test::modelConfig(json, R"({"dropout": 0.0, "router_noise_std": 0.0})");
}

// Two models with the same weights: one on the CPU, one on `device`.
std::pair<WideTransformer, WideTransformer> twins(const ModelConfig& config, const torch::Device& device)
{
    torch::manual_seed(11);
    WideTransformer cpu(config);
    torch::manual_seed(11);
    WideTransformer other(config);
    other->to(device);
    return {cpu, other};
}

}  // namespace

class TestCuda : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void deviceChoiceIsChecked();
    void forwardAndGradientsMatchCpu_data();
    void forwardAndGradientsMatchCpu();
    void routingDecisionsMatchCpu();
    void routingKernelDecidesAsTheOperators_data();
    void routingKernelDecidesAsTheOperators();
    void routingServesTheHandWorkedQueue();
    void bf16KeepsTheRouterInFp32();
    void groupedExpertsMatchTheBufferInBf16_data();
    void groupedExpertsMatchTheBufferInBf16();
    void expertRowsMatchTheHostLoops();
    void groupPlanKernelPlansAsTheOperators_data();
    void groupPlanKernelPlansAsTheOperators();
    void memoryIsTheAllocators();
    void kernelProfileNamesTheDevicesWork();
    void shortTrainingLearns();
    void resumeContinuesTheRun();
    void nonFiniteStopNamesTheFirstBadStep();
    void outOfMemoryKeepsTheRun();
    void replayedStepsMatchOrdinaryOnes_data();
    void replayedStepsMatchOrdinaryOnes();
    void resumeAcrossReplayedStepsContinuesTheRun();
};

void TestCuda::initTestCase()
{
    torch::set_num_threads(1);
#ifdef WIDELAB_TORCH_CUDA
    at::globalContext().setAllowTF32CuBLAS(false);  // fp32 on both sides (see the tolerances above)
#endif
    qInfo("device under test: %s", testDevice().c_str());
}

// Not skipped: "cuda:N" names a device that must exist, here or not.
void TestCuda::deviceChoiceIsChecked()
{
    QTemporaryDir dir;
    const std::string absent = "cuda:" + std::to_string(torch::cuda::device_count());
    try {
        Trainer trainer(tinyRun(absent), fresh(dir, "run"));
        QFAIL("a device that does not exist was accepted");
    } catch (const ConfigError& error) {
        const std::string what = error.what();
        QVERIFY2(what.find("train.device") != std::string::npos, what.c_str());
        QVERIFY2(what.find(absent) != std::string::npos, what.c_str());
    }
}

void TestCuda::forwardAndGradientsMatchCpu_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<bool>("padded");
    for (const auto& [name, json] : families())
        QTest::newRow(name) << QByteArray(json) << true;
    // Without padding a language model's full attention takes the kernel's causal rule, not a mask.
    const auto [name, json] = families().back();  // a copy: the vector is a temporary
    QTest::newRow((std::string(name) + ", no padding").c_str()) << QByteArray(json) << false;
}

void TestCuda::forwardAndGradientsMatchCpu()
{
    REQUIRE_DEVICE(device);
    QFETCH(QByteArray, json);
    QFETCH(bool, padded);
    const ModelConfig config = familyConfig(json.constData());
    QVERIFY(padded || config.head == HeadKind::LanguageModel);
    auto [cpu, other] = twins(config, device);
    torch::manual_seed(3);
    const torch::Tensor ids = torch::randint(1, config.vocabSize, {3, 12});
    torch::Tensor mask;  // none: every token real
    if (padded) {
        mask = torch::ones({3, 12}, torch::kBool);
        mask.index_put_({2, torch::indexing::Slice(8)}, false);  // a padded example
    }
    const auto maskOn = [&](const torch::Device& on) { return mask.defined() ? mask.to(on) : mask; };
    const torch::Tensor targets = config.head == HeadKind::LanguageModel ? torch::randint(0, config.vocabSize, {3, 12})
                                                                          : torch::randint(0, config.numClasses, {3});
    auto lossOf = [&](WideTransformer& model, const torch::Device& on) {
        const ModelOutput out = model->forward(ids.to(on), maskOn(on));
        return std::make_pair(out.logits,
                              taskLoss(config, out.logits, targets.to(on), maskOn(on)) + 0.01 * out.balanceLoss);
    };
    auto [cpuLogits, cpuLoss] = lossOf(cpu, torch::kCPU);
    auto [logits, loss] = lossOf(other, device);
    QCOMPARE(logits.device().type(), device.type());
    const double logitError = test::relativeError(logits.cpu(), cpuLogits);
    QVERIFY2(logitError < 1e-4, std::to_string(logitError).c_str());
    cpuLoss.backward();
    loss.backward();
    const auto cpuParameters = cpu->named_parameters();
    const auto parameters = other->named_parameters();
    for (const auto& item : cpuParameters) {
        const torch::Tensor& expected = item.value().grad();
        const torch::Tensor& got = parameters[item.key()].grad();
        QVERIFY2(expected.defined() == got.defined(), item.key().c_str());
        if (!expected.defined())
            continue;
        const double error = test::relativeError(got.cpu(), expected);
        QVERIFY2(error < 1e-4, (item.key() + ": " + std::to_string(error)).c_str());
    }
}

// Eval mode (no router noise): every token picks the same experts on both
// devices, except where its k-th and (k+1)-th choices tie to rounding.
void TestCuda::routingDecisionsMatchCpu()
{
    REQUIRE_DEVICE(device);
    const ModelConfig config = familyConfig(families()[1].second);
    auto [cpu, other] = twins(config, device);
    cpu->eval();
    other->eval();
    torch::manual_seed(4);
    const torch::Tensor ids = torch::randint(1, config.vocabSize, {4, 16});
    ForwardTrace cpuTrace, trace;
    torch::NoGradGuard noGrad;
    cpu->inspect(ids, {}, cpuTrace);
    other->inspect(ids.to(device), {}, trace);
    QCOMPARE(trace.blocks.size(), cpuTrace.blocks.size());
    std::int64_t compared = 0;
    for (std::size_t b = 0; b < cpuTrace.blocks.size(); ++b) {
        const BlockTrace &want = cpuTrace.blocks[b], &got = trace.blocks[b];
        if (!want.routed)
            continue;
        const torch::Tensor sorted = std::get<0>(want.probs.sort(-1, /*descending=*/true));  // [S, E]
        const torch::Tensor margin = sorted.select(1, config.topK - 1) - sorted.select(1, config.topK);
        const torch::Tensor clear = margin.gt(1e-4);  // [S]
        const torch::Tensor same = std::get<0>(got.expert.cpu().sort(-1)).eq(std::get<0>(want.expert.sort(-1))).all(-1);
        QVERIFY2(same.logical_or(clear.logical_not()).all().item<bool>(), ("block " + std::to_string(b)).c_str());
        compared += clear.sum().item<std::int64_t>();
    }
    QVERIFY2(compared > 32, std::to_string(compared).c_str());  // the check compared real decisions
}

// The routing kernel (model/FusedRouting.h) against the operators on the CPU,
// decision for decision. Each token's probabilities are a random permutation of
// E logits 0.05 apart, so no two are equal and the top K is one answer; the
// shapes put the queue's ends around the kernel's chunks of 1,024 entries.
// Tokens choose about evenly, so an expert is asked about tokens * K / E times:
// a row that means to drop pairs has a capacity below that.
void TestCuda::routingKernelDecidesAsTheOperators_data()
{
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<qint64>("experts");
    QTest::addColumn<qint64>("topK");
    QTest::addColumn<qint64>("capacity");
    QTest::addColumn<bool>("causal");
    QTest::addColumn<bool>("everyChoice");
    QTest::addColumn<bool>("drops");  // whether the row drops some pairs, as it means to
    QTest::newRow("no tokens") << 0LL << 4LL << 2LL << 1LL << false << false << false;
    QTest::newRow("one token") << 1LL << 4LL << 2LL << 1LL << false << false << false;
    QTest::newRow("one expert") << 300LL << 1LL << 1LL << 100LL << false << false << true;
    QTest::newRow("a warp, most dropped") << 32LL << 2LL << 1LL << 5LL << false << false << true;
    QTest::newRow("a chunk less one") << 1023LL << 8LL << 1LL << 100LL << false << false << true;
    QTest::newRow("a chunk") << 1024LL << 8LL << 1LL << 100LL << false << true << true;
    QTest::newRow("a chunk and one, causal") << 1025LL << 8LL << 1LL << 100LL << true << false << true;
    QTest::newRow("top 2 of 3, choice 1 mid-chunk") << 700LL << 3LL << 2LL << 400LL << false << false << true;
    // WideNet's capacity factor: 1.2 times the even share, rarely exceeded.
    QTest::newRow("WideNet: top 2 of 4, capacity 1.2") << 4096LL << 4LL << 2LL << 2458LL << false << false << false;
    QTest::newRow("WideNet's load at capacity 1.0") << 4096LL << 4LL << 2LL << 2048LL << false << false << true;
    QTest::newRow("top 8 of 256") << 600LL << 256LL << 8LL << 15LL << false << true << true;
    QTest::newRow("8192 tokens, top 2 of 64, causal") << 8192LL << 64LL << 2LL << 200LL << true << true << true;
    QTest::newRow("no drops, top 4 of 16") << 2000LL << 16LL << 4LL << 2000LL << false << false << false;
}

void TestCuda::routingKernelDecidesAsTheOperators()
{
    REQUIRE_DEVICE(device);
    QFETCH(qint64, tokens);
    QFETCH(qint64, experts);
    QFETCH(qint64, topK);
    QFETCH(qint64, capacity);
    QFETCH(bool, causal);
    QFETCH(bool, everyChoice);
    QFETCH(bool, drops);
    torch::manual_seed(tokens * 31 + experts);
    const torch::Tensor logits = std::get<1>(torch::rand({tokens, experts}).sort(/*dim=*/1)).to(torch::kFloat32) * 0.05;
    const torch::Tensor probs = torch::softmax(logits, -1);
    RoutingOptions options;
    options.topK = topK;
    options.causal = causal;
    options.balanceEveryChoice = everyChoice;
    // The operators' decisions, on the CPU: checked there too, so that a row
    // is known to drop pairs, or not, as it means to.
    const RoutingDecisions want = decideByOperators(probs, capacity, options);
    QCOMPARE(want.kept.logical_not().any().item<bool>(), drops);
    if (!device.is_cuda())
        QSKIP("the routing kernel is CUDA's; on the CPU the operators route (tst_routing)");
    if (!fusedRoutingBuilt())
        QSKIP(qPrintable(QString::fromStdString(fusedRoutingRefusal(device))));
    QCOMPARE(QString::fromStdString(fusedRoutingRefusal(device)), QString());  // its own try on this GPU passed
    QVERIFY(fusedRoutingRuns(probs.to(device), options));
    const RoutingDecisions got = fusedRoutingDecisions(probs.to(device), capacity, options);
    QVERIFY(torch::equal(got.expert.cpu(), want.expert));
    QVERIFY(torch::equal(got.gates.cpu(), want.gates));
    QVERIFY(torch::equal(got.slot.cpu(), want.slot));
    QVERIFY(torch::equal(got.kept.cpu(), want.kept));
    QVERIFY(torch::equal(got.chosen.cpu(), want.chosen));
}

// tst_routing's firstChoicesAreServedBeforeSecondChoices and
// causalRoutingServesTokenByToken on the device under test: on a GPU whose build
// has the routing kernel, the kernel serves them.
void TestCuda::routingServesTheHandWorkedQueue()
{
    REQUIRE_DEVICE(device);
    const auto longs = [&](std::vector<std::int64_t> values, std::int64_t rows) {
        return torch::tensor(values, torch::kLong).view({rows, -1});
    };
    const torch::Tensor x = torch::tensor({{2.0f, 0.0f}, {2.0f, 0.0f}, {0.0f, 2.0f}}).to(device);
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = 0.6;  // ceil(2 * 0.6 * 3 / 2) = 2 slots per expert
    // First choices first: e0 gets t0, t1 and e1 gets t2; then t0 -> e1 slot 1,
    // t1 -> e1 slot 2 (dropped), t2 -> e0 slot 2 (dropped).
    const Routing queued = route(x, torch::eye(2).to(device), options);
    QVERIFY(torch::equal(queued.expert.cpu(), longs({0, 1, 0, 1, 1, 0}, 3)));
    QVERIFY(torch::equal(queued.slot.cpu(), longs({0, 1, 1, 2, 0, 2}, 3)));
    QVERIFY(torch::equal(queued.kept.cpu(), longs({1, 1, 1, 0, 1, 0}, 3).to(torch::kBool)));
    // Token by token: t0 takes e0 and e1 slot 0, t1 slot 1 of both, t2 finds both full.
    options.causal = true;
    const Routing causal = route(x, torch::eye(2).to(device), options);
    QVERIFY(torch::equal(causal.slot.cpu(), longs({0, 0, 1, 1, 2, 2}, 3)));
    QVERIFY(torch::equal(causal.kept.cpu(), longs({1, 1, 1, 1, 0, 0}, 3).to(torch::kBool)));
    if (device.is_cuda() && fusedRoutingBuilt())
        QVERIFY(fusedRoutingRuns(queued.probs, options));
}

// Under bf16 autocast the router's probabilities stay fp32, and the logits stay
// within bf16's rounding of the fp32 model's: 8 significant bits give about
// 4e-3 per operation, compounding over a few layers to a few percent.
void TestCuda::bf16KeepsTheRouterInFp32()
{
    REQUIRE_DEVICE(device);
    const ModelConfig config = familyConfig(families()[1].second);
    torch::manual_seed(12);
    WideTransformer model(config);
    model->to(device);
    model->eval();
    const torch::Tensor ids = torch::randint(1, config.vocabSize, {4, 16}).to(device);
    torch::NoGradGuard noGrad;
    ForwardTrace fp32Trace, bf16Trace;
    const torch::Tensor fp32Logits = model->inspect(ids, {}, fp32Trace).logits;
    torch::Tensor bf16Logits;
    {
        const AutocastScope bf16(device.type(), torch::kBFloat16, device.is_cuda());
        bf16Logits = model->inspect(ids, {}, bf16Trace).logits;
    }
    if (device.is_cuda())
        QCOMPARE(bf16Logits.scalar_type(), torch::kBFloat16);
    for (const BlockTrace& block : bf16Trace.blocks)
        if (block.routed)
            QCOMPARE(block.probs.scalar_type(), torch::kFloat32);
    const double error = test::relativeError(bf16Logits.to(torch::kFloat32).cpu(), fp32Logits.cpu());
    QVERIFY2(error < 5e-2, std::to_string(error).c_str());
}

// On a GPU, metrics.jsonl reports the CUDA allocator's bytes, not the process's.
// The experts' grouped products (model/GroupedExperts.h) as the bench runs
// them, under bf16 autocast, against the capacity buffer on the same GPU under
// the same autocast: the gate-weighted answers and every gradient, with
// dropped pairs (which ride in the last group as rows of zeros) and dropless.
// tst_groupedexperts checks the same products on the CPU, in fp32.
void TestCuda::groupedExpertsMatchTheBufferInBf16_data()
{
    QTest::addColumn<double>("capacityFactor");
    // 24 tokens, 3 experts, top-2: ceil(2 * 0.5 * 24 / 3) = 8 slots each for 48
    // pairs, so at least 24 are dropped; a factor of 0 drops none.
    QTest::newRow("with dropped pairs") << 0.5;
    QTest::newRow("dropless") << 0.0;
}

void TestCuda::groupedExpertsMatchTheBufferInBf16()
{
    REQUIRE_DEVICE(device);
    QFETCH(double, capacityFactor);
    if (!device.is_cuda())
        QSKIP("the grouped products are a GPU's; tst_groupedexperts checks them on the CPU");
    if (const std::string why = groupedProductsRefusal(device, torch::kBFloat16); !why.empty())
        QSKIP(why.c_str());
    torch::manual_seed(7);
    // Rows of 32 and 64 bf16 values: multiples of 16 bytes, as at::_grouped_mm reads them.
    FeedForward experts(3, 32, 64, Activation::Gelu);
    {
        const torch::NoGradGuard noGrad;  // biases of their own, so that both products' reach the answers
        experts->bIn.copy_(torch::linspace(-0.5, 0.7, 3 * 64).view({3, 64}));
        experts->bOut.copy_(torch::linspace(0.4, -0.6, 3 * 32).view({3, 32}));
    }
    experts->to(device);
    const auto on = torch::TensorOptions().device(device);
    const torch::Tensor x0 = torch::randn({24, 32}).to(device);
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = capacityFactor;
    torch::manual_seed(5);
    const Routing r = route(x0, torch::randn({3, 32}).to(device), options);
    QVERIFY(capacityFactor > 0 ? !r.kept.all().item<bool>() : r.kept.all().item<bool>());

    const torch::Tensor upstream = torch::linspace(-1.0, 1.0, 24 * 32, on).view({24, 32});
    std::vector<torch::Tensor> results;  // per side: the answers, then the gradients of x, w_in, b_in, w_out, b_out
    for (const bool grouped : {false, true}) {
        experts->zero_grad();
        const torch::Tensor x = x0.clone().requires_grad_();
        torch::Tensor combined;
        {
            const AutocastScope bf16(device.type(), torch::kBFloat16);
            const torch::Tensor answers = grouped ? groupedExpertAnswers(x, r, *experts, GroupedProducts::GroupedMm)
                                                  : bufferedExpertAnswers(x, r, *experts);
            const torch::Tensor weight = torch::where(r.kept, r.gates, 0.0).reshape({-1, 1});
            combined = (answers.to(torch::kFloat) * weight).view({24, 2, 32}).sum(1);
        }
        combined.backward(upstream);
        results.push_back(combined.detach().cpu());
        results.push_back(x.grad().cpu());
        for (const torch::Tensor& p : {experts->wIn, experts->bIn, experts->wOut, experts->bOut})
            results.push_back(p.grad().cpu());
    }
    const std::size_t half = results.size() / 2;
    for (std::size_t i = 0; i < half; ++i) {
        const double error = test::relativeError(results[half + i], results[i]);
        QVERIFY2(error < 2e-2, qPrintable(QString("%1 (answers, then the gradients of x, w_in, b_in, w_out, b_out): "
                                                  "relative error %2")
                                              .arg(i)
                                              .arg(error)));
    }
}

// The fused dispatch and combine at WideNet's width on the device against the
// host loops of the same arithmetic (tst_expertrows checks those against
// LibTorch's operators): rows bit for bit, sums in float within rounding, and
// the same gradients from two runs (no atomic additions).
void TestCuda::expertRowsMatchTheHostLoops()
{
    REQUIRE_DEVICE(device);
    // 300 tokens, top-2, 1,024 values and 8 bias columns; rows and answers in
    // bf16, tokens and output in fp32, as under autocast. Row i holds pair
    // (7 i + 3) mod 600 (7 shares no factor with 600); every fourth row is a
    // dropped pair's.
    const std::int64_t S = 300, K = 2, D = 1024, P = S * K, bias = 8;
    const torch::Tensor pairOfRow = torch::arange(P, torch::kLong).mul(7).add(3).remainder(P);
    const torch::Tensor droppedRow = torch::arange(P, torch::kLong).remainder(4).eq(0);
    const torch::Tensor token = torch::where(droppedRow, torch::full({P}, S, torch::kLong), pairOfRow.div(K, "floor"));
    const torch::Tensor row = torch::empty({P}, torch::kLong).scatter_(0, pairOfRow, torch::arange(P, torch::kLong));
    torch::manual_seed(11);
    const torch::Tensor x0 = torch::randn({S, D}), answers0 = torch::randn({P, D}).to(torch::kBFloat16);
    const torch::Tensor weight0 = torch::where(droppedRow.index_select(0, row), torch::zeros({P}), torch::rand({P}));
    const torch::Tensor upstreamRows = torch::randn({P, D + bias}).to(torch::kBFloat16), upstreamOut = torch::randn({S, D});
    if (device.is_cuda() && fusedRoutingBuilt())  // the build compiled WideLab's kernels: their own try here passed
        QCOMPARE(QString::fromStdString(fusedExpertRowsRefusal(device)), QString());
    if (!fusedExpertRowsRun(device))
        QSKIP(qPrintable(QString::fromStdString(fusedExpertRowsRefusal(device))));

    const auto run = [&](const c10::Device& on) {
        // Copies even on the CPU, so that each run's gradients are its own.
        const torch::Tensor x = x0.to(on).clone().requires_grad_(), answers = answers0.to(on).clone().requires_grad_();
        const torch::Tensor weight = weight0.to(on).clone().requires_grad_();
        const torch::Tensor rows = dispatchRows(x, token.to(on), row.to(on), K, bias, torch::kBFloat16);
        const torch::Tensor out = combineRows(answers, row.to(on), weight, K, torch::kFloat);
        torch::autograd::backward({rows, out}, {upstreamRows.to(on), upstreamOut.to(on)});
        return std::vector<torch::Tensor>{rows.detach().to(torch::kFloat).cpu(), out.detach().cpu(), x.grad().cpu(),
                                          answers.grad().to(torch::kFloat).cpu(), weight.grad().cpu()};
    };
    const std::vector<torch::Tensor> host = run(c10::Device(c10::kCPU)), here = run(device), again = run(device);
    // Products and sums of K terms in the same order; the weights' gradient
    // sums 1,024 terms, in a tree on the GPU and in a row on the host.
    const double tolerance[] = {0.0, 1e-6, 1e-6, 0.0, 1e-4};
    const char* names[] = {"rows", "combined", "tokens' gradient", "answers' gradient", "weights' gradient"};
    for (std::size_t i = 0; i < host.size(); ++i) {
        QVERIFY2(torch::allclose(here[i], host[i], tolerance[i], tolerance[i]), names[i]);
        QVERIFY2(torch::equal(here[i], again[i]), names[i]);
    }
}

void TestCuda::groupPlanKernelPlansAsTheOperators_data()
{
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<qint64>("choices");
    QTest::addColumn<qint64>("experts");
    QTest::addColumn<double>("dropped");
    // WideNet's step (8,192 tokens, top-2 of 4), one token, a pair per warp
    // or fewer, 256 experts, every pair dropped and none.
    QTest::newRow("8192 tokens, top-2 of 4") << qint64{8192} << qint64{2} << qint64{4} << 0.1;
    QTest::newRow("1 token") << qint64{1} << qint64{1} << qint64{3} << 0.0;
    QTest::newRow("20 tokens, top-1 of 5") << qint64{20} << qint64{1} << qint64{5} << 0.3;
    QTest::newRow("3000 tokens, top-3 of 256") << qint64{3000} << qint64{3} << qint64{256} << 0.2;
    QTest::newRow("every pair dropped") << qint64{700} << qint64{2} << qint64{8} << 1.0;
    QTest::newRow("none dropped") << qint64{1025} << qint64{2} << qint64{16} << 0.0;
}

// The kernel's plan (the pairs' rows, the rows' tokens and keys, the groups'
// ends) equals the operators' stable sort on the CPU, entry for entry.
void TestCuda::groupPlanKernelPlansAsTheOperators()
{
    REQUIRE_DEVICE(device);
    QFETCH(qint64, tokens);
    QFETCH(qint64, choices);
    QFETCH(qint64, experts);
    QFETCH(double, dropped);
    if (!device.is_cuda())
        QSKIP("the group plan kernel is CUDA's; on the CPU the operators plan (tst_groupedexperts)");
    if (!fusedRoutingBuilt())
        QSKIP(qPrintable(QString::fromStdString(groupPlanRefusal(device, experts))));
    QCOMPARE(QString::fromStdString(groupPlanRefusal(device, experts)), QString());  // its own try here passed
    torch::manual_seed(tokens + experts);
    const torch::Tensor expert = torch::randint(experts, {tokens, choices}, torch::kLong);
    const torch::Tensor kept = torch::rand({tokens, choices}).ge(dropped);
    const GroupPlan want = planGroupsByOperators(expert, kept, experts);
    const GroupPlan got = planGroups(expert.to(device), kept.to(device), experts);
    QVERIFY(torch::equal(got.row.cpu(), want.row));
    QVERIFY(torch::equal(got.token.cpu(), want.token));
    QVERIFY(torch::equal(got.rowKey.cpu(), want.rowKey));
    QVERIFY(torch::equal(got.ends.cpu(), want.ends));
}

void TestCuda::memoryIsTheAllocators()
{
    REQUIRE_DEVICE(device);
    QTemporaryDir dir;
    Trainer trainer(tinyRun(testDevice(), R"({"train": {"steps": 3}})"), fresh(dir, "run"));
    std::atomic<bool> stop{false};
    trainer.run(stop);
    const auto lines = trainLines(fresh(dir, "run"));
    QVERIFY(!lines.empty());
    const nlohmann::json& last = lines.back();
    QCOMPARE(last["memory_kind"].get<std::string>(), std::string(device.is_cuda() ? "cuda" : "rss"));
    const auto allocated = last["memory_bytes"].get<std::int64_t>();
    QVERIFY(allocated > 0);
    QVERIFY(last["memory_reserved_bytes"].get<std::int64_t>() >= allocated);
    QVERIFY(last["memory_peak_bytes"].get<std::int64_t>() >= allocated);
    if (device.is_cuda())  // a tiny model: far below what the process holds (its CUDA context alone is larger)
        QVERIFY(allocated < 256 << 20);
}

// One product and one sum on the device, each in a phase scope: on a GPU the
// profile holds their kernels' device time, each linked to the operator that
// launched it and to the phase open when the host launched it.
void TestCuda::kernelProfileNamesTheDevicesWork()
{
    REQUIRE_DEVICE(device);
    const torch::Tensor a = torch::rand({512, 512}, torch::TensorOptions().device(device));
    torch::Tensor product, total;
    PhaseTimer::reset();
    PhaseTimer::setEnabled(true);
    const KernelProfile profile = profileKernels(
        [&] {
            {
                const PhaseScope timed(Phase::Routing);
                product = torch::mm(a, a);
            }
            const PhaseScope timed(Phase::FeedForward);
            total = product.sum();
        },
        device);
    PhaseTimer::setEnabled(false);
    PhaseTimer::reset();
    QVERIFY2(profile.unavailable.empty(), profile.unavailable.c_str());
    QCOMPARE(profile.deviceTime, device.is_cuda());
    QCOMPARE(profile.byKernel.empty(), !device.is_cuda());
    const auto mm = std::find_if(profile.byOperator.begin(), profile.byOperator.end(),
                                 [](const OperatorTime& entry) { return entry.name == "aten::mm"; });
    QVERIFY2(mm != profile.byOperator.end(), profile.byOperator.empty() ? "none" : profile.byOperator[0].name.c_str());
    // One call on the CPU; on a GPU the kernels cuBLAS launches for it (one, or a split product and its sum).
    if (device.is_cuda())
        QVERIFY(mm->calls >= 1 && mm->calls <= 4);
    else
        QCOMPARE(mm->calls, std::int64_t{1});
    QVERIFY(mm->seconds > 0.0 && mm->seconds <= profile.seconds);
    const auto phase = [&](const char* name) {
        const auto found = std::find_if(profile.byPhase.begin(), profile.byPhase.end(),
                                        [&](const OperatorTime& entry) { return entry.name == name; });
        return found != profile.byPhase.end() ? *found : OperatorTime{};
    };
    // The product is routing's whole time on a GPU (its kernels), part of it on
    // the CPU (mm's self time); the sum is the experts'.
    const OperatorTime routing = phase("routing_dispatch_combine"), experts = phase("ffn_experts");
    if (device.is_cuda()) {
        QCOMPARE(routing.calls, mm->calls);
        QVERIFY(std::abs(routing.seconds - mm->seconds) < 1e-9);
    } else {
        QVERIFY(routing.seconds >= mm->seconds);
    }
    QVERIFY(experts.calls >= 1 && experts.seconds > 0.0);
    QVERIFY(std::isfinite(total.item<double>()));
}

void TestCuda::shortTrainingLearns()
{
    REQUIRE_DEVICE(device);
    QTemporaryDir dir;
    Trainer trainer(tinyRun(testDevice(), R"({"train": {"steps": 60, "eval_every": 60, "bf16": true}})"),
                    fresh(dir, "run"));
    QCOMPARE(trainer.device().type(), device.type());
    std::atomic<bool> stop{false};
    QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    const auto train = trainLines(fresh(dir, "run"));
    QCOMPARE(train.size(), std::size_t{60});
    double first = 0, last = 0;
    for (std::size_t i = 0; i < 10; ++i) {
        first += train[i]["task_loss"].get<double>() / 10;
        last += train[train.size() - 1 - i]["task_loss"].get<double>() / 10;
    }
    QVERIFY2(last < first - 0.2, qPrintable(QStringLiteral("loss %1 -> %2").arg(first).arg(last)));
}

// Ten steps, a stop, ten more after a resume: the losses follow the
// uninterrupted run's (exactly on the CPU; to rounding on a GPU, whose atomic
// additions are not ordered, see docs/run-directory.md). Dropout draws on the
// device's generator, whose state the checkpoint carries.
void TestCuda::resumeContinuesTheRun()
{
    REQUIRE_DEVICE(device);
    QTemporaryDir dir;
    {
        Trainer whole(tinyRun(testDevice()), fresh(dir, "whole"));
        std::atomic<bool> stop{false};
        whole.run(stop);
    }
    {
        // The same run, stopped after step 10 (a stop saves a checkpoint).
        Trainer first(tinyRun(testDevice()), fresh(dir, "parts"));
        QCOMPARE(static_cast<int>(test::runStoppedAt(first, 10).outcome), static_cast<int>(TrainOutcome::Stopped));
    }
    if (device.is_cuda()) {
        torch::serialize::InputArchive archive;
        archive.load_from((fresh(dir, "parts") / "checkpoints" / "step-00000010.pt").string());
        torch::Tensor state;
        QVERIFY(archive.try_read("rng_cuda", state));
    }
    {
        TrainerOptions options;
        options.resume = true;
        Trainer second(readRunDocument(fresh(dir, "parts")), fresh(dir, "parts"), options);
        QCOMPARE(second.step(), std::int64_t{10});
        std::atomic<bool> stop{false};
        second.run(stop);
    }
    const auto whole = trainLines(fresh(dir, "whole")), parts = trainLines(fresh(dir, "parts"));
    QCOMPARE(parts.size(), whole.size());
    const double tolerance = device.is_cuda() ? 1e-3 : 0.0;
    for (std::size_t i = 10; i < whole.size(); ++i) {
        const double want = whole[i]["loss"].get<double>(), got = parts[i]["loss"].get<double>();
        QVERIFY2(std::abs(got - want) <= tolerance * std::abs(want),
                 qPrintable(QStringLiteral("step %1: %2 against %3").arg(i + 1).arg(got).arg(want)));
    }
}

// SGD at a rate of 100 diverges. Measured only every 10 steps, a GPU run still
// names the first step that went wrong and keeps the last finite checkpoint.
void TestCuda::nonFiniteStopNamesTheFirstBadStep()
{
    REQUIRE_DEVICE(device);
    QTemporaryDir dir;
    Trainer trainer(tinyRun(testDevice(), R"({"train": {"optimizer": "sgd", "learning_rate": 100, "warmup_steps": 0,
                                                       "schedule": "constant", "gradient_clip": 0, "steps": 200,
                                                       "log_every": 10, "checkpoint_every": 1000,
                                                       "eval_every": 1000}})"),
                    fresh(dir, "run"));
    QCOMPARE(trainer.device().type(), device.type());
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::NonFinite));
    QVERIFY2(summary.message.rfind("step ", 0) == 0, summary.message.c_str());
    const std::int64_t named = std::stoll(summary.message.substr(5));
    QVERIFY2(named >= 1 && named <= summary.step + 1, summary.message.c_str());
    QVERIFY2(summary.message.find("the loss") != std::string::npos
                 || summary.message.find("the gradient of ") != std::string::npos,
             summary.message.c_str());
    QVERIFY(!latestCheckpoint(fresh(dir, "run")).has_value());  // nothing non-finite was saved
}

// A step that does not fit ends the run with a message naming what did not fit;
// the run and its last checkpoint stay, and resume from there.
void TestCuda::outOfMemoryKeepsTheRun()
{
#ifdef WIDELAB_TORCH_CUDA
    REQUIRE_DEVICE(device);
    if (!device.is_cuda())
        QSKIP("a memory cap exists for CUDA devices only; tst_trainer covers the CPU");
    QTemporaryDir dir;
    const char* big = R"({"train": {"steps": 5, "batch_size": 256, "checkpoint_every": 5, "eval_every": 1000}})";
    {
        Trainer first(tinyRun(testDevice(), big), fresh(dir, "run"));
        std::atomic<bool> stop{false};
        QCOMPARE(static_cast<int>(first.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    }
    namespace allocator = c10::cuda::CUDACachingAllocator;
    allocator::emptyCache();
    const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
    const std::int64_t total = availableDevices().at(static_cast<std::size_t>(index) + 1).memoryBytes;
    // Room for the weights and the optimizer state (a few MiB) but not for a
    // step's activations at batch 256 (tens of MiB, each over 1 MiB).
    const double cap = static_cast<double>(deviceMemory(device).reserved + (24 << 20));
    allocator::setMemoryFraction(cap / static_cast<double>(total), index);
    struct Uncap {
        c10::DeviceIndex index;
        ~Uncap() { c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, index); }
    } uncap{index};
    TrainerOptions options;
    options.resume = true;
    options.steps = 10;
    Trainer second(readRunDocument(fresh(dir, "run")), fresh(dir, "run"), options);
    std::atomic<bool> stop{false};
    const TrainSummary summary = second.run(stop);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::OutOfMemory));
    for (const char* part : {"out of memory on cuda", "training step 6", "batch of 256 x", "train.batch_size",
                             "last checkpoint (step 5)"})
        QVERIFY2(summary.message.find(part) != std::string::npos, (part + std::string(": ") + summary.message).c_str());
    QCOMPARE(latestCheckpoint(fresh(dir, "run"))->filename().string(), std::string("step-00000005.pt"));
    QCOMPARE(openRun(fresh(dir, "run")).state.step, std::int64_t{5});
#else
    QSKIP("this LibTorch has no CUDA; tst_trainer covers running out of memory on the CPU");
#endif
}

// train.cuda_graph on a GPU: the device and a LibTorch that records graphs,
// or a reason to skip (the CPU's part is tst_stepgraphs, with its recorder).
#define SKIP_WITHOUT_GRAPHS(device)                                                                               \
    if (!device.is_cuda())                                                                                        \
        QSKIP("the CPU has no CUDA graphs; tst_stepgraphs checks the recorded path there with a recorder of its own"); \
    if (!FusedAdamW::available())                                                                                 \
    QSKIP("this LibTorch has no fused AdamW, whose capturable step a recording needs")

#define REQUIRE_GRAPHS(device) \
    REQUIRE_DEVICE(device);    \
    SKIP_WITHOUT_GRAPHS(device)

namespace {

// The train lines' losses of a run of `overrides` (fp32, no dropout, logged every 5 steps) on the device.
std::vector<double> graphRunLosses(const std::filesystem::path& directory, const std::string& overrides,
                                   bool cudaGraph)
{
    nlohmann::json patch = nlohmann::json::parse(R"({"model": {"dropout": 0.0, "router_noise_std": 0.0},
                                                     "train": {"bf16": false, "log_every": 5, "steps": 30,
                                                               "eval_every": 30, "checkpoint_every": 30}})");
    patch.merge_patch(nlohmann::json::parse(overrides));
    patch["train"]["cuda_graph"] = cudaGraph;
    Trainer trainer(tinyRun(testDevice(), patch.dump()), directory);
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    if (summary.outcome != TrainOutcome::Completed)
        throw std::runtime_error(summary.message);
    std::vector<double> losses;
    for (const nlohmann::json& line : trainLines(directory))
        losses.push_back(line["loss"].get<double>());
    return losses;
}

std::string logText(const std::filesystem::path& run)
{
    std::ifstream in(run / "log.txt");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

void TestCuda::replayedStepsMatchOrdinaryOnes_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::newRow("dense, padded ListOps") << R"({})";
    QTest::newRow("widenet, full batches")
        << R"({"model": {"experts": 4, "top_k": 2, "share_attention": true, "share_ffn": true, "max_len": 16},
               "task": {"min_length": 16, "max_length": 16}})";
    QTest::newRow("multipath") << R"({"model": {"paths": 3, "heads": 2, "path_extra_features": true}})";
    // A language model's task reads a text (written by the test at @TEXT@)
    // and has none of ListOps's keys.
    QTest::newRow("language model")
        << R"({"model": {"head": "language_model", "experts": 2, "top_k": 1, "max_len": 16, "vocab_size": 64,
                         "num_classes": null},
               "task": {"kind": "language_model", "path": "@TEXT@", "tokenizer": "character", "sequence_length": 16,
                        "min_length": null, "max_length": null, "train_size": null, "validation_size": null,
                        "test_size": null}})";
}

// The same run with ordinary and with replayed steps (fp32): every logged loss
// agrees to 1e-3 relative (the padding changes the order of additions, and a
// GPU's atomics theirs), and the log says the steps were recorded, not that a
// capture failed.
void TestCuda::replayedStepsMatchOrdinaryOnes()
{
    REQUIRE_DEVICE(device);
    QFETCH(QString, overrides);
    QTemporaryDir dir;
    const std::filesystem::path text = fresh(dir, "text.txt");
    {
        std::ofstream out(text);
        for (int i = 0; i < 200; ++i)
            out << "line " << i << " of a text that a language model reads, " << (i % 2 ? "odd" : "even") << ".\n";
    }
    overrides.replace(QLatin1String("@TEXT@"), QString::fromStdString(text.string()));
    std::vector<double> want, got;
    // The ordinary run on the CPU as well: each row's run must be one that trains.
    const std::string run = overrides.toStdString();
    QString failed = test::thrownMessage([&] { want = graphRunLosses(fresh(dir, "ordinary"), run, false); });
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
    QVERIFY(!want.empty());
    SKIP_WITHOUT_GRAPHS(device);
    failed = test::thrownMessage([&] { got = graphRunLosses(fresh(dir, "replayed"), run, true); });
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
    const std::string log = logText(fresh(dir, "replayed"));
    QVERIFY2(log.find("recorded once per batch shape and replayed") != std::string::npos, log.c_str());
    QVERIFY2(log.find("steps run ordinarily") == std::string::npos, log.c_str());
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        QVERIFY2(std::abs(got[i] - want[i]) <= 1e-3 * std::abs(want[i]),
                 qPrintable(QStringLiteral("line %1: %2 against %3").arg(i).arg(got[i]).arg(want[i])));
}

// Fifteen replayed steps, a stop, fifteen more after a resume (recorded
// again): the losses follow the uninterrupted replayed run's to rounding.
void TestCuda::resumeAcrossReplayedStepsContinuesTheRun()
{
    REQUIRE_GRAPHS(device);
    QTemporaryDir dir;
    const std::string overrides = R"({"train": {"cuda_graph": true, "steps": 30, "log_every": 5,
                                                 "checkpoint_every": 15, "eval_every": 15}})";
    {
        Trainer whole(tinyRun(testDevice(), overrides), fresh(dir, "whole"));
        std::atomic<bool> stop{false};
        whole.run(stop);
    }
    {
        Trainer first(tinyRun(testDevice(), overrides), fresh(dir, "parts"));
        QCOMPARE(static_cast<int>(test::runStoppedAt(first, 15).outcome), static_cast<int>(TrainOutcome::Stopped));
    }
    {
        TrainerOptions options;
        options.resume = true;
        Trainer second(readRunDocument(fresh(dir, "parts")), fresh(dir, "parts"), options);
        QCOMPARE(second.step(), std::int64_t{15});
        std::atomic<bool> stop{false};
        second.run(stop);
    }
    const auto whole = trainLines(fresh(dir, "whole")), parts = trainLines(fresh(dir, "parts"));
    QCOMPARE(parts.size(), whole.size());
    for (std::size_t i = 3; i < whole.size(); ++i) {
        const double want = whole[i]["loss"].get<double>(), got = parts[i]["loss"].get<double>();
        QVERIFY2(std::abs(got - want) <= 1e-3 * std::abs(want),
                 qPrintable(QStringLiteral("line %1: %2 against %3").arg(i).arg(got).arg(want)));
    }
}

QTEST_GUILESS_MAIN(TestCuda)
#include "tst_cuda.moc"
