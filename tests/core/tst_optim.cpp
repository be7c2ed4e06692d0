// Tests of train/Lamb and train/Schedule: LAMB against hand-derived steps and against the independent
// Python reference in tests/reference/optim_reference.py, its checkpointing through a torch::serialize
// archive, and the learning-rate schedules at steps worked out by hand in the comments.
#include "TestSupport.h"
#include "train/FusedAdamW.h"
#include "train/GradientHealth.h"
#include "train/Lamb.h"
#include "train/Optimizers.h"
#include "train/Schedule.h"
#include "runtime/OperatorCount.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

using namespace widelab;

Q_DECLARE_METATYPE(widelab::ScheduleKind)

namespace {

torch::Tensor doubles(std::initializer_list<double> values)
{
    return torch::tensor(std::vector<double>(values), torch::kFloat64);
}

torch::Tensor fromList(const QList<double>& values)
{
    return torch::tensor(std::vector<double>(values.begin(), values.end()), torch::kFloat64);
}

bool approxEqual(double actual, double expected, double relative = 1e-12)
{
    return std::abs(actual - expected) <= relative * std::max(1.0, std::abs(expected));
}

const LambParamState& lambState(const torch::optim::Optimizer& optimizer, const torch::Tensor& param)
{
    return static_cast<const LambParamState&>(
        *optimizer.state().at(optimizerStateKey(optimizer.state(), param)));
}

// Runs tests/reference/optim_reference.py (next to WIDELAB_REFERENCE_SCRIPT) on a case and returns what it wrote.
std::map<std::string, torch::Tensor> runOptimReference(const nlohmann::json& spec,
                                                       const std::map<std::string, torch::Tensor>& tensors,
                                                       const std::string& caseName)
{
    if (std::string(WIDELAB_REFERENCE_PYTHON).empty())
        throw std::runtime_error("no Python with torch was found at configure time (apt-get install python3-torch)");
    const std::filesystem::path script =
        std::filesystem::path(WIDELAB_REFERENCE_SCRIPT).replace_filename("optim_reference.py");
    const std::filesystem::path directory = std::filesystem::temp_directory_path() / "widelab-reference";
    std::filesystem::create_directories(directory);
    const std::filesystem::path json = directory / (caseName + ".json");
    const std::filesystem::path input = directory / (caseName + ".pt");
    const std::filesystem::path output = directory / (caseName + ".out.pt");
    std::filesystem::remove(output);

    std::ofstream(json) << spec.dump(2);
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& [name, tensor] : tensors)
        dict.insert(name, tensor.detach().contiguous());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    std::ofstream(input, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

    const std::string command = std::string("\"") + WIDELAB_REFERENCE_PYTHON + "\" \"" + script.string() + "\" \""
                                + json.string() + "\" \"" + input.string() + "\" \"" + output.string() + "\" 2>&1";
    std::string log;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe)
        throw std::runtime_error("cannot start " + command);
    char buffer[4096];
    while (const std::size_t got = fread(buffer, 1, sizeof buffer, pipe))
        log.append(buffer, got);
    if (pclose(pipe) != 0)
        throw std::runtime_error("reference failed (" + command + "):\n" + log);

    std::ifstream in(output, std::ios::binary);
    const std::vector<char> result((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, torch::Tensor> outputs;
    for (const auto& entry : torch::pickle_load(result).toGenericDict())
        outputs[entry.key().toStringRef()] = entry.value().toTensor();
    return outputs;
}

nlohmann::json toJson(const LambOptions& options)
{
    return {{"lr", options.lr()},
            {"betas", {std::get<0>(options.betas()), std::get<1>(options.betas())}},
            {"eps", options.eps()},
            {"weight_decay", options.weight_decay()},
            {"bias_correction", options.bias_correction()}};
}

// Two groups: a random [3, 4] matrix with the default options, and a zero-initialised [5] vector (its first
// step takes the trust-ratio fallback) with its own rate, betas, stronger weight decay and no bias correction.
LambOptions firstGroupOptions() { return LambOptions(0.01); }
LambOptions secondGroupOptions()
{
    return LambOptions(0.02).betas(std::make_tuple(0.8, 0.99)).eps(1e-6).weight_decay(0.1).bias_correction(false);
}

std::vector<torch::optim::OptimizerParamGroup> twoGroups(const torch::Tensor& matrix, const torch::Tensor& vector)
{
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{matrix}, std::make_unique<LambOptions>(firstGroupOptions()));
    groups.emplace_back(std::vector<torch::Tensor>{vector}, std::make_unique<LambOptions>(secondGroupOptions()));
    return groups;
}

// Gradients for `steps` steps of the two parameters: grads[t][i].
std::vector<std::vector<torch::Tensor>> randomGradients(std::int64_t steps, torch::ScalarType dtype)
{
    std::vector<std::vector<torch::Tensor>> grads;
    for (std::int64_t t = 0; t < steps; ++t)
        grads.push_back({torch::randn({3, 4}, torch::kFloat64).to(dtype),
                         (0.01 * torch::randn({5}, torch::kFloat64)).to(dtype)});
    return grads;
}

void setGradients(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads)
{
    for (std::size_t i = 0; i < params.size(); ++i)
        params[i].mutable_grad() = grads[i].clone();
}

}  // namespace

