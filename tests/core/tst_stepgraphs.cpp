// Tests of train.cuda_graph's CPU-testable parts (train/StepGraphs,
// FusedAdamW's capturable mode, padBatch): the lengths batches are padded to,
// padding that changes no loss, a capturable optimiser that updates as the
// ordinary one, and a trainer whose recorded steps (replayed here by running
// the recorded step again on its static batch) train as its ordinary steps do,
// resume exactly and fall back, saying why, where they cannot. tst_cuda
// replays real CUDA graphs on a GPU.
#include "TestSupport.h"
#include "data/Batch.h"
#include "model/WideTransformer.h"
#include "run/RunDirectory.h"
#include "train/FusedAdamW.h"
#include "train/Lamb.h"  // optimizerStateKey
#include "train/Schedule.h"
#include "train/StepGraphs.h"
#include "train/Trainer.h"

#include <QtTest>

#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace widelab;

namespace {

std::filesystem::path fresh(const QTemporaryDir& dir, const char* name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

std::string readText(const std::filesystem::path& file)
{
    std::ostringstream text;
    text << std::ifstream(file).rdbuf();
    return text.str();
}

// A recorder for the CPU: recording runs nothing, a replay runs the recorded
// work again (on the static batch it was recorded on), as a graph's does.
struct CountingRecorder {
    int recorded = 0, replayed = 0;
    Recorder recorder()
    {
        return [this](const std::function<void()>& work) -> Replay {
            ++recorded;
            return [this, work] {
                ++replayed;
                work();
            };
        };
    }
};

// The graph path needs the fused AdamW's capturable step (LibTorch 2.x).
#define REQUIRE_CAPTURABLE_ADAMW()                                                                                \
    if (!FusedAdamW::available())                                                                                 \
    QSKIP("this LibTorch (" TORCH_VERSION ") has no fused AdamW, whose capturable step the recorded path needs; " \
          "the PyPI 2.x build runs this test")

// A ListOps run of a small dense model without dropout (padding a batch
// further would draw other dropout masks), logged every 5 steps.
RunDocument listOpsRun(const std::string& overrides = "{}")
{
    nlohmann::json patch = nlohmann::json::parse(R"({
        "model": {"dropout": 0.0},
        "train": {"log_every": 5, "device": "cpu"}})");
    patch.merge_patch(nlohmann::json::parse(overrides));
    return test::tinyRun(patch.dump());
}

// Trains `run` in DIR/name and returns its train lines' losses.
std::vector<double> trainedLosses(const RunDocument& run, const std::filesystem::path& directory,
                                  TrainerOptions options = {})
{
    Trainer trainer(run, directory, options);
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    if (summary.outcome != TrainOutcome::Completed)
        throw std::runtime_error("the run did not complete: " + summary.message);
    std::vector<double> losses;
    for (const nlohmann::json& line : test::metricLines(directory, "train"))
        losses.push_back(line["loss"].get<double>());
    return losses;
}

}  // namespace

class TestStepGraphs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void paddedLengthsAreFewAndCoverTheBatch();
    void paddingChangesNoLoss_data();
    void paddingChangesNoLoss();
    void capturableAdamWUpdatesAsAdamW();
    void recordedStepsTrainAsOrdinaryOnes_data();
    void recordedStepsTrainAsOrdinaryOnes();
    void translationPaddedOnBothSides();
    void resumeAcrossRecordedStepsIsExact();
    void theCpuFallsBackSayingWhy();
    void otherOptimisersFallBackSayingWhy();
};