class TestOptim : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }

    void lambHandStep_data();
    void lambHandStep();
    void lambMatchesReference_data();
    void lambMatchesReference();
    void lambStateSurvivesSaveAndLoad();
    void lambOptionsRoundTrip();
    void lambClosureAndMissingGradients();
    void lambRejectsInvalidOptions();

    void fusedAdamWHandStep();
    void fusedAdamWMatchesAdamW_data();
    void fusedAdamWMatchesAdamW();
    void fusedAdamWCheckpointsLoadInAdamW();

    void clippingScalesEveryGradientByOneFactor();
    void clearingGradientsDispatchesNothing();

    void schedule_data();
    void schedule();
    void warmupRsqrtEqualsInverseSqrt();
    void warmupReachesPeakContinuously_data();
    void warmupReachesPeakContinuously();
    void decaysMonotonicallyAfterWarmup_data();
    void decaysMonotonicallyAfterWarmup();
    void scheduleRejectsNegativeSteps();
    void applyLearningRateSetsEveryGroup();
    void applyLearningRateRejectsOtherOptimizers();

    void optimizerDecaysMatricesOnly_data();
    void optimizerDecaysMatricesOnly();
};

// ---------------------------------------------------------------------------------------------------------------
// LAMB
// ---------------------------------------------------------------------------------------------------------------

void TestOptim::lambHandStep_data()
{
    QTest::addColumn<QList<double>>("weights");
    QTest::addColumn<QList<double>>("grad");
    QTest::addColumn<double>("lr");
    QTest::addColumn<double>("beta2");
    QTest::addColumn<double>("eps");
    QTest::addColumn<double>("weightDecay");
    QTest::addColumn<bool>("biasCorrection");
    QTest::addColumn<QList<double>>("expected");

    // b1 = 0.9 throughout. Step 1: m = 0.1 g, v = (1 - b2) g^2.
    // Bias corrected: m_hat = g, v_hat = g^2, m_hat / sqrt(v_hat) = sign(g) = [1, -1].
    // u = [1, -1] + 0.5 [6, 8] = [4, 3]; ||u|| = 5, ||w|| = 10, r = 2;
    // w = [6, 8] - 0.1 * 2 * [4, 3] = [5.2, 7.4].
    QTest::newRow("bias corrected") << QList<double>{6, 8} << QList<double>{1, -2} << 0.1 << 0.999 << 0.0 << 0.5
                                    << true << QList<double>{5.2, 7.4};
    // No bias correction, b2 = 0.96: m = 0.1 g, sqrt(v) = 0.2 |g|, m / sqrt(v) = 0.5 sign(g) = [0.5, -0.5].
    // u = [0.5, -0.5] + 0.25 [6, 8] = [2, 1.5]; ||u|| = 2.5, r = 10 / 2.5 = 4;
    // w = [6, 8] - 0.05 * 4 * [2, 1.5] = [5.6, 7.7].
    QTest::newRow("no bias correction") << QList<double>{6, 8} << QList<double>{1, -2} << 0.05 << 0.96 << 0.0 << 0.25
                                        << false << QList<double>{5.6, 7.7};
    // eps outside the square root: w = [3, 4], g = [1, 3], eps = 1, no decay.
    // u = g / (|g| + 1) = [1/2, 3/4]; r u has the norm of w: 5 * [2, 3] / sqrt(13) = [2.773501, 4.160251];
    // w = [3, 4] - 0.1 * r u = [2.7226499, 3.5839749].  (Inside the root it would be [1/sqrt(2), 3/sqrt(10)].)
    QTest::newRow("eps outside the root")
        << QList<double>{3, 4} << QList<double>{1, 3} << 0.1 << 0.999 << 1.0 << 0.0 << true
        << QList<double>{3 - 0.1 * 10 / std::sqrt(13.0), 4 - 0.1 * 15 / std::sqrt(13.0)};
    // Zero weights: ||w|| = 0, so r = 1; u = [1, -1] + 0.5 * 0; w = -0.1 * [1, -1] = [-0.1, 0.1].
    QTest::newRow("zero weights: trust ratio 1") << QList<double>{0, 0} << QList<double>{1, -2} << 0.1 << 0.999 << 0.0
                                                 << 0.5 << true << QList<double>{-0.1, 0.1};
    // Zero gradient, no decay: u = 0 / (0 + 1e-6) = 0, ||u|| = 0, so r = 1 (not 5 / 0) and w stays [3, 4].
    QTest::newRow("zero update: trust ratio 1") << QList<double>{3, 4} << QList<double>{0, 0} << 0.1 << 0.999 << 1e-6
                                                << 0.0 << true << QList<double>{3, 4};
}

void TestOptim::lambHandStep()
{
    QFETCH(QList<double>, weights);
    QFETCH(QList<double>, grad);
    QFETCH(double, lr);
    QFETCH(double, beta2);
    QFETCH(double, eps);
    QFETCH(double, weightDecay);
    QFETCH(bool, biasCorrection);
    QFETCH(QList<double>, expected);

    torch::Tensor w = fromList(weights).requires_grad_(true);
    Lamb lamb({w}, LambOptions(lr)
                       .betas(std::make_tuple(0.9, beta2))
                       .eps(eps)
                       .weight_decay(weightDecay)
                       .bias_correction(biasCorrection));
    w.mutable_grad() = fromList(grad);
    lamb.step();
    const double error = test::relativeError(w, fromList(expected));
    QVERIFY2(error < 1e-12, qPrintable(QString("relative error %1").arg(error)));
    QVERIFY(torch::isfinite(w).all().item<bool>());
    const LambParamState& state = lambState(lamb, w);
    QCOMPARE(state.step(), std::int64_t(1));
    QVERIFY(test::relativeError(state.exp_avg(), 0.1 * fromList(grad)) < 1e-12);
    QVERIFY(test::relativeError(state.exp_avg_sq(), (1 - beta2) * fromList(grad).square()) < 1e-12);
}