// max_len 40: a unit of 8 (40 / 8 is less); max_len 512: 64.
void TestStepGraphs::paddedLengthsAreFewAndCoverTheBatch()
{
    const StepGraphs short_({}, 40, true), long_({}, 512, true), unpadded({}, 512, false);
    QCOMPARE(short_.paddedLength(1), std::int64_t{8});
    QCOMPARE(short_.paddedLength(8), std::int64_t{8});
    QCOMPARE(short_.paddedLength(9), std::int64_t{16});
    QCOMPARE(short_.paddedLength(33), std::int64_t{40});
    QCOMPARE(short_.paddedLength(40), std::int64_t{40});
    QCOMPARE(long_.paddedLength(1), std::int64_t{64});
    QCOMPARE(long_.paddedLength(65), std::int64_t{128});
    QCOMPARE(long_.paddedLength(500), std::int64_t{512});
    QCOMPARE(unpadded.paddedLength(65), std::int64_t{65});
    // Every length 1..512 lands on one of eight.
    std::set<std::int64_t> lengths;
    for (std::int64_t n = 1; n <= 512; ++n)
        lengths.insert(long_.paddedLength(n));
    QCOMPARE(lengths.size(), std::size_t{8});
}

void TestStepGraphs::paddingChangesNoLoss_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("classifier, mean pooling") << R"({"head": "classification", "num_classes": 3})";
    QTest::newRow("classifier, CLS token") << R"({"head": "classification", "num_classes": 3, "pooling": "cls"})";
    QTest::newRow("language model") << R"({"head": "language_model"})";
}

// A batch of two examples (3 and 5 tokens) padded to 8 and to 16 gives the
// same loss and the same gradients: the padding keys are masked out.
void TestStepGraphs::paddingChangesNoLoss()
{
    QFETCH(QString, model);
    const ModelConfig config = test::modelConfig(
        R"({"vocab_size": 20, "max_len": 16, "d_model": 16, "layers": 2, "heads": 2, "ffn_dim": 32, "dropout": 0.0})",
        model.toStdString());
    const bool lm = config.head == HeadKind::LanguageModel;
    std::vector<Example> examples(2);
    examples[0].ids = {3, 4, 5};
    examples[1].ids = {6, 7, 8, 9, 10};
    examples[0].label = 1;
    examples[1].label = 2;
    if (lm) {
        examples[0].targets = {4, 5, 6};
        examples[1].targets = {7, 8, 9, 10, 11};
    }
    torch::manual_seed(3);
    WideTransformer net(config);
    const auto lossOf = [&](const Batch& batch) {
        net->zero_grad();
        const ModelOutput out = net->forward(batch.ids, modelMask(batch));
        const torch::Tensor loss = taskLoss(config, out.logits, batch.targets, targetPositions(batch));
        loss.backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : net->parameters())
            grads.push_back(p.grad().clone());
        return std::make_pair(loss.item<double>(), grads);
    };
    const Batch plain = makeBatch(examples, lm);
    QCOMPARE(plain.ids.size(1), std::int64_t{5});
    const auto [want, wantGrads] = lossOf(plain);
    for (const std::int64_t length : {8, 16}) {
        Batch padded = makeBatch(examples, lm);
        padBatch(padded, length, 0);
        QCOMPARE(padded.ids.size(1), length);
        QCOMPARE(padded.mask.sum().item<std::int64_t>(), std::int64_t{8});
        QCOMPARE(padded.ids[1][7].item<std::int64_t>(), Tokenizer::kPad);
        QVERIFY(modelMask(padded).defined());
        const auto [got, gotGrads] = lossOf(padded);
        QVERIFY2(std::abs(got - want) <= 1e-6 * std::abs(want), qPrintable(QStringLiteral("%1 against %2").arg(got).arg(want)));
        for (std::size_t i = 0; i < wantGrads.size(); ++i)
            QVERIFY2(test::relativeError(gotGrads[i], wantGrads[i]) < 1e-5,
                     qPrintable(QStringLiteral("gradient %1 off by %2").arg(i).arg(test::relativeError(gotGrads[i], wantGrads[i]))));
    }
}