void TestOptim::lambMatchesReference_data()
{
    QTest::addColumn<int>("dtype");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("float32") << static_cast<int>(torch::kFloat32) << 1e-6;
    QTest::newRow("float64") << static_cast<int>(torch::kFloat64) << 1e-12;
}

void TestOptim::lambMatchesReference()
{
    QFETCH(int, dtype);
    QFETCH(double, tolerance);
    const auto type = static_cast<torch::ScalarType>(dtype);
    constexpr std::int64_t kSteps = 6;

    torch::manual_seed(11);
    const torch::Tensor matrix = torch::randn({3, 4}, torch::kFloat64).to(type).requires_grad_(true);
    const torch::Tensor vector = torch::zeros({5}, type).requires_grad_(true);
    const std::vector<torch::Tensor> params{matrix, vector};
    const auto grads = randomGradients(kSteps, type);

    std::map<std::string, torch::Tensor> inputs{{"param.0", matrix.detach().clone()},
                                                {"param.1", vector.detach().clone()}};
    for (std::int64_t t = 0; t < kSteps; ++t)
        for (std::size_t i = 0; i < params.size(); ++i)
            inputs["grad." + std::to_string(t) + "." + std::to_string(i)] = grads[static_cast<std::size_t>(t)][i];
    const nlohmann::json spec{{"steps", kSteps},
                              {"params", {toJson(firstGroupOptions()), toJson(secondGroupOptions())}}};
    std::map<std::string, torch::Tensor> reference;
    try {
        reference = runOptimReference(spec, inputs, std::string("lamb-") + QTest::currentDataTag());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }

    Lamb lamb(twoGroups(matrix, vector));
    for (std::int64_t t = 0; t < kSteps; ++t) {
        lamb.zero_grad();
        setGradients(params, grads[static_cast<std::size_t>(t)]);
        lamb.step();
        for (std::size_t i = 0; i < params.size(); ++i) {
            const std::string key = "param." + std::to_string(t) + "." + std::to_string(i);
            const double error = test::relativeError(params[i], reference.at(key));
            QVERIFY2(error < tolerance, qPrintable(QString("%1: relative error %2").arg(key.c_str()).arg(error)));
        }
    }
    // The zero vector moved on its first step (trust ratio 1) and is non-zero from then on.
    QVERIFY(reference.at("param.0.1").abs().min().item<double>() > 0.0);
    for (std::size_t i = 0; i < params.size(); ++i) {
        const LambParamState& state = lambState(lamb, params[i]);
        QCOMPARE(state.step(), kSteps);
        QVERIFY(test::relativeError(state.exp_avg(), reference.at("exp_avg." + std::to_string(i))) < tolerance);
        QVERIFY(test::relativeError(state.exp_avg_sq(), reference.at("exp_avg_sq." + std::to_string(i))) < tolerance);
    }
}

void TestOptim::lambStateSurvivesSaveAndLoad()
{
    torch::manual_seed(5);
    const torch::Tensor matrix = torch::randn({3, 4}).requires_grad_(true);
    const torch::Tensor vector = torch::zeros({5}).requires_grad_(true);
    const std::vector<torch::Tensor> params{matrix, vector};
    const auto grads = randomGradients(6, torch::kFloat32);

    Lamb original(twoGroups(matrix, vector));
    for (std::size_t t = 0; t < 3; ++t) {
        setGradients(params, grads[t]);
        original.step();
    }
    std::stringstream stream;
    {
        torch::serialize::OutputArchive archive;
        original.save(archive);
        archive.save_to(stream);
    }

    // A restored optimizer on copies of the weights, and a fresh one that has lost the moments.
    const std::vector<torch::Tensor> restoredParams{matrix.detach().clone().requires_grad_(true),
                                                    vector.detach().clone().requires_grad_(true)};
    const std::vector<torch::Tensor> freshParams{matrix.detach().clone().requires_grad_(true),
                                                 vector.detach().clone().requires_grad_(true)};
    Lamb restored(twoGroups(restoredParams[0], restoredParams[1]));
    Lamb fresh(twoGroups(freshParams[0], freshParams[1]));
    {
        torch::serialize::InputArchive archive;
        archive.load_from(stream);
        restored.load(archive);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        const LambParamState& saved = lambState(original, params[i]);
        const LambParamState& loaded = lambState(restored, restoredParams[i]);
        QCOMPARE(loaded.step(), std::int64_t(3));
        QVERIFY(loaded == saved);
        // The loaded moments are copies, not the original's tensors.
        QVERIFY(loaded.exp_avg().data_ptr() != saved.exp_avg().data_ptr());
    }

    for (std::size_t t = 3; t < 6; ++t) {
        setGradients(params, grads[t]);
        setGradients(restoredParams, grads[t]);
        setGradients(freshParams, grads[t]);
        original.step();
        restored.step();
        fresh.step();
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        QVERIFY(torch::equal(restoredParams[i], params[i]));
        QVERIFY(lambState(restored, restoredParams[i]) == lambState(original, params[i]));
        // Without the state the same gradients give other weights: the comparison above can fail.
        QVERIFY(!torch::allclose(freshParams[i], params[i], 1e-6, 0.0));
    }
}

void TestOptim::lambOptionsRoundTrip()
{
    const LambOptions options = LambOptions(0.25).betas(std::make_tuple(0.5, 0.75)).eps(1e-3).weight_decay(0.3)
                                    .bias_correction(false);
    std::stringstream stream;
    {
        torch::serialize::OutputArchive archive;
        options.serialize(archive);
        archive.save_to(stream);
    }
    LambOptions loaded(0);
    QVERIFY(!(loaded == options));
    {
        torch::serialize::InputArchive archive;
        archive.load_from(stream);
        loaded.serialize(archive);
    }
    QVERIFY(loaded == options);
    QCOMPARE(loaded.get_lr(), 0.25);
    QCOMPARE(std::get<1>(loaded.betas()), 0.75);
    QCOMPARE(loaded.bias_correction(), false);

    // The defaults the header promises.
    const LambOptions defaults;
    QCOMPARE(defaults.lr(), 1e-3);
    QCOMPARE(defaults.eps(), 1e-6);
    QCOMPARE(defaults.weight_decay(), 0.01);
    QVERIFY(defaults.betas() == std::make_tuple(0.9, 0.999));
    QVERIFY(defaults.bias_correction());
}

void TestOptim::lambClosureAndMissingGradients()
{
    // loss = sum(w^2) at w = [6, 8] is 100; g = 2w = [12, 16], sign(g) = [1, 1], no decay;
    // r u = 10 * [1, 1] / sqrt(2), w = [6, 8] - 0.1 * 7.0710678 = [5.2928932, 7.2928932].
    const torch::Tensor w = doubles({6, 8}).requires_grad_(true);
    const torch::Tensor untouched = doubles({1, 2}).requires_grad_(true);
    Lamb lamb({w, untouched}, LambOptions(0.1).eps(0).weight_decay(0));
    const torch::Tensor loss = lamb.step([&] {
        lamb.zero_grad();
        torch::Tensor value = (w * w).sum();
        value.backward();
        return value;
    });
    QCOMPARE(loss.item<double>(), 100.0);
    const double shift = 0.1 * 10 / std::sqrt(2.0);
    QVERIFY(test::relativeError(w, doubles({6 - shift, 8 - shift})) < 1e-12);
    QVERIFY(torch::equal(untouched, doubles({1, 2})));
    QCOMPARE(lamb.state().size(), std::size_t(1));
}

void TestOptim::lambRejectsInvalidOptions()
{
    const torch::Tensor w = torch::zeros({2}, torch::requires_grad());
    QVERIFY_THROWS_EXCEPTION(c10::Error, Lamb({w}, LambOptions(-1.0)));
    QVERIFY_THROWS_EXCEPTION(c10::Error, Lamb({w}, LambOptions().betas(std::make_tuple(1.0, 0.999))));
    QVERIFY_THROWS_EXCEPTION(c10::Error, Lamb({w}, LambOptions().eps(-1e-8)));
    QVERIFY_THROWS_EXCEPTION(c10::Error, Lamb({w}, LambOptions().weight_decay(-0.1)));
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{w}, std::make_unique<LambOptions>(LambOptions().betas(
                                                           std::make_tuple(0.9, -0.5))));
    QVERIFY_THROWS_EXCEPTION(c10::Error, Lamb(std::move(groups)));
}

// ---------------------------------------------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------------------------------------------

// One step by hand: w = 1, g = 0.5, lr 0.1, weight decay 0.01, betas (0.9, 0.999).
// m = 0.05, v = 0.00025; bias-corrected 0.5 and 0.25, so the Adam step is
// lr * 0.5 / sqrt(0.25) = 0.1, and the decoupled decay takes w to 0.999 first.
void TestOptim::fusedAdamWHandStep()
{
    const torch::Tensor w = torch::ones({1}).requires_grad_(true);
    w.mutable_grad() = torch::full({1}, 0.5);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{w});
    const auto options = torch::optim::AdamWOptions(0.1).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.01);
    FusedAdamW optimizer(groups, options);
    optimizer.step();
    QVERIFY2(std::abs(w.item<double>() - 0.899) < 1e-6, std::to_string(w.item<double>()).c_str());
}

void TestOptim::fusedAdamWMatchesAdamW_data()
{
    QTest::addColumn<bool>("amsgrad");
    QTest::newRow("adamw") << false;
    QTest::newRow("amsgrad") << true;
}