// Two optimisers over twin parameters, the rate changed every step as a
// schedule does: the capturable one, whose counts and rates live in tensors,
// updates exactly as the ordinary fused one, and saves the same step counts.
// The second parameter has no gradient for the first three steps: its state,
// made up front by makeCapturable (not inside a capture), starts its count at
// the step it is first updated, as the ordinary optimiser's does.
void TestStepGraphs::capturableAdamWUpdatesAsAdamW()
{
    REQUIRE_CAPTURABLE_ADAMW();
    torch::manual_seed(5);
    const torch::Tensor start = torch::randn({4, 3}), later = torch::randn({2});
    torch::Tensor a = start.clone().requires_grad_(), b = start.clone().requires_grad_();
    torch::Tensor a2 = later.clone().requires_grad_(), b2 = later.clone().requires_grad_();
    const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.1);
    FusedAdamW ordinary({torch::optim::OptimizerParamGroup({a, a2})}, options);
    FusedAdamW capturable({torch::optim::OptimizerParamGroup({b, b2})}, options);
    capturable.makeCapturable();
    QCOMPARE(capturable.state().size(), std::size_t{2});  // every parameter's, before any step
    QCOMPARE(ordinary.state().size(), std::size_t{0});
    for (int step = 0; step < 6; ++step) {
        const torch::Tensor grad = torch::randn({4, 3}), grad2 = torch::randn({2});
        applyLearningRate(ordinary, 0.01 * (step + 1));
        applyLearningRate(capturable, 0.01 * (step + 1));
        a.mutable_grad() = grad.clone();
        b.mutable_grad() = grad.clone();
        if (step >= 3) {
            a2.mutable_grad() = grad2.clone();
            b2.mutable_grad() = grad2.clone();
        }
        ordinary.step();
        capturable.step();
    }
    QVERIFY(!a.equal(start) && !a2.equal(later));  // both moved
    QVERIFY2(torch::allclose(a, b, 0, 0), "the capturable step differs from the ordinary one");
    QVERIFY2(torch::allclose(a2, b2, 0, 0), "a parameter first updated at step 4 differs");
    const auto savedSteps = [](const FusedAdamW& optimizer) {
        torch::serialize::OutputArchive archive;
        optimizer.save(archive);
        std::ostringstream bytes;
        archive.save_to(bytes);
        std::istringstream in(bytes.str());
        torch::serialize::InputArchive read;
        read.load_from(in);
        const torch::Tensor first = torch::zeros({4, 3}, torch::requires_grad()),
                            second = torch::zeros({2}, torch::requires_grad());
        FusedAdamW loaded({torch::optim::OptimizerParamGroup({first, second})}, torch::optim::AdamWOptions(0.01));
        loaded.load(read);
        const auto stepOf = [&](const torch::Tensor& p) {
            return static_cast<const torch::optim::AdamWParamState&>(
                       *loaded.state().at(optimizerStateKey(loaded.state(), p)))
                .step();
        };
        return std::make_pair(stepOf(first), stepOf(second));
    };
    QCOMPARE(savedSteps(ordinary), std::make_pair(std::int64_t{6}, std::int64_t{3}));
    QCOMPARE(savedSteps(capturable), std::make_pair(std::int64_t{6}, std::int64_t{3}));
}

void TestStepGraphs::recordedStepsTrainAsOrdinaryOnes_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<int>("graphs");  // recorded shapes; -1: one to five
    // ListOps: examples of 5 to 30 tokens, a batch padded to a multiple of 8 (at
    // most five lengths, of max_len 40); each length seen thrice is recorded.
    QTest::newRow("dense classifier, padded") << R"({})" << -1;
    QTest::newRow("wide attention, CLS token, label smoothing")
        << R"({"model": {"layers": 1, "heads": 8, "pooling": "cls"}, "train": {"label_smoothing": 0.1}})" << -1;
    // A mixture's padded batches route a different number of tokens each: no recording.
    QTest::newRow("widenet, padded: ordinary")
        << R"({"model": {"experts": 4, "top_k": 2, "share_attention": true, "share_ffn": true,
                         "router_noise_std": 0.0}})" << 0;
    // Full batches of equal length: one shape, recorded.
    QTest::newRow("widenet, full batches")
        << R"({"model": {"experts": 4, "top_k": 2, "share_attention": true, "share_ffn": true,
                         "router_noise_std": 0.0, "max_len": 16},
               "task": {"min_length": 16, "max_length": 16}})" << 1;
    // Images have one shape; Mixup's weights change every step and are read from the device.
    QTest::newRow("vit-moe, mixup")
        << R"({"model": {"input": "image", "image_size": 16, "patch_size": 4, "channels": 3, "experts": 4,
                         "top_k": 2, "pooling": "mean", "router_noise_std": 0.0},
               "task": {"kind": "shapes", "train_size": 400, "validation_size": 50, "test_size": 50,
                        "crop_padding": 2, "flip": true, "mixup": 0.5}})" << 1;
}