// Two groups with their own rates and decay, ten steps of random gradients, one
// parameter without a gradient for the first steps: LibTorch's AdamW and the
// fused kernel (LibTorch 2.x; with 1.x FusedAdamW is AdamW) agree to rounding.
void TestOptim::fusedAdamWMatchesAdamW()
{
    QFETCH(bool, amsgrad);
    torch::manual_seed(7);
    const torch::Tensor matrix = torch::randn({3, 4}), vector = torch::randn({5});
    auto makeGroups = [&](const std::vector<torch::Tensor>& params) {
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(std::vector<torch::Tensor>{params[0]},
                            std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(0.01).weight_decay(0.1).amsgrad(amsgrad)));
        groups.emplace_back(std::vector<torch::Tensor>{params[1]},
                            std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(0.03).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.0)
                                    .amsgrad(amsgrad)));
        return groups;
    };
    const std::vector<torch::Tensor> plainParams{matrix.clone().requires_grad_(true), vector.clone().requires_grad_(true)};
    const std::vector<torch::Tensor> fusedParams{matrix.clone().requires_grad_(true), vector.clone().requires_grad_(true)};
    torch::optim::AdamW plain(makeGroups(plainParams), torch::optim::AdamWOptions(0.01).amsgrad(amsgrad));
    FusedAdamW fused(makeGroups(fusedParams), torch::optim::AdamWOptions(0.01).amsgrad(amsgrad));
    const auto grads = randomGradients(10, torch::kFloat32);
    for (std::size_t t = 0; t < grads.size(); ++t) {
        const std::size_t count = t < 3 ? 1 : 2;  // the vector has no gradient in the first three steps
        for (std::size_t i = 0; i < count; ++i) {
            plainParams[i].mutable_grad() = grads[t][i].clone();
            fusedParams[i].mutable_grad() = grads[t][i].clone();
        }
        plain.step();
        fused.step();
    }
    for (std::size_t i = 0; i < plainParams.size(); ++i) {
        QVERIFY(!torch::equal(fusedParams[i], i == 0 ? matrix : vector));  // it moved
        const double error = test::relativeError(fusedParams[i].detach(), plainParams[i].detach());
        QVERIFY2(error < 1e-6, ("parameter " + std::to_string(i) + ": " + std::to_string(error)).c_str());
    }
}

// The state is AdamW's: a checkpoint of FusedAdamW continues in AdamW.
void TestOptim::fusedAdamWCheckpointsLoadInAdamW()
{
    torch::manual_seed(8);
    const torch::Tensor w = torch::randn({4, 4}).requires_grad_(true);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{w});
    FusedAdamW fused(groups, torch::optim::AdamWOptions(0.05));
    for (int t = 0; t < 4; ++t) {
        w.mutable_grad() = torch::randn({4, 4});
        fused.step();
    }
    std::stringstream stream;
    {
        torch::serialize::OutputArchive archive;
        fused.save(archive);
        archive.save_to(stream);
    }
    const torch::Tensor copy = w.detach().clone().requires_grad_(true);
    std::vector<torch::optim::OptimizerParamGroup> copyGroups;
    copyGroups.emplace_back(std::vector<torch::Tensor>{copy});
    torch::optim::AdamW plain(copyGroups, torch::optim::AdamWOptions(0.05));
    {
        torch::serialize::InputArchive archive;
        archive.load_from(stream);
        plain.load(archive);
    }
    const auto& state = static_cast<const torch::optim::AdamWParamState&>(
        *plain.state().at(optimizerStateKey(plain.state(), copy)));
    QCOMPARE(state.step(), std::int64_t(4));
    const torch::Tensor grad = torch::randn({4, 4});
    w.mutable_grad() = grad.clone();
    copy.mutable_grad() = grad.clone();
    fused.step();
    plain.step();
    QVERIFY(test::relativeError(copy.detach(), w.detach()) < 1e-6);
}

void TestOptim::schedule_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<double>("peak");
    QTest::addColumn<qint64>("warmup");
    QTest::addColumn<qint64>("total");
    QTest::addColumn<double>("minRatio");
    QTest::addColumn<qint64>("step");
    QTest::addColumn<double>("expected");

    using K = ScheduleKind;
    // Constant ignores warmup.
    QTest::newRow("constant, step 0") << K::Constant << 0.5 << 10LL << 100LL << 0.0 << 0LL << 0.5;
    QTest::newRow("constant, step 500") << K::Constant << 0.5 << 10LL << 100LL << 0.0 << 500LL << 0.5;

    // Cosine, peak 2, w = 4, T = 12: warmup 2 * (s + 1) / 4; then p = (s - 4) / 8.
    QTest::newRow("cosine warmup s0: 2*1/4") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 0LL << 0.5;
    QTest::newRow("cosine warmup s1: 2*2/4") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 1LL << 1.0;
    QTest::newRow("cosine warmup s3: 2*4/4") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 3LL << 2.0;
    QTest::newRow("cosine s4: p 0") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 4LL << 2.0;
    QTest::newRow("cosine s8: p 1/2, cos 0 -> 2*0.5") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 8LL << 1.0;
    // p = 6/8 = 3/4: 2 * 0.5 * (1 + cos(3pi/4)) = 1 - sqrt(2)/2
    QTest::newRow("cosine s10: p 3/4") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 10LL
                                       << 1.0 - std::sqrt(2.0) / 2.0;
    QTest::newRow("cosine s12: p 1 -> 0") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 12LL << 0.0;
    QTest::newRow("cosine s20: clamped -> 0") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.0 << 20LL << 0.0;
    // minRatio 0.1: s8: 2 * (0.1 + 0.9 * 0.5) = 1.1; from T on 2 * 0.1 = 0.2.
    QTest::newRow("cosine min 0.1, s8") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.1 << 8LL << 1.1;
    QTest::newRow("cosine min 0.1, s12") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.1 << 12LL << 0.2;
    QTest::newRow("cosine min 0.1, s50") << K::WarmupCosine << 2.0 << 4LL << 12LL << 0.1 << 50LL << 0.2;
    // No warmup, T = 4: p = s / 4; s0 -> 1, s2 -> 0.5 (cos pi/2 = 0), s1 -> 0.5 (1 + sqrt(2)/2).
    QTest::newRow("cosine w0 s0") << K::WarmupCosine << 1.0 << 0LL << 4LL << 0.0 << 0LL << 1.0;
    QTest::newRow("cosine w0 s1") << K::WarmupCosine << 1.0 << 0LL << 4LL << 0.0 << 1LL << 0.5 + std::sqrt(2.0) / 4.0;
    QTest::newRow("cosine w0 s2") << K::WarmupCosine << 1.0 << 0LL << 4LL << 0.0 << 2LL << 0.5;

    // Linear (BERT, ALBERT), peak 2, w = 4, T = 12: the same warmup, then 2 * (1 - p), p = (s - 4) / 8.
    QTest::newRow("linear warmup s1: 2*2/4") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 1LL << 1.0;
    QTest::newRow("linear s4: p 0") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 4LL << 2.0;
    QTest::newRow("linear s6: p 1/4 -> 1.5") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 6LL << 1.5;
    QTest::newRow("linear s10: p 3/4 -> 0.5") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 10LL << 0.5;
    QTest::newRow("linear s12: p 1 -> 0") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 12LL << 0.0;
    QTest::newRow("linear s20: clamped -> 0") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.0 << 20LL << 0.0;
    // minRatio 0.1: s8: 2 * (0.1 + 0.9 * 0.5) = 1.1 (as the cosine at its midpoint); from T on 0.2.
    QTest::newRow("linear min 0.1, s8") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.1 << 8LL << 1.1;
    QTest::newRow("linear min 0.1, s10") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.1 << 10LL << 0.65;
    QTest::newRow("linear min 0.1, s50") << K::WarmupLinear << 2.0 << 4LL << 12LL << 0.1 << 50LL << 0.2;

    // Inverse square root, peak 1, w = 4: warmup (s + 1) / 4, then sqrt(4 / (s + 1)).
    for (const auto& [name, kind] : {std::pair{"inverse sqrt", K::InverseSqrt}, std::pair{"rsqrt", K::WarmupRsqrt}}) {
        const auto row = [name = QByteArray(name)](const char* what) -> QTestData& {
            return QTest::newRow((name + what).constData());
        };
        row(" s0: 1/4") << kind << 1.0 << 4LL << 0LL << 0.0 << 0LL << 0.25;
        row(" s3: 4/4") << kind << 1.0 << 4LL << 0LL << 0.0 << 3LL << 1.0;
        row(" s4: sqrt(4/5)") << kind << 1.0 << 4LL << 0LL << 0.0 << 4LL << std::sqrt(0.8);
        row(" s15: sqrt(4/16)") << kind << 1.0 << 4LL << 0LL << 0.0 << 15LL << 0.5;
        row(" s99, peak 3: 3*sqrt(4/100)") << kind << 3.0 << 4LL << 0LL << 0.0 << 99LL << 0.6;
        // No warmup: peak / sqrt(s + 1).
        row(" w0 s0: 1") << kind << 1.0 << 0LL << 0LL << 0.0 << 0LL << 1.0;
        row(" w0 s3: 1/2") << kind << 1.0 << 0LL << 0LL << 0.0 << 3LL << 0.5;
        row(" w0 s8: 1/3") << kind << 1.0 << 0LL << 0LL << 0.0 << 8LL << 1.0 / 3.0;
    }
}

void TestOptim::schedule()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(double, peak);
    QFETCH(qint64, warmup);
    QFETCH(qint64, total);
    QFETCH(double, minRatio);
    QFETCH(qint64, step);
    QFETCH(double, expected);
    ScheduleOptions options;
    options.kind = kind;
    options.peak = peak;
    options.warmupSteps = warmup;
    options.totalSteps = total;
    options.minRatio = minRatio;
    const double lr = learningRate(options, step);
    QVERIFY2(approxEqual(lr, expected),
             qPrintable(QString("lr %1, expected %2").arg(lr, 0, 'g', 17).arg(expected, 0, 'g', 17)));
}

void TestOptim::warmupRsqrtEqualsInverseSqrt()
{
    // The header's claim: LRA's min(1, s/w) * rsqrt(max(s, w)) * sqrt(w) form is the inverse square root.
    for (const std::int64_t warmup : {0, 1, 2, 7, 100}) {
        ScheduleOptions rsqrt{ScheduleKind::WarmupRsqrt, 3e-4, warmup, 1000, 0.0};
        ScheduleOptions inverse{ScheduleKind::InverseSqrt, 3e-4, warmup, 1000, 0.0};
        for (std::int64_t step = 0; step < 2000; ++step)
            QVERIFY2(approxEqual(learningRate(rsqrt, step), learningRate(inverse, step), 1e-14),
                     qPrintable(QString("warmup %1, step %2").arg(warmup).arg(step)));
    }
}

void TestOptim::warmupReachesPeakContinuously_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::newRow("cosine") << ScheduleKind::WarmupCosine;
    QTest::newRow("linear") << ScheduleKind::WarmupLinear;
    QTest::newRow("inverse sqrt") << ScheduleKind::InverseSqrt;
    QTest::newRow("rsqrt") << ScheduleKind::WarmupRsqrt;
}