// The same run trained with ordinary steps and with recorded ones: every
// logged loss agrees (padding changes the sums' order only), and the recorder
// saw the expected number of shapes and replayed the steps that were not
// measured or warm-up.
void TestStepGraphs::recordedStepsTrainAsOrdinaryOnes()
{
    REQUIRE_CAPTURABLE_ADAMW();
    QFETCH(QString, overrides);
    QFETCH(int, graphs);
    nlohmann::json graphOn = nlohmann::json::parse(overrides.toStdString());
    graphOn["train"]["cuda_graph"] = true;
    QTemporaryDir dir;
    const std::vector<double> want = trainedLosses(listOpsRun(overrides.toStdString()), fresh(dir, "ordinary"));
    CountingRecorder counting;
    TrainerOptions options;
    options.stepRecorder = counting.recorder();
    const std::vector<double> got = trainedLosses(listOpsRun(graphOn.dump()), fresh(dir, "recorded"), options);
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        QVERIFY2(std::abs(got[i] - want[i]) <= 1e-5 * std::abs(want[i]),
                 qPrintable(QStringLiteral("line %1: %2 against %3").arg(i).arg(got[i], 0, 'g', 10).arg(want[i], 0, 'g', 10)));
    if (graphs >= 0)
        QCOMPARE(counting.recorded, graphs);
    else
        QVERIFY2(counting.recorded >= 1 && counting.recorded <= 5, qPrintable(QString::number(counting.recorded)));
    if (graphs != 0)
        QVERIFY2(counting.replayed >= 8, qPrintable(QString::number(counting.replayed)));  // of 20 steps, 4 measured
    const std::string log = readText(fresh(dir, "recorded") / "log.txt");
    QVERIFY2(log.find("recorded once per batch shape and replayed") != std::string::npos, log.c_str());
    if (graphs == 0)
        QVERIFY2(log.find("routes a different number of tokens each step") != std::string::npos, log.c_str());
}

// A translation model: its sources and its targets are each padded to a few
// lengths, and the losses stay the ordinary run's. Pairs of one to seven words
// of one to three letters, the target the source with its letters shifted.
void TestStepGraphs::translationPaddedOnBothSides()
{
    REQUIRE_CAPTURABLE_ADAMW();
    QTemporaryDir dir;
    const std::filesystem::path pairs = fresh(dir, "pairs.tsv");
    {
        std::mt19937 random(3);
        std::ofstream out(pairs, std::ios::binary);
        for (int i = 0; i < 400; ++i) {
            std::string source, target;
            const int words = 1 + static_cast<int>(random() % 7);
            for (int w = 0; w < words; ++w) {
                if (w > 0)
                    source += ' ', target += ' ';
                for (int l = 0, letters = 1 + static_cast<int>(random() % 3); l < letters; ++l) {
                    const char c = static_cast<char>('a' + random() % 8);
                    source += c;
                    target += static_cast<char>(c + 1);
                }
            }
            out << source << '\t' << target << '\n';
        }
    }
    const auto run = [&](bool graphs) {
        return parseRunDocument(nlohmann::json{
            {"model", {{"head", "translation"}, {"vocab_size", 300}, {"max_len", 32}, {"d_model", 32}, {"layers", 1},
                       {"decoder_layers", 1}, {"heads", 4}, {"ffn_dim", 64}, {"dropout", 0.0}}},
            {"task", {{"kind", "translation"}, {"path", pairs.string()}, {"tokenizer", "bpe"}, {"bpe_merges", 0},
                      {"max_subwords", 31}, {"validation_fraction", 0.05}, {"test_fraction", 0.05}}},
            {"train", {{"steps", 30}, {"batch_size", 8}, {"log_every", 5}, {"eval_every", 30}, {"eval_batches", 1},
                       {"bleu_sentences", 0}, {"checkpoint_every", 30}, {"threads", 1}, {"device", "cpu"},
                       {"cuda_graph", graphs}}}}.dump());
    };
    const std::vector<double> want = trainedLosses(run(false), fresh(dir, "ordinary"));
    CountingRecorder counting;
    TrainerOptions options;
    options.stepRecorder = counting.recorder();
    const std::vector<double> got = trainedLosses(run(true), fresh(dir, "recorded"), options);
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        QVERIFY2(std::abs(got[i] - want[i]) <= 1e-5 * std::abs(want[i]),
                 qPrintable(QStringLiteral("line %1: %2 against %3").arg(i).arg(got[i], 0, 'g', 10).arg(want[i], 0, 'g', 10)));
    QVERIFY2(counting.recorded >= 1 && counting.replayed >= 1,
             qPrintable(QStringLiteral("%1 recorded, %2 replayed").arg(counting.recorded).arg(counting.replayed)));
}