void TestOptim::warmupReachesPeakContinuously()
{
    QFETCH(ScheduleKind, kind);
    const ScheduleOptions options{kind, 5e-4, 50, 500, 0.1};
    const double increment = options.peak / 50;
    QVERIFY(approxEqual(learningRate(options, 0), increment));
    for (std::int64_t step = 1; step < 50; ++step)
        QVERIFY(approxEqual(learningRate(options, step) - learningRate(options, step - 1), increment, 1e-9));
    // The last warmup step runs at the peak; the first step after it is no further away than a warmup step.
    QVERIFY(approxEqual(learningRate(options, 49), options.peak));
    const double jump = std::abs(learningRate(options, 50) - learningRate(options, 49));
    QVERIFY2(jump <= increment, qPrintable(QString("jump %1 > %2").arg(jump).arg(increment)));
    QVERIFY(learningRate(options, 50) <= options.peak);
}

void TestOptim::decaysMonotonicallyAfterWarmup_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<double>("minRatio");
    QTest::newRow("cosine to 0") << ScheduleKind::WarmupCosine << 0.0;
    QTest::newRow("cosine to 0.1") << ScheduleKind::WarmupCosine << 0.1;
    QTest::newRow("inverse sqrt") << ScheduleKind::InverseSqrt << 0.0;
    QTest::newRow("rsqrt") << ScheduleKind::WarmupRsqrt << 0.0;
}

void TestOptim::decaysMonotonicallyAfterWarmup()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(double, minRatio);
    const ScheduleOptions options{kind, 1e-3, 20, 300, minRatio};
    // Strictly decreasing from the end of warmup to totalSteps.
    for (std::int64_t step = 20; step < 300; ++step)
        QVERIFY2(learningRate(options, step + 1) < learningRate(options, step),
                 qPrintable(QString("step %1").arg(step)));
    // Never increasing after it; the cosine holds minRatio * peak.
    for (std::int64_t step = 300; step < 600; ++step)
        QVERIFY(learningRate(options, step + 1) <= learningRate(options, step));
    if (kind == ScheduleKind::WarmupCosine)
        QVERIFY(approxEqual(learningRate(options, 600), minRatio * options.peak));
    QVERIFY(learningRate(options, 600) >= 0.0);
}

void TestOptim::scheduleRejectsNegativeSteps()
{
    ScheduleOptions options;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, learningRate(options, -1));
    options.warmupSteps = -5;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, learningRate(options, 0));
}

void TestOptim::applyLearningRateSetsEveryGroup()
{
    const torch::Tensor a = doubles({1, 1}).requires_grad_(true);
    const torch::Tensor b = doubles({2, 2}).requires_grad_(true);
    const auto twoAdamWGroups = [&] {
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(std::vector<torch::Tensor>{a}, std::make_unique<torch::optim::AdamWOptions>(0.1));
        groups.emplace_back(std::vector<torch::Tensor>{b}, std::make_unique<torch::optim::AdamWOptions>(0.2));
        return groups;
    };
    torch::optim::AdamW adamw(twoAdamWGroups());
    applyLearningRate(adamw, 0.0125);
    for (const auto& group : adamw.param_groups())
        QCOMPARE(static_cast<const torch::optim::AdamWOptions&>(group.options()).lr(), 0.0125);

    std::vector<torch::optim::OptimizerParamGroup> lambGroups;
    lambGroups.emplace_back(std::vector<torch::Tensor>{a}, std::make_unique<LambOptions>(0.1));
    lambGroups.emplace_back(std::vector<torch::Tensor>{b}, std::make_unique<LambOptions>(0.2));
    Lamb lamb(std::move(lambGroups));
    applyLearningRate(lamb, 0.0375);
    for (const auto& group : lamb.param_groups())
        QCOMPARE(static_cast<const LambOptions&>(group.options()).lr(), 0.0375);

    // SGD, and the step uses the new rate: w = [1, 1] - 0.5 * [1, 1] = [0.5, 0.5].
    torch::optim::SGD sgd({a}, torch::optim::SGDOptions(0.01));
    applyLearningRate(sgd, 0.5);
    QCOMPARE(static_cast<const torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).lr(), 0.5);
    a.mutable_grad() = doubles({1, 1});
    sgd.step();
    QVERIFY(torch::equal(a, doubles({0.5, 0.5})));

    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, applyLearningRate(sgd, -0.1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, applyLearningRate(sgd, std::nan("")));
    QCOMPARE(static_cast<const torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).lr(), 0.5);
}

void TestOptim::applyLearningRateRejectsOtherOptimizers()
{
    const torch::Tensor w = doubles({1, 2}).requires_grad_(true);
    torch::optim::RMSprop rmsprop({w}, torch::optim::RMSpropOptions(0.01));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, applyLearningRate(rmsprop, 0.1));
    QCOMPARE(static_cast<const torch::optim::RMSpropOptions&>(rmsprop.param_groups()[0].options()).lr(), 0.01);
}

// ---------------------------------------------------------------------------------------------------------------
// Gradient clipping (train/GradientHealth), by hand: gradients (3, 4) and (12)
// have norms 5 and 12 and a total norm of 13. A parameter without a gradient
// counts 0 and is left without one.

void TestOptim::clippingScalesEveryGradientByOneFactor()
{
    const auto parameters = [] {
        std::vector<torch::Tensor> p = {torch::zeros({2}).requires_grad_(true), torch::zeros({1}).requires_grad_(true),
                                        torch::zeros({3}).requires_grad_(true)};
        p[0].mutable_grad() = torch::tensor({3.0f, 4.0f});
        p[1].mutable_grad() = torch::tensor({12.0f});
        return p;
    };

    std::vector<torch::Tensor> clipped = parameters();
    const GradientNorms norms = clipGradients(clipped, 2.6);
    QVERIFY(torch::allclose(norms.each, torch::tensor({5.0f, 12.0f, 0.0f})));
    QVERIFY(std::abs(norms.total.item<double>() - 13.0) < 1e-9);
    // Scaled by 2.6 / 13 = 0.2 (the 1e-6 guard moves it by 1.5e-8).
    QVERIFY(torch::allclose(clipped[0].grad(), torch::tensor({0.6f, 0.8f}), 1e-6, 1e-6));
    QVERIFY(torch::allclose(clipped[1].grad(), torch::tensor({2.4f}), 1e-6, 1e-6));
    QVERIFY(!clipped[2].grad().defined());

    // Under the bound, and with no bound (0), the gradients stay as they were.
    for (const double bound : {13.5, 0.0}) {
        std::vector<torch::Tensor> kept = parameters();
        clipGradients(kept, bound);
        QVERIFY(torch::equal(kept[0].grad(), torch::tensor({3.0f, 4.0f})));
        QVERIFY(torch::equal(kept[1].grad(), torch::tensor({12.0f})));
    }
}

// Before a step every gradient is dropped (none, not zeros), without an
// operator: a module's zero_grad(true) would detach each one first.
void TestOptim::clearingGradientsDispatchesNothing()
{
    std::vector<torch::Tensor> p = {torch::zeros({2}).requires_grad_(true), torch::zeros({3}).requires_grad_(true)};
    p[0].mutable_grad() = torch::ones({2});
    {
        const OperatorCounter counter;
        clearGradients(p);
        QCOMPARE(counter.tally().operators, std::int64_t{0});
    }
    QVERIFY(!p[0].grad().defined());
    QVERIFY(!p[1].grad().defined());
    // The next backward writes the gradient afresh.
    (p[0] * 3.0).sum().backward();
    QVERIFY(torch::equal(p[0].grad(), torch::full({2}, 3.0)));
}

// ---------------------------------------------------------------------------------------------------------------
// makeOptimizer: two groups, weight decay on matrices only
// ---------------------------------------------------------------------------------------------------------------

namespace {

// Parameters named as WideLab's modules name them, each shape chosen so that the
// name alone (a matrix called "norm") or the shape alone (a vector) decides.
struct NamedParameters : torch::nn::Module {
    NamedParameters()
    {
        register_parameter("q_proj", torch::zeros({4, 4}));          // decays
        register_parameter("ffn_w_in", torch::zeros({4, 8}));        // decays
        register_parameter("q_bias", torch::zeros({4}));             // a vector
        register_parameter("path_weights", torch::zeros({3}));       // a vector
        register_parameter("norm_matrix", torch::zeros({2, 2}));     // named norm
        register_parameter("ln1_table", torch::zeros({2, 2}));       // named ln
        register_parameter("expert_b_in", torch::zeros({2, 8}));     // an expert's biases, stacked
        register_parameter("expert_b_out", torch::zeros({2, 4}));
    }
};

std::vector<std::string> groupNames(const torch::optim::OptimizerParamGroup& group, const torch::nn::Module& module)
{
    std::vector<std::string> names;
    for (const torch::Tensor& parameter : group.params())
        for (const auto& item : module.named_parameters())
            if (item.value().is_same(parameter))
                names.push_back(item.key());
    return names;
}

}  // namespace

void TestOptim::optimizerDecaysMatricesOnly_data()
{
    QTest::addColumn<int>("kind");
    QTest::newRow("adamw") << static_cast<int>(OptimizerKind::AdamW);
    QTest::newRow("lamb") << static_cast<int>(OptimizerKind::Lamb);
    QTest::newRow("sgd") << static_cast<int>(OptimizerKind::Sgd);
}

void TestOptim::optimizerDecaysMatricesOnly()
{
    QFETCH(int, kind);
    TrainConfig train;
    train.optimizer = static_cast<OptimizerKind>(kind);
    train.learningRate = 0.25;
    train.weightDecay = 0.125;
    NamedParameters module;
    const auto optimizer = makeOptimizer(train, module);
    QCOMPARE(optimizer->param_groups().size(), std::size_t(2));
    QCOMPARE(groupNames(optimizer->param_groups()[0], module), (std::vector<std::string>{"q_proj", "ffn_w_in"}));
    QCOMPARE(groupNames(optimizer->param_groups()[1], module),
             (std::vector<std::string>{"q_bias", "path_weights", "norm_matrix", "ln1_table", "expert_b_in",
                                       "expert_b_out"}));
    auto decay = [&](std::size_t group) {
        const torch::optim::OptimizerOptions& options = optimizer->param_groups()[group].options();
        if (auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&options))
            return adamw->weight_decay();
        if (auto* lamb = dynamic_cast<const LambOptions*>(&options))
            return lamb->weight_decay();
        return dynamic_cast<const torch::optim::SGDOptions&>(options).weight_decay();
    };
    QCOMPARE(decay(0), 0.125);
    QCOMPARE(decay(1), 0.0);
    QCOMPARE(optimizer->param_groups()[0].options().get_lr(), 0.25);
    QCOMPARE(optimizer->param_groups()[1].options().get_lr(), 0.25);
    const bool fused = dynamic_cast<const FusedAdamW*>(optimizer.get()) != nullptr;
    QCOMPARE(fused, train.optimizer == OptimizerKind::AdamW);
}

QTEST_GUILESS_MAIN(TestOptim)
#include "tst_optim.moc"