// Ten recorded steps, a stop, ten more after a resume (recording again): the
// losses are those of the twenty-step run, exactly, on the CPU.
void TestStepGraphs::resumeAcrossRecordedStepsIsExact()
{
    REQUIRE_CAPTURABLE_ADAMW();
    const RunDocument run = listOpsRun(R"({"train": {"cuda_graph": true}})");
    QTemporaryDir dir;
    CountingRecorder counting;
    TrainerOptions options;
    options.stepRecorder = counting.recorder();
    const std::vector<double> whole = trainedLosses(run, fresh(dir, "whole"), options);
    {
        Trainer first(run, fresh(dir, "parts"), options);
        QCOMPARE(static_cast<int>(test::runStoppedAt(first, 10).outcome), static_cast<int>(TrainOutcome::Stopped));
        QCOMPARE(first.step(), std::int64_t{10});
    }
    TrainerOptions resume = options;
    resume.resume = true;
    const std::vector<double> parts = trainedLosses(readRunDocument(fresh(dir, "parts")), fresh(dir, "parts"), resume);
    QVERIFY(counting.replayed > 0);
    QCOMPARE(parts.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i)
        QCOMPARE(parts[i], whole[i]);
}

// No recorder on the CPU: ordinary steps, the log says why, the run is the ordinary run.
void TestStepGraphs::theCpuFallsBackSayingWhy()
{
    QTemporaryDir dir;
    const std::vector<double> want = trainedLosses(listOpsRun(), fresh(dir, "ordinary"));
    const std::vector<double> got = trainedLosses(listOpsRun(R"({"train": {"cuda_graph": true}})"), fresh(dir, "asked"));
    QCOMPARE(got, want);
    const std::string log = readText(fresh(dir, "asked") / "log.txt");
    QVERIFY2(log.find("train.cuda_graph: steps run ordinarily: ") != std::string::npos, log.c_str());
    QVERIFY2(log.find("has no CUDA graphs") != std::string::npos, log.c_str());
}

void TestStepGraphs::otherOptimisersFallBackSayingWhy()
{
    QTemporaryDir dir;
    CountingRecorder counting;
    TrainerOptions options;
    options.stepRecorder = counting.recorder();
    trainedLosses(listOpsRun(R"({"train": {"cuda_graph": true, "optimizer": "sgd"}})"), fresh(dir, "sgd"), options);
    QCOMPARE(counting.recorded, 0);
    const std::string log = readText(fresh(dir, "sgd") / "log.txt");
    QVERIFY2(log.find("train.cuda_graph: steps run ordinarily: train.optimizer sgd has no capturable step") != std::string::npos,
             log.c_str());
}

QTEST_GUILESS_MAIN(TestStepGraphs)
#include "tst_stepgraphs.moc"
