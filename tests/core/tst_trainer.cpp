// Tests of train/Trainer and run/Checkpoint: learning on ListOps, exact resume,
// checkpoints that survive a kill mid-save, clear errors, the NaN stop, a
// language model on a text file, translation scored in BLEU, and an export Python reads.
#include "TestSupport.h"
#include "config/Presets.h"
#include "run/Checkpoint.h"
#include "measure/Measurements.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"
#include "study/StudyRunner.h"
#include "measure/HealthAlarms.h"
#include "train/Trainer.h"


#include <QtTest>

#include <chrono>
#include <cstdio>
#include <csignal>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace widelab;

namespace {

using test::stateAt;

// A tiny ListOps run that a test can afford: short expressions, few examples.
using test::tinyRun;

using test::metricLines;

std::filesystem::path fresh(const QTemporaryDir& dir, const char* name) { return std::filesystem::path(dir.path().toStdString()) / name; }

std::string stepFile(std::int64_t step)
{
    char name[32];
    std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(step));
    return name;
}

std::string readText(const std::filesystem::path& file)
{
    std::ostringstream text;
    text << std::ifstream(file).rdbuf();
    return text.str();
}

int occurrences(const std::string& text, const std::string& part)
{
    int count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
        ++count;
    return count;
}

// Waits up to `seconds` for `condition`, checking every 10 ms.
template <typename Condition>
bool waitFor(Condition condition, double seconds = 60.0)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// Trains the run of `document()` whole in DIR/whole, and in DIR/parts
// interrupted as Ctrl-C does it (the stop flag, raised after step `stopAt`)
// then resumed; the two must log the same losses at the same steps.
template <typename Document>
void resumedRunRetracesTheWholeRun(Document document, const QTemporaryDir& dir, std::int64_t stopAt)
{
    std::atomic<bool> stop{false};
    {
        Trainer whole(document(), fresh(dir, "whole"));
        whole.run(stop);
    }
    {
        Trainer first(document(), fresh(dir, "parts"), {});
        QCOMPARE(static_cast<int>(test::runStoppedAt(first, stopAt).outcome), static_cast<int>(TrainOutcome::Stopped));
        QCOMPARE(first.step(), stopAt);
    }
    {
        TrainerOptions resume;
        resume.resume = true;
        Trainer second(document(), fresh(dir, "parts"), resume);
        QCOMPARE(second.step(), stopAt);
        second.run(stop);
    }
    const auto whole = metricLines(fresh(dir, "whole"), "train");
    const auto parts = metricLines(fresh(dir, "parts"), "train");
    QVERIFY(!whole.empty());
    QCOMPARE(parts.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
        QCOMPARE(parts[i]["step"].get<int>(), whole[i]["step"].get<int>());
        QCOMPARE(parts[i]["loss"].get<double>(), whole[i]["loss"].get<double>());
    }
}


// Pairs of a task a tiny encoder-decoder learns in a few hundred steps: every
// letter of four or five words (a-h, one to three letters each) shifted by one
// ("bad ca f hh" -> "cbe db g ii"), as "source TAB target" lines. Four words at
// least, so that every sentence has the 4-grams BLEU counts.
std::filesystem::path writeShiftedLetters(const QTemporaryDir& dir, int count)
{
    std::mt19937 random(7);
    std::string lines;
    for (int i = 0; i < count; ++i) {
        std::string source, target;
        const int words = 4 + static_cast<int>(random() % 2);
        for (int w = 0; w < words; ++w) {
            if (w > 0)
                source += ' ', target += ' ';
            const int letters = 1 + static_cast<int>(random() % 3);
            for (int l = 0; l < letters; ++l) {
                const char c = static_cast<char>('a' + random() % 8);
                source += c;
                target += static_cast<char>(c + 1);
            }
        }
        lines += source + "\t" + target + "\n";
    }
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / "shifted.tsv";
    std::ofstream(path, std::ios::binary) << lines;
    return path;
}

RunDocument tinyTranslationRun(const std::filesystem::path& pairs, const nlohmann::json& overrides = nlohmann::json::object())
{
    nlohmann::json document = {
        {"model", {{"head", "translation"}, {"vocab_size", 300}, {"max_len", 32}, {"d_model", 64}, {"layers", 1},
                   {"decoder_layers", 1}, {"heads", 4}, {"ffn_dim", 128}, {"dropout", 0.0}}},
        {"task", {{"kind", "translation"}, {"path", pairs.string()}, {"tokenizer", "bpe"}, {"bpe_merges", 0},
                  {"max_subwords", 31}, {"validation_fraction", 0.05}, {"test_fraction", 0.05}}},
        {"train", {{"steps", 300}, {"batch_size", 32}, {"learning_rate", 0.003}, {"warmup_steps", 40},
                   {"log_every", 20}, {"eval_every", 300}, {"eval_batches", 4}, {"bleu_sentences", 60},
                   {"checkpoint_every", 300}, {"threads", 2}}}};
    document.merge_patch(overrides);
    return parseRunDocument(document.dump());
}
}  // namespace

class TestTrainer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void layerNormDivergenceByHand();
    void everyPresetTrainsAStep_data();
    void everyPresetTrainsAStep();
    void listOpsLossFalls();
    void shapesLossFalls();
    void imageRunResumesExactly();
    void imageProbesAndTheirErrors();
    void resumeContinuesExactly();
    void aStopDuringTheLastValidationIsMeasuredOnResume();
    void killDuringSaveLeavesTheLastCheckpointLoadable();
    void brokenCheckpointsAreClearErrors();
    void existingRunIsNotOverwritten();
    void bestCheckpointIsTheSelectedValidation();
    void resumeTrimsMetricsAndEvalWritesNothing();
    void resumeKeepsTheRunsOwnConfiguration();
    void probesStayWithTheRun();
    void deadExpertsAreReportedOnce();
    void collapseZLossAndPathAlarms();
    void oneTrainerPerRunDirectory();
    void truncatedLatestCheckpointFallsBack();
    void controlPausesServesRequestsAndStops();
    void stopDuringEvaluationEndsTheRun();
    void nonFiniteLossStopsAndKeepsTheCheckpoint();
    void outOfMemoryIsAMessageNotACrash();
    void languageModelOnATextFile();
    void translationIsLearnedAndScoredInBleu();
    void translationRunWithTokenBatchesResumesExactly();
    void maskedLanguageModelResumesExactly();
    void exportedWeightsLoadInPython();
};

void TestTrainer::layerNormDivergenceByHand()
{
    // Two blocks of two: gamma = [[0, 1], [1, 0]], beta = [[0, 1], [2, 4]].
    // gamma, all pairs: block 0 against block 1: |0-1| + |0-0| + |1-1| + |1-0| = 2,
    //   and the same from block 1: 4 / (M^2 N^2 = 16) = 0.25.
    // gamma, elementwise: |0-1| + |1-0| = 2 per block: 4 / (M N^2 = 8) = 0.5.
    // beta, all pairs: |0-2|+|0-4|+|1-2|+|1-4| = 10, twice: 20 / 16 = 1.25;
    //   elementwise: |0-2| + |1-4| = 5, twice: 10 / 8 = 1.25.
    const LayerNormDivergence d = layerNormDivergence(torch::tensor({0.0, 1.0, 1.0, 0.0}).view({2, 2}),
                                                      torch::tensor({0.0, 1.0, 2.0, 4.0}).view({2, 2}));
    QCOMPARE(d.gammaAllPairs, 0.25);
    QCOMPARE(d.gammaElementwise, 0.5);
    QCOMPARE(d.betaAllPairs, 1.25);
    QCOMPARE(d.betaElementwise, 1.25);

    // Against the equation summed term by term, on random values.
    torch::manual_seed(9);
    const torch::Tensor g = torch::randn({3, 5}, torch::kFloat64);
    double all = 0, same = 0;
    for (int j = 0; j < 3; ++j)
        for (int n = 0; n < 3; ++n) {
            if (j == n)
                continue;
            for (int i = 0; i < 5; ++i) {
                same += std::abs(g[j][i].item<double>() - g[n][i].item<double>());
                for (int m = 0; m < 5; ++m)
                    all += std::abs(g[j][i].item<double>() - g[n][m].item<double>());
            }
        }
    const LayerNormDivergence r = layerNormDivergence(g, g);
    QVERIFY(std::abs(r.gammaAllPairs - all / (25.0 * 9.0)) < 1e-12);
    QVERIFY(std::abs(r.gammaElementwise - same / (5.0 * 9.0)) < 1e-12);
}

void TestTrainer::everyPresetTrainsAStep_data()
{
    QTest::addColumn<QString>("preset");
    for (const auto& name : listPresets())
        QTest::newRow(name.c_str()) << QString::fromStdString(name);
}

void TestTrainer::everyPresetTrainsAStep()
{
    // Each preset with its own task (ListOps unless it names one), shrunk to two
    // steps of two examples: the data, model and optimiser must all come up.
    QFETCH(QString, preset);
    std::ifstream in(resolveConfigPath(preset.toStdString()));
    nlohmann::json json = nlohmann::json::parse(in);
    json.merge_patch(nlohmann::json::parse(R"({"task": {"train_size": 8, "validation_size": 4, "test_size": 4},
        "train": {"steps": 2, "batch_size": 2, "eval_every": 2, "eval_batches": 1, "log_every": 1}})"));
    // A paper-scale preset keeps its structure (depth, heads, experts, sharing,
    // sequence or picture, task) at an eighth of its widths: at full width one
    // such row trained for two minutes in 14 GB (ViT-MoE-B, 256M parameters,
    // most of it writing the checkpoint), on a machine CI shares between two
    // tests. Their full size is built and counted by tst_parametercount.
    if (preset.endsWith(QStringLiteral("-paper"))) {
        nlohmann::json& model = json["model"];
        for (const char* key : {"d_model", "ffn_dim", "head_dim", "embedding_dim"})
            if (model.contains(key) && model[key].get<std::int64_t>() > 0)
                model[key] = std::max<std::int64_t>(8, model[key].get<std::int64_t>() / 8);
        // And its ListOps expressions (500-2000 tokens in the Wide Attention recipe) at an eighth of their
        // lengths: 2000-token attention made each such row take 20 s.
        nlohmann::json& task = json["task"];
        for (const char* key : {"min_length", "max_length"})
            if (task.contains(key))
                task[key] = std::max<std::int64_t>(5, task[key].get<std::int64_t>() / 8);
    }
    QTemporaryDir dir;
    // A translation preset reads the Bible's pairs from a file the user writes
    // first (widelab-cli corpus bible): here, pairs of the same form.
    if (json["task"].value("kind", "") == "translation")
        json["task"].merge_patch({{"path", writeShiftedLetters(dir, 100).string()},
                                  {"validation_fraction", 0.2},
                                  {"test_fraction", 0.2}});
    // Likewise a classifier's labelled texts (widelab-cli corpus fortunes writes the fortunes'): two labels here.
    if (json["task"].value("kind", "") == "classification") {
        const std::filesystem::path texts = std::filesystem::path(dir.path().toStdString()) / "texts.tsv";
        std::ofstream out(texts);
        for (int i = 0; i < 40; ++i)
            out << (i % 2 ? "science" : "work") << "\tfortune number " << i << "\n";
        json["task"].merge_patch({{"path", texts.string()}, {"validation_fraction", 0.2}, {"test_fraction", 0.2}});
    }
    // A pair classifier reads labelled pairs of texts (widelab-cli corpus bible-pairs writes verses').
    if (json["task"].value("kind", "") == "pair_classification") {
        const std::filesystem::path pairs = std::filesystem::path(dir.path().toStdString()) / "pairs.tsv";
        std::ofstream out(pairs);
        for (int i = 0; i < 40; ++i)
            out << (i % 2 ? "same" : "other") << "\tverse " << i << "\tverse " << (i % 2 ? i : i + 1) << "\n";
        json["task"].merge_patch({{"path", pairs.string()}, {"validation_fraction", 0.2}, {"test_fraction", 0.2}});
    }
    // A pretraining preset reads any text (widelab-cli corpus bible-text writes the Bible's): the licence here.
    if (json["task"].value("kind", "") == "masked_lm") {
        if (!std::filesystem::exists("/usr/share/common-licenses/GPL-3"))
            QSKIP("no licence text on this machine");
        json["task"]["path"] = "/usr/share/common-licenses/GPL-3";
    }
    // A fine-tuning preset starts from a run trained first: here the preset itself, trained
    // one step from scratch, stands in for it.
    if (!json["train"].value("init_from", "").empty()) {
        nlohmann::json pretraining = json;
        pretraining["train"].erase("init_from");
        pretraining["train"]["steps"] = 1;
        std::atomic<bool> never{false};
        Trainer(parseRunDocument(pretraining.dump()), fresh(dir, "pretrained")).run(never);
        json["train"]["init_from"] = fresh(dir, "pretrained").string();
    }
    Trainer trainer(parseRunDocument(json.dump()), fresh(dir, "run"));
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::Completed));
    const auto train = metricLines(fresh(dir, "run"), "train");
    QCOMPARE(train.size(), std::size_t{2});
    QVERIFY(std::isfinite(train.back()["loss"].get<double>()));
}

void TestTrainer::listOpsLossFalls()
{
    QTemporaryDir dir;
    const RunDocument run = tinyRun(R"({"train": {"steps": 60, "eval_every": 25}})");
    Trainer trainer(run, fresh(dir, "run"));
    std::atomic<bool> stop{false};
    QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    const auto train = metricLines(fresh(dir, "run"), "train");
    QCOMPARE(train.size(), std::size_t{60});
    // Weight and gradient histograms on the first line, at each validation (25,
    // 50) and on the last (60), counting every parameter of the model once.
    std::int64_t parameters = 0;
    for (const torch::Tensor& p : WideTransformer(run.model)->parameters())
        parameters += p.numel();
    std::vector<std::int64_t> histogramSteps;
    for (const nlohmann::json& line : train) {
        if (!line.contains("weights"))
            continue;
        histogramSteps.push_back(line["step"].get<std::int64_t>());
        for (const char* kind : {"weights", "gradients"}) {
            std::int64_t counted = 0;
            for (const nlohmann::json& group : line[kind]) {
                QCOMPARE(group["counts"].size(), std::size_t{30});
                QVERIFY(group["low"].get<double>() <= group["high"].get<double>());
                for (const nlohmann::json& count : group["counts"])
                    counted += count.get<std::int64_t>();
            }
            QCOMPARE(counted, parameters);
        }
        QCOMPARE(line["weights"][0]["group"].get<std::string>(), std::string("embed"));
    }
    QCOMPARE(histogramSteps, (std::vector<std::int64_t>{1, 25, 50, 60}));
    double first = 0, last = 0;
    for (int i = 0; i < 10; ++i) {
        first += train[static_cast<std::size_t>(i)]["task_loss"].get<double>() / 10;
        last += train[train.size() - 1 - static_cast<std::size_t>(i)]["task_loss"].get<double>() / 10;
    }
    QVERIFY2(last < first - 0.2, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    QCOMPARE(metricLines(fresh(dir, "run"), "eval").size(), std::size_t{3});
    // Every snapshot carries the LayerNorms of both blocks, the residual stream
    // after each (a dense model too) and the cost of measuring.
    QCOMPARE(train.back()["layernorm"]["ffn_gamma"].size(), std::size_t{2});
    for (const nlohmann::json& line : {train.front(), train.back()}) {
        QCOMPARE(line["residual_norm"].size(), std::size_t{2});
        for (const nlohmann::json& norm : line["residual_norm"])
            QVERIFY(norm.is_number() && norm.get<double>() > 0.0);
    }
    QVERIFY(train.back()["measurement_seconds"].get<double>() >= 0.0);
    // Reading a batch is part of a step, and takes some time.
    for (const nlohmann::json& line : train)
        QVERIFY(line["data_seconds"].get<double>() > 0.0
                && line["data_seconds"].get<double>() < line["step_seconds"].get<double>());
}

namespace {

// A small image run on the generated shapes: 16x16 RGB in 4x4 patches (16 tokens).
const char* kTinyImages = R"({"model": {"input": "image", "image_size": 16, "patch_size": 4, "channels": 3,
                                         "dropout": 0.0},
                              "task": {"kind": "shapes", "train_size": 2000, "validation_size": 200,
                                       "test_size": 100, "crop_padding": 2, "flip": true}})";

RunDocument tinyImageRun(const std::string& overrides)
{
    nlohmann::json json = nlohmann::json::parse(kTinyImages);
    json.merge_patch(nlohmann::json::parse(overrides));
    return tinyRun(json.dump());
}

}  // namespace

void TestTrainer::shapesLossFalls()
{
    // The generated image task is learnable: a small ViT (32x32 in 4x4 patches,
    // mean pooling, with augmentation) ends clearly below chance, ln 10 = 2.303.
    QTemporaryDir dir;
    Trainer trainer(tinyImageRun(R"({"model": {"image_size": 32, "d_model": 64, "layers": 2, "heads": 4,
                                               "ffn_dim": 128, "pooling": "mean"},
                                     "task": {"train_size": 5000, "validation_size": 300, "crop_padding": 4},
                                     "train": {"steps": 500, "batch_size": 32, "learning_rate": 0.003,
                                               "warmup_steps": 20, "log_every": 10, "eval_every": 500,
                                               "eval_batches": 0, "checkpoint_every": 500}})"),
                    fresh(dir, "run"));
    std::atomic<bool> stop{false};
    QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    const auto eval = metricLines(fresh(dir, "run"), "eval");
    QCOMPARE(eval.size(), std::size_t{1});
    const double loss = eval.back()["loss"].get<double>(), accuracy = eval.back()["accuracy"].get<double>();
    QVERIFY2(loss < 1.9, qPrintable(QString("validation loss %1, accuracy %2").arg(loss).arg(accuracy)));
    QVERIFY2(accuracy > 0.25, qPrintable(QString("validation accuracy %1").arg(accuracy)));
    // The run keeps its normalisation and its classes.
    QVERIFY(std::filesystem::exists(fresh(dir, "run") / "image.json"));
    QCOMPARE(readRunLabels(fresh(dir, "run")), shapeNames());
}

void TestTrainer::imageRunResumesExactly()
{
    // Random crops, flips and Mixup from the batch's seed, MoE: a resumed image run
    // retraces the uninterrupted run's losses exactly.
    QTemporaryDir dir;
    const std::string moe = R"({"model": {"experts": 4, "top_k": 2, "pooling": "mean"}, "task": {"mixup": 0.5},
                                "train": {"steps": 12, "checkpoint_every": 6, "eval_every": 6}})";
    resumedRunRetracesTheWholeRun([&] { return tinyImageRun(moe); }, dir, 6);
    QCOMPARE(readText(fresh(dir, "parts") / "image.json"), readText(fresh(dir, "whole") / "image.json"));
}

void TestTrainer::imageProbesAndTheirErrors()
{
    QTemporaryDir dir;
    {
        Trainer trainer(tinyImageRun(R"({"train": {"steps": 2, "probes": ["validation:7"]}})"), fresh(dir, "run"));
        std::atomic<bool> stop{false};
        trainer.run(stop);
        const ProbeResult probe = trainer.probe("validation:7");
        QCOMPARE(probe.label, std::int64_t{7});  // shapes: example i has class i mod 10
        QCOMPARE(probe.image.width, std::int64_t{16});
        QCOMPARE(probe.image.channels, std::int64_t{3});
        QCOMPARE(probe.image.pixels.size(), std::size_t{16 * 16 * 3});
        QCOMPARE(probe.image.gridRows, std::int64_t{4});
        QCOMPARE(probe.tokens.front(), std::string("CLS"));
        QCOMPARE(probe.tokens.back(), std::string("r3c3"));
        QCOMPARE(probe.tokens.size(), std::size_t{17});
        QCOMPARE(probe.attention.front().front().size(), std::size_t{17});
        QVERIFY_THROWS_EXCEPTION(DataError, trainer.probe("a typed text"));
    }
    const auto probes = metricLines(fresh(dir, "run"), "probe");
    QVERIFY(!probes.empty());
    QVERIFY(probes.front().contains("image"));
    // A wrong entry is an error naming it, before anything trains.
    try {
        Trainer bad(tinyImageRun(R"({"train": {"probes": ["validation:0", "validation:9999"]}})"), fresh(dir, "bad"));
        QFAIL("a probe beyond the validation split was accepted");
    } catch (const ConfigError& error) {
        QVERIFY2(std::string(error.what()).find("train.probes[1]") != std::string::npos, error.what());
    }
}

void TestTrainer::resumeContinuesExactly()
{
    // Dropout, MoE routing noise and shuffled batches: a resumed run must still
    // retrace the uninterrupted run's losses exactly (same machine, CPU).
    QTemporaryDir dir;
    const std::string moe = R"({"model": {"experts": 4, "top_k": 2, "pooling": "mean"}, "train": {"steps": 20}})";
    resumedRunRetracesTheWholeRun([&] { return tinyRun(moe); }, dir, 10);
}

void TestTrainer::aStopDuringTheLastValidationIsMeasuredOnResume()
{
    // Ctrl-C after the last step, while its validation runs: the run stops with
    // that step saved and no validation line; resumed, it measures the validation
    // the uninterrupted run wrote, then ends, instead of ending at once without it.
    QTemporaryDir dir;
    const std::string json = R"({"train": {"steps": 12, "eval_every": 6, "log_every": 3}})";
    std::atomic<bool> never{false};
    Trainer(tinyRun(json), fresh(dir, "whole")).run(never);
    struct StopAtTheEnd : TrainingObserver {
        std::atomic<bool>* flag = nullptr;
        void onSnapshot(const TrainingSnapshot& s) override { *flag = *flag || s.step == 12; }
    };
    std::atomic<bool> interrupt{false};
    StopAtTheEnd observer;
    observer.flag = &interrupt;
    {
        Trainer first(tinyRun(json), fresh(dir, "parts"));
        first.addObserver(&observer);
        QCOMPARE(static_cast<int>(first.run(interrupt).outcome), static_cast<int>(TrainOutcome::Stopped));
        QCOMPARE(first.step(), 12);
    }
    const auto validations = [&dir](const char* run) {
        std::vector<int> steps;
        for (const auto& line : metricLines(fresh(dir, run), "eval"))
            steps.push_back(line["step"].get<int>());
        return steps;
    };
    QCOMPARE(validations("parts"), std::vector<int>{6});  // step 12's was cut short
    TrainerOptions resume;
    resume.resume = true;
    {
        Trainer second(tinyRun(json), fresh(dir, "parts"), resume);
        QCOMPARE(second.step(), 12);
        QCOMPARE(static_cast<int>(second.run(never).outcome), static_cast<int>(TrainOutcome::Completed));
    }
    QCOMPARE(validations("parts"), (std::vector<int>{6, 12}));
    QCOMPARE(validations("whole"), (std::vector<int>{6, 12}));
    const auto whole = metricLines(fresh(dir, "whole"), "eval");
    const auto parts = metricLines(fresh(dir, "parts"), "eval");
    QCOMPARE(parts.back()["loss"].get<double>(), whole.back()["loss"].get<double>());
    QCOMPARE(parts.back()["accuracy"].get<double>(), whole.back()["accuracy"].get<double>());
    // Resumed once more, nothing is pending: it ends at once, with no second line.
    Trainer(tinyRun(json), fresh(dir, "parts"), resume).run(never);
    QCOMPARE(validations("parts"), (std::vector<int>{6, 12}));
}

void TestTrainer::killDuringSaveLeavesTheLastCheckpointLoadable()
{
    QTemporaryDir dir;
    const std::filesystem::path file = fresh(dir, "model.pt");
    const ModelConfig config = tinyRun().model;
    std::mt19937 random(42);
    for (int round = 0; round < 6; ++round) {
        const pid_t child = fork();
        if (child == 0) {
            // Save again and again, each time with a new step, until killed.
            WideTransformer model(config);
            torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
            for (std::int64_t step = 1;; ++step)
                saveCheckpoint(file, *model, optimizer, stateAt(step, 0, 0.0));
        }
        // Once a first checkpoint exists, kill at a random moment of the save loop.
        for (int waited = 0; !std::filesystem::exists(file) && waited < 60000; waited += 10)
            QTest::qWait(10);
        QVERIFY2(std::filesystem::exists(file), "the child never saved a checkpoint");
        QTest::qWait(20 + static_cast<int>(random() % 200));
        kill(child, SIGKILL);
        int status = 0;
        waitpid(child, &status, 0);
        WideTransformer model(config);
        try {
            const CheckpointState state = loadCheckpoint(file, *model, nullptr);
            QVERIFY(state.step >= 1);
        } catch (const std::exception& error) {
            QFAIL(qPrintable(QString("round %1: %2").arg(round).arg(error.what())));
        }
    }
}

void TestTrainer::brokenCheckpointsAreClearErrors()
{
    QTemporaryDir dir;
    const ModelConfig config = tinyRun().model;
    WideTransformer model(config);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
    const std::filesystem::path file = fresh(dir, "model.pt");
    saveCheckpoint(file, *model, optimizer, CheckpointState{});
    auto failure = [&](const std::filesystem::path& path, WideTransformerImpl& target) -> std::string {
        try {
            loadCheckpoint(path, target, nullptr);
        } catch (const CheckpointError& error) {
            return error.what();
        }
        return "";
    };
    QVERIFY(failure(fresh(dir, "missing.pt"), *model).find("no such checkpoint") != std::string::npos);

    // Truncated: the first half of a real checkpoint.
    const std::filesystem::path truncated = fresh(dir, "truncated.pt");
    std::filesystem::copy_file(file, truncated);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(file) / 2);
    QVERIFY(failure(truncated, *model).find("cannot be read") != std::string::npos);

    // Another architecture: the message names the key that differs.
    ModelConfig wider = config;
    wider.layers = 3;
    wider.routingGroups = 3;
    WideTransformer other(wider);
    const std::string mismatch = failure(file, *other);
    QVERIFY2(mismatch.find("another architecture") != std::string::npos, mismatch.c_str());
    QVERIFY2(mismatch.find("model.layers (checkpoint 2, now 3)") != std::string::npos, mismatch.c_str());
}

void TestTrainer::bestCheckpointIsTheSelectedValidation()
{
    // Validations at every 3rd of 45 steps; best.pt holds the step of the lowest loss, or with
    // select_best accuracy of the highest accuracy (the first of equals), read back from metrics.jsonl.
    QTemporaryDir dir;
    std::map<std::string, std::int64_t> chosen;
    for (const std::string select : {"loss", "accuracy"}) {
        const std::filesystem::path run = fresh(dir, select.c_str());
        Trainer trainer(tinyRun(R"({"train": {"steps": 45, "eval_every": 3, "checkpoint_every": 45, "learning_rate": 0.01,
                                              "select_best": ")" + select + R"("}})"),
                        run);
        std::atomic<bool> stop{false};
        QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
        std::int64_t expected = -1;
        double bestValue = 0.0;
        for (const auto& line : metricLines(run, "eval")) {
            const double value = select == "loss" ? -line["loss"].get<double>() : line["accuracy"].get<double>();
            if (expected < 0 || value > bestValue) {
                expected = line["step"].get<std::int64_t>();
                bestValue = value;
            }
        }
        WideTransformer model(tinyRun().model);
        const CheckpointState best = loadCheckpoint(run / "checkpoints" / "best.pt", *model, nullptr);
        QVERIFY2(best.step == expected, qPrintable(QString("%1: best.pt at step %2, the metrics say %3")
                                                       .arg(QString::fromStdString(select)).arg(best.step).arg(expected)));
        chosen[select] = best.step;
    }
    // Where the two rules pick different validations, each check above tells them apart (they did on
    // LibTorch 1.13); another LibTorch may round its way to one step for both, which is no failure.
    qInfo("best.pt: step %lld by loss, step %lld by accuracy", static_cast<long long>(chosen["loss"]),
          static_cast<long long>(chosen["accuracy"]));
}

void TestTrainer::existingRunIsNotOverwritten()
{
    QTemporaryDir dir;
    std::atomic<bool> stop{false};
    {
        TrainerOptions few;
        few.steps = 2;
        Trainer(tinyRun(), fresh(dir, "run"), few).run(stop);
    }
    try {
        Trainer again(tinyRun(), fresh(dir, "run"));
        QFAIL("a second run into the same directory was accepted");
    } catch (const CheckpointError& error) {
        QVERIFY(std::string(error.what()).find("--resume") != std::string::npos);
    }
    TrainerOptions resume;
    resume.resume = true;
    try {
        Trainer empty(tinyRun(), fresh(dir, "empty"), resume);
        QFAIL("resuming a run that does not exist was accepted");
    } catch (const CheckpointError& error) {
        QVERIFY(std::string(error.what()).find("no checkpoint") != std::string::npos);
    }
}

void TestTrainer::resumeTrimsMetricsAndEvalWritesNothing()
{
    // 20 steps with checkpoints every 10, then the step-20 checkpoint lost as if
    // the process had died before writing it: resuming from 10 must not leave
    // steps 11-20 twice in metrics.jsonl.
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    Trainer(tinyRun(R"({"train": {"keep_last": 5}})"), run).run(stop);
    // The last step is a checkpoint step: its checkpoint is written once, not again at the end.
    const std::string log = readText(run / "log.txt");
    QCOMPARE(occurrences(log, "checkpoint step-00000020.pt"), 1);
    std::filesystem::remove(run / "checkpoints" / "step-00000020.pt");
    QCOMPARE(metricLines(run, "train").size(), std::size_t{20});
    {
        TrainerOptions resume;
        resume.resume = true;
        Trainer again(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
        QCOMPARE(again.step(), std::int64_t{10});
        QCOMPARE(metricLines(run, "train").size(), std::size_t{10});
        again.run(stop);
    }
    const auto lines = metricLines(run, "train");
    QCOMPARE(lines.size(), std::size_t{20});
    for (std::size_t i = 0; i < lines.size(); ++i)
        QCOMPARE(lines[i]["step"].get<std::size_t>(), i + 1);

    // Evaluating an older checkpoint reads that one and leaves the run untouched.
    const auto size = std::filesystem::file_size(run / "metrics.jsonl");
    TrainerOptions readOnly;
    readOnly.resume = true;
    readOnly.readOnly = true;
    readOnly.checkpoint = "step-00000010.pt";
    Trainer evaluator(tinyRun(R"({"train": {"keep_last": 5}})"), run, readOnly);
    QCOMPARE(evaluator.step(), std::int64_t{10});
    QCOMPARE(evaluator.evaluate(Split::Test).step, std::int64_t{10});
    QCOMPARE(std::filesystem::file_size(run / "metrics.jsonl"), size);
}

void TestTrainer::resumeKeepsTheRunsOwnConfiguration()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    Trainer(tinyRun(R"({"train": {"steps": 10}})"), run).run(stop);

    // Another learning rate is another run: refused, naming the key and both values.
    TrainerOptions resume;
    resume.resume = true;
    try {
        Trainer other(tinyRun(R"({"train": {"steps": 10, "learning_rate": 0.01}})"), run, resume);
        QFAIL("resuming with another learning rate was accepted");
    } catch (const ConfigError& error) {
        QCOMPARE(error.issues().size(), std::size_t{1});
        QCOMPARE(error.issues()[0].key, std::string("train.learning_rate"));
        QVERIFY2(error.issues()[0].reason.find("configured with 0.003") != std::string::npos, error.what());
    }

    // A longer run is the same run: config.json records the new length, and the
    // log says how the cosine schedule's rate moves (it spanned 10 steps, now 30).
    resume.steps = 30;
    {
        Trainer longer(readRunDocument(run), run, resume);
        QCOMPARE(longer.step(), std::int64_t{10});
        QCOMPARE(longer.totalSteps(), std::int64_t{30});
    }
    QCOMPARE(readRunDocument(run).train.steps, std::int64_t{30});
    const std::string log = readText(run / "log.txt");
    QVERIFY2(log.find("schedule now spans 30 steps instead of 10") != std::string::npos, log.c_str());
}

void TestTrainer::probesStayWithTheRun()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    // No probe texts given: a short validation example is probed at the start
    // and with every validation (steps 10 and 20), and written into config.json.
    TrainingControl control;
    control.requestProbe("[MAX 4 [MIN 2 7 ] 1 ]", true);  // served before the first step
    Trainer(tinyRun(), run).run(control);
    std::vector<std::string> probes = readRunDocument(run).train.probes;
    QCOMPARE(probes.size(), std::size_t{2});
    const std::string example = probes[0];
    QCOMPARE(probes[1], std::string("[MAX 4 [MIN 2 7 ] 1 ]"));
    QVERIFY(!example.empty());
    QVERIFY2(occurrences(example, " ") < 40, example.c_str());  // at most 40 tokens
    std::map<std::string, std::vector<std::int64_t>> steps;
    for (const nlohmann::json& line : metricLines(run, "probe"))
        steps[line["text"].get<std::string>()].push_back(line["step"].get<std::int64_t>());
    QCOMPARE(steps[example], (std::vector<std::int64_t>{0, 10, 20}));
    QCOMPARE(steps["[MAX 4 [MIN 2 7 ] 1 ]"], (std::vector<std::int64_t>{0, 10, 20}));

    // Probes do not change training: a resume whose document lists others is
    // the same run, and the run gains them.
    TrainerOptions resume;
    resume.resume = true;
    resume.steps = 30;
    Trainer(tinyRun(R"({"train": {"probes": ["[MIN 1 2 ]"], "probe_every": 5}})"), run, resume).run(control);
    probes = readRunDocument(run).train.probes;
    QCOMPARE(probes, (std::vector<std::string>{example, "[MAX 4 [MIN 2 7 ] 1 ]", "[MIN 1 2 ]"}));
    steps.clear();
    for (const nlohmann::json& line : metricLines(run, "probe"))
        steps[line["text"].get<std::string>()].push_back(line["step"].get<std::int64_t>());
    QCOMPARE(steps["[MIN 1 2 ]"], (std::vector<std::int64_t>{25, 30}));
}

void TestTrainer::deadExpertsAreReportedOnce()
{
    auto stats = [](std::vector<std::int64_t> tokens) {
        RoutingStats s;
        s.block = 1;
        s.tokensPerExpert = std::move(tokens);
        return std::vector<RoutingStats>{s};
    };
    HealthAlarmOptions options;
    options.deadAfter = 3;
    options.collapseShare = 0.9;  // 5 of 8 tokens is not a collapse here
    HealthAlarms watch(options);
    QVERIFY(watch.update(stats({5, 0, 3}), {}, 10).empty());  // once is chance
    QVERIFY(watch.update(stats({5, 0, 3}), {}, 20).empty());
    auto messages = watch.update(stats({5, 0, 3}), {}, 30);
    QCOMPARE(messages.size(), std::size_t{1});
    QCOMPARE(messages[0].level, std::string("warning"));
    QCOMPARE(messages[0].kind, std::string("dead expert"));
    QCOMPARE(messages[0].block, std::int64_t{1});
    QCOMPARE(messages[0].index, std::int64_t{1});
    QCOMPARE(messages[0].text, std::string("expert 2 of block 2 received no tokens in the last 3 measurements (to step 30)"));
    QVERIFY(watch.update(stats({5, 0, 3}), {}, 40).empty());  // said once
    messages = watch.update(stats({5, 2, 0}), {}, 50);
    QCOMPARE(messages.size(), std::size_t{1});
    QCOMPARE(messages[0].level, std::string("info"));
    QCOMPARE(messages[0].text, std::string("expert 2 of block 2 receives tokens again at step 50"));
}

void TestTrainer::collapseZLossAndPathAlarms()
{
    HealthAlarmOptions options;  // collapse above 60%, z-loss at twice its lowest, paths below 10% of 1/sqrt(2n)
    HealthAlarms watch(options);
    RoutingStats s;
    s.block = 0;
    s.tokensPerExpert = {30, 30, 20, 20};  // 30% at most
    s.zLoss = 2.0;
    QVERIFY(watch.update({s}, {}, 10).empty());
    s.tokensPerExpert = {70, 10, 10, 10};  // expert 1 takes 70%
    s.zLoss = 3.5;                         // 1.75x its lowest: not yet growing
    auto alarms = watch.update({s}, {}, 20);
    QCOMPARE(alarms.size(), std::size_t{1});
    QCOMPARE(alarms[0].kind, std::string("collapse"));
    QCOMPARE(alarms[0].index, std::int64_t{0});
    QCOMPARE(alarms[0].text, std::string("expert 1 of block 1 takes 70% of the block's tokens at step 20 (above 60%: "
                                         "routing is collapsing)"));
    s.zLoss = 4.5;  // 2.25x the lowest 2.0, and 2.5 above it
    alarms = watch.update({s}, {}, 30);
    QCOMPARE(alarms.size(), std::size_t{1});
    QCOMPARE(alarms[0].kind, std::string("z-loss"));
    QCOMPARE(alarms[0].level, std::string("warning"));
    s.tokensPerExpert = {25, 25, 25, 25};
    s.zLoss = 2.5;  // below 1.5x the lowest: calm again
    alarms = watch.update({s}, {}, 40);
    QCOMPARE(alarms.size(), std::size_t{2});
    QCOMPARE(alarms[0].kind, std::string("collapse"));
    QCOMPARE(alarms[0].level, std::string("info"));
    QCOMPARE(alarms[1].kind, std::string("z-loss"));
    QCOMPARE(alarms[1].level, std::string("info"));

    // Two paths start at 1/sqrt(4) = 0.5: below 0.05 is switching off, above 0.1 is back.
    PathWeights p;
    p.block = 2;
    p.sublayer = "ffn";
    p.paths = 2;
    p.alpha = {0.5f, 0.04f};
    alarms = watch.update({}, {p}, 50);
    QCOMPARE(alarms.size(), std::size_t{1});
    QCOMPARE(alarms[0].kind, std::string("path weight"));
    QCOMPARE(alarms[0].index, std::int64_t{1});
    QCOMPARE(alarms[0].sublayer, std::string("ffn"));
    QCOMPARE(alarms[0].text, std::string("the weight of path 2 of block 3's ffn has fallen to 0.04 at step 50 "
                                         "(it started at 0.5): the path is switching off"));
    p.alpha = {0.5f, 0.07f};  // between the two thresholds: unchanged
    QVERIFY(watch.update({}, {p}, 60).empty());
    p.alpha = {0.5f, 0.2f};
    alarms = watch.update({}, {p}, 70);
    QCOMPARE(alarms.size(), std::size_t{1});
    QCOMPARE(alarms[0].level, std::string("info"));
}

void TestTrainer::oneTrainerPerRunDirectory()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    TrainerOptions few;
    few.steps = 2;
    Trainer(tinyRun(), run, few).run(stop);
    TrainerOptions resume;
    resume.resume = true;
    {
        Trainer first(tinyRun(), run, resume);
        try {
            Trainer second(tinyRun(), run, resume);
            QFAIL("two trainers opened the same run");
        } catch (const CheckpointError& error) {
            QVERIFY2(std::string(error.what()).find("in use by another training run") != std::string::npos, error.what());
            QVERIFY2(std::string(error.what()).find(std::to_string(::getpid())) != std::string::npos, error.what());
        }
        // The lock is not a file that can be deleted out from under the holder.
        std::filesystem::remove(run / "lock");
        try {
            Trainer second(tinyRun(), run, resume);
            QFAIL("deleting RUN/lock let a second trainer in");
        } catch (const CheckpointError& error) {
            QVERIFY2(std::string(error.what()).find("in use by another training run") != std::string::npos, error.what());
        }
        // Reading a run does not need the lock.
        TrainerOptions readOnly = resume;
        readOnly.readOnly = true;
        Trainer reader(tinyRun(), run, readOnly);
        QCOMPARE(reader.step(), std::int64_t{2});
    }
    Trainer afterwards(tinyRun(), run, resume);  // the first one is gone, and its lock with it
    QCOMPARE(afterwards.step(), std::int64_t{2});
}

void TestTrainer::truncatedLatestCheckpointFallsBack()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    std::atomic<bool> stop{false};
    Trainer(tinyRun(R"({"train": {"keep_last": 5}})"), run).run(stop);
    const std::filesystem::path latest = run / "checkpoints" / "step-00000020.pt";
    std::filesystem::resize_file(latest, std::filesystem::file_size(latest) / 3);

    TrainerOptions resume;
    resume.resume = true;
    {
        Trainer resumed(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume);
        QCOMPARE(resumed.step(), std::int64_t{10});
    }
    const std::string log = readText(run / "log.txt");
    QVERIFY2(log.find("step-00000020.pt: cannot be read") != std::string::npos, log.c_str());
    QVERIFY2(log.find("trying step-00000010.pt") != std::string::npos, log.c_str());

    // Once an older one loaded, the broken file was set aside. Asked for by name,
    // it is an error, not a silent substitute.
    QVERIFY(!std::filesystem::exists(latest));
    QVERIFY(std::filesystem::exists(latest.string() + ".unreadable"));
    resume.checkpoint = "step-00000020.pt.unreadable";
    QVERIFY_THROWS_EXCEPTION(CheckpointUnreadable, Trainer(tinyRun(R"({"train": {"keep_last": 5}})"), run, resume));
}

void TestTrainer::controlPausesServesRequestsAndStops()
{
    QTemporaryDir dir;
    const std::filesystem::path run = fresh(dir, "run");
    Trainer trainer(tinyRun(R"({"train": {"steps": 100000, "eval_every": 100000, "checkpoint_every": 100000}})"), run);
    struct Watch : TrainingObserver {
        std::atomic<std::int64_t> step{0}, probeStep{-1};
        void onSnapshot(const TrainingSnapshot& s) override { step = s.step; }
        void onProbe(const ProbeResult& p) override { probeStep = p.step; }
    } watch;
    trainer.addObserver(&watch);
    TrainingControl control;
    TrainSummary summary;
    std::thread worker([&] { summary = trainer.run(control); });

    QVERIFY(waitFor([&] { return watch.step.load() >= 3; }));
    control.setPaused(true);
    // Paused: the step stops moving (one step may finish after the request).
    std::int64_t pausedAt = -1;
    QVERIFY(waitFor([&] {
        const std::int64_t before = watch.step.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        pausedAt = watch.step.load();
        return pausedAt == before;
    }));
    // A probe and a checkpoint asked for while paused are served at the paused step.
    control.requestProbe("[MAX 4 [MIN 2 7] 1]");
    control.requestCheckpoint();
    QVERIFY(waitFor([&] { return watch.probeStep.load() == pausedAt; }));
    QVERIFY(waitFor([&] { return std::filesystem::exists(run / "checkpoints" / stepFile(pausedAt)); }));
    QCOMPARE(watch.step.load(), pausedAt);

    control.setPaused(false);
    QVERIFY(waitFor([&] { return watch.step.load() > pausedAt + 2; }));
    control.requestStop();
    worker.join();
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::Stopped));
    QVERIFY(std::filesystem::exists(run / "checkpoints" / stepFile(summary.step)));
    const std::string log = readText(run / "log.txt");
    QVERIFY2(log.find("paused at step " + std::to_string(pausedAt)) != std::string::npos, log.c_str());
}

void TestTrainer::stopDuringEvaluationEndsTheRun()
{
    QTemporaryDir dir;
    // Snapshots every 5 steps, evaluation every 10: a stop asked for at the
    // step-10 snapshot (as if the user pressed Stop then) cuts the evaluation
    // that follows short, before its first batch, and saves step 10.
    const std::filesystem::path run = fresh(dir, "run");
    struct StopAt : TrainingObserver {
        TrainingControl& control;
        std::int64_t step;
        StopAt(TrainingControl& c, std::int64_t s) : control(c), step(s) {}
        void onSnapshot(const TrainingSnapshot& s) override
        {
            if (s.step == step)
                control.requestStop();
        }
    };
    TrainingControl control;
    StopAt stopAt(control, 10);
    Trainer trainer(tinyRun(R"({"train": {"steps": 30, "log_every": 5, "eval_every": 10, "checkpoint_every": 100}})"), run);
    trainer.addObserver(&stopAt);
    const TrainSummary summary = trainer.run(control);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::Stopped));
    QCOMPARE(summary.step, std::int64_t{10});
    QCOMPARE(metricLines(run, "eval").size(), std::size_t{0});
    QVERIFY(std::filesystem::exists(run / "checkpoints" / "step-00000010.pt"));

    // Snapshots every 7 steps and a stop at step 10: steps 8-10 are shown at the
    // stop, so the live curves reach the checkpoint, but not written: the
    // checkpoint keeps them for the resumed run's step-14 line.
    const std::filesystem::path partial = fresh(dir, "partial");
    struct StopAfterEvaluation : TrainingObserver {
        TrainingControl& control;
        std::vector<std::int64_t> shown;
        explicit StopAfterEvaluation(TrainingControl& c) : control(c) {}
        void onEvaluation(const EvaluationResult&) override { control.requestStop(); }
        void onSnapshot(const TrainingSnapshot& s) override { shown.push_back(s.step); }
    };
    TrainingControl second;
    StopAfterEvaluation stopper(second);
    Trainer seven(tinyRun(R"({"train": {"steps": 30, "log_every": 7, "eval_every": 10, "checkpoint_every": 100}})"),
                  partial);
    seven.addObserver(&stopper);
    QCOMPARE(seven.run(second).step, std::int64_t{10});
    QCOMPARE(stopper.shown, (std::vector<std::int64_t>{7, 10}));
    const auto train = metricLines(partial, "train");
    QCOMPARE(train.size(), std::size_t{1});
    QCOMPARE(train[0]["step"].get<int>(), 7);
    QCOMPARE(metricLines(partial, "eval").size(), std::size_t{1});
    WideTransformer model(tinyRun().model);
    const CheckpointState saved = loadCheckpoint(partial / "checkpoints" / "step-00000010.pt", *model, nullptr);
    QCOMPARE(saved.intervalSteps, std::int64_t{3});
    QCOMPARE(saved.intervalSums.size(), std::size_t{6});
}

void TestTrainer::nonFiniteLossStopsAndKeepsTheCheckpoint()
{
    // SGD at a learning rate of 100 without clipping diverges within a few steps.
    QTemporaryDir dir;
    Trainer trainer(tinyRun(R"({"train": {"optimizer": "sgd", "learning_rate": 100, "warmup_steps": 0,
                                          "schedule": "constant", "gradient_clip": 0, "steps": 200,
                                          "checkpoint_every": 1, "eval_every": 1000}})"),
                    fresh(dir, "run"));
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::NonFinite));
    QVERIFY2(summary.message.find("step " + std::to_string(summary.step + 1)) == 0, summary.message.c_str());
    QVERIFY2(summary.message.find("not finite") != std::string::npos, summary.message.c_str());
    // The last checkpoint is the last good step, and it loads.
    const auto latest = latestCheckpoint(fresh(dir, "run"));
    QVERIFY(latest.has_value());
    const OpenedRun opened = openRun(fresh(dir, "run"));
    QCOMPARE(opened.state.step, summary.step);
    for (const auto& p : opened.model->parameters())
        QVERIFY(torch::isfinite(p).all().item<bool>());
}

// A language model whose logits for one batch ([32, 512, 2^20] floats, 64 TiB)
// can be allocated nowhere: the step fails to allocate, and the trainer says
// what did not fit and what to change, and returns instead of throwing.
void TestTrainer::outOfMemoryIsAMessageNotACrash()
{
    const std::filesystem::path text = "/usr/share/common-licenses/GPL-3";
    if (!std::filesystem::exists(text))
        QSKIP("no licence text on this machine");
    QTemporaryDir dir;
    const RunDocument run = parseRunDocument(nlohmann::json{
        {"model", {{"vocab_size", 1 << 20}, {"max_len", 512}, {"d_model", 8}, {"layers", 1}, {"heads", 1},
                   {"ffn_dim", 8}, {"dropout", 0.0}, {"head", "language_model"}}},
        {"task", {{"kind", "language_model"}, {"path", text.string()}, {"tokenizer", "byte"}}},
        {"train", {{"steps", 2}, {"batch_size", 32}, {"eval_every", 2}, {"checkpoint_every", 2},
                   {"threads", 1}, {"device", "cpu"}}}}.dump());  // tst_cuda has the GPU's variant
    TrainerOptions insist;  // past the memory estimate, which refuses this run up front
    insist.force = true;
    Trainer trainer(run, fresh(dir, "oom"), insist);
    std::atomic<bool> stop{false};
    const TrainSummary summary = trainer.run(stop);
    QCOMPARE(static_cast<int>(summary.outcome), static_cast<int>(TrainOutcome::OutOfMemory));
    for (const char* part : {"out of memory on cpu in training step 1", "batch of 32 x 512 tokens",
                             "train.batch_size", "are kept"})
        QVERIFY2(summary.message.find(part) != std::string::npos, (part + std::string(": ") + summary.message).c_str());
    QCOMPARE(summary.step, std::int64_t{0});
    QVERIFY(std::filesystem::exists(fresh(dir, "oom") / "config.json"));  // the run stays
}

void TestTrainer::languageModelOnATextFile()
{
    const std::filesystem::path text = "/usr/share/common-licenses/GPL-3";
    if (!std::filesystem::exists(text))
        QSKIP("no licence text on this machine");
    QTemporaryDir dir;
    const RunDocument run = parseRunDocument(nlohmann::json{
        {"model", {{"vocab_size", 258}, {"max_len", 64}, {"d_model", 32}, {"layers", 2}, {"heads", 4}, {"ffn_dim", 64},
                   {"dropout", 0.0}, {"head", "language_model"}}},
        {"task", {{"kind", "language_model"}, {"path", text.string()}, {"tokenizer", "byte"}}},
        {"train", {{"steps", 30}, {"batch_size", 8}, {"learning_rate", 0.003}, {"warmup_steps", 5}, {"log_every", 5},
                   {"eval_every", 30}, {"eval_batches", 4}, {"checkpoint_every", 30}, {"threads", 1}}}}.dump());
    Trainer trainer(run, fresh(dir, "lm"));
    std::atomic<bool> stop{false};
    trainer.run(stop);
    const auto eval = metricLines(fresh(dir, "lm"), "eval");
    QCOMPARE(eval.size(), std::size_t{1});
    // Perplexity of bytes: below the 256 of a uniform guess after a little training.
    QVERIFY(eval[0]["perplexity"].get<double>() < 256.0);
    QCOMPARE(eval[0]["perplexity"].get<double>(), std::exp(eval[0]["loss"].get<double>()));

    OpenedRun opened = openRun(fresh(dir, "lm"));
    const ProbeResult probe = probeModel(*opened.model, opened.tokenizer, opened.labels, "the licence", 64);
    QCOMPARE(probe.tokens.size(), std::size_t{11});  // bytes, no CLS for a language model
    QCOMPARE(probe.attention.size(), std::size_t{2});
    QCOMPARE(probe.attention[0].size(), std::size_t{4});
    // Causal: the first token attends only to itself.
    QCOMPARE(probe.attention[0][0][0][0], 1.0f);
    QCOMPARE(probe.prediction.size(), std::size_t{258});
    double total = 0;
    for (const float p : probe.prediction)
        total += p;
    QVERIFY(std::abs(total - 1.0) < 1e-4);
}

void TestTrainer::translationIsLearnedAndScoredInBleu()
{
    QTemporaryDir dir;
    const std::filesystem::path pairs = writeShiftedLetters(dir, 2000);
    {
        Trainer trainer(tinyTranslationRun(pairs), fresh(dir, "run"));
        std::atomic<bool> stop{false};
        QCOMPARE(static_cast<int>(trainer.run(stop).outcome), static_cast<int>(TrainOutcome::Completed));
    }
    const auto eval = metricLines(fresh(dir, "run"), "eval");
    QCOMPARE(eval.size(), std::size_t{1});
    // Greedy translations of the first 60 validation pairs, scored as sacreBLEU scores.
    QCOMPARE(eval[0]["translated"].get<int>(), 60);
    const double bleu = eval[0]["bleu"].get<double>(), chrf = eval[0]["chrf"].get<double>();
    // 48 and 56 when this was written; an untrained model scores about 0 and 10.
    QVERIFY2(bleu > 30.0, qPrintable(QString("BLEU %1, chrF %2").arg(bleu).arg(chrf)));
    QVERIFY2(chrf > 40.0, qPrintable(QString("BLEU %1, chrF %2").arg(bleu).arg(chrf)));
    // Token accuracy counts the targets' tokens and their ends: most of them after training.
    QVERIFY(eval[0]["accuracy"].get<double>() > 0.8);
    QCOMPARE(eval[0]["perplexity"].get<double>(), std::exp(eval[0]["loss"].get<double>()));
    // The log (and the app's) says the scores with the loss.
    char scores[96];
    std::snprintf(scores, sizeof scores, ", BLEU %.2f, chrF %.2f (60 sentences translated)", bleu, chrf);
    const std::string log = readText(runlayout::logFile(fresh(dir, "run")));
    QVERIFY2(log.find("validation at step 300: loss ") != std::string::npos, log.c_str());
    QVERIFY2(log.find(scores) != std::string::npos, (log + "\nexpected: " + scores).c_str());

    // A probe shows the translation of a text the run was never shown beside the
    // encoder's attention over it: most of its letters shifted right.
    OpenedRun opened = openRun(fresh(dir, "run"));
    QVERIFY(opened.tokenizer.endId().has_value());
    const std::string text = "ace bd fg h", expected = "bdf ce gh i";
    const ProbeResult probe = probeModel(*opened.model, opened.tokenizer, opened.labels, text, 32);
    int right = 0;
    for (std::size_t i = 0; i < std::min(expected.size(), probe.translation.size()); ++i)
        right += probe.translation[i] == expected[i];
    QVERIFY2(right >= 8, probe.translation.c_str());
    QCOMPARE(probe.tokens.size(), text.size());  // bytes: no merges were learned
    QCOMPARE(probe.attention.size(), std::size_t{1});  // the encoder's one block
    QCOMPARE(probe.attention[0][0].size(), text.size());
    QCOMPARE(probe.prediction.size(), std::size_t(opened.document.model.vocabSize));
    // The decoder reads <s> and the translation, and each of its positions reads
    // the source through cross-attention: a distribution over the source's tokens
    // in every head, and, trained, a selective one (this one-block model finds its
    // letters through positions, not along the diagonal): each position's largest
    // weight, the mean over heads, is at least twice the 1/S of a uniform reading.
    QCOMPARE(probe.targetTokens.front(), std::string("<s>"));
    QCOMPARE(probe.targetTokens.size(), probe.translation.size() + 1);
    QCOMPARE(probe.crossAttention.size(), std::size_t{1});  // the decoder's one block
    QCOMPARE(probe.crossAttention[0].size(), std::size_t{4});
    for (std::size_t t = 0; t < probe.targetTokens.size(); ++t) {
        std::vector<float> mean(text.size(), 0.0f);
        for (const auto& head : probe.crossAttention[0]) {
            QCOMPARE(head.size(), probe.targetTokens.size());
            QCOMPARE(head[t].size(), text.size());
            float sum = 0.0f;
            for (std::size_t s = 0; s < text.size(); ++s)
                mean[s] += head[t][s] / 4.0f, sum += head[t][s];
            QVERIFY(std::abs(sum - 1.0f) < 1e-4f);
        }
        const float largest = *std::max_element(mean.begin(), mean.end());
        QVERIFY2(largest >= 2.0f / static_cast<float>(text.size()), qPrintable(QString("position %1: %2").arg(t).arg(largest)));
    }

    // The test split, scored whole outside training.
    TrainerOptions readOnly;
    readOnly.resume = true;
    readOnly.readOnly = true;
    Trainer evaluation(readRunDocument(fresh(dir, "run")), fresh(dir, "run"), readOnly);
    const EvaluationResult test = evaluation.evaluate(Split::Test);
    QVERIFY(test.examples > 60);
    QCOMPARE(test.translated, test.examples);
    QVERIFY(test.bleu > 30.0);

    // As a study member: its validation's BLEU, and the test split's by the paper's beam search.
    const std::map<std::string, double> measures = measureMember(fresh(dir, "run"), "cpu", 2, 1);
    QCOMPARE(measures.at("final_val_bleu"), bleu);
    QCOMPARE(measures.at("best_val_bleu"), bleu);  // one validation
    QVERIFY(measures.at("test_bleu") > 30.0);
    QVERIFY(measures.at("test_chrf") > 40.0);
}

void TestTrainer::translationRunWithTokenBatchesResumesExactly()
{
    // Batches of at most 40 tokens (a pair costs its longer side with </s>): their
    // sizes vary, and a resumed run still retraces the whole run.
    QTemporaryDir dir;
    const std::filesystem::path pairs = writeShiftedLetters(dir, 300);
    const nlohmann::json overrides = {
        {"model", {{"experts", 2}, {"top_k", 1}}},
        {"train", {{"steps", 12}, {"batch_tokens", 40}, {"log_every", 1}, {"eval_every", 6}, {"checkpoint_every", 6},
                   {"bleu_sentences", 4}}}};
    resumedRunRetracesTheWholeRun([&] { return tinyTranslationRun(pairs, overrides); }, dir, 6);
    const auto eval = metricLines(fresh(dir, "whole"), "eval");
    QCOMPARE(eval.size(), std::size_t{2});
    QCOMPARE(eval[0]["translated"].get<int>(), 4);
}

// The tokens a masked language model's batch hides are drawn from (seed, step):
// interrupted and resumed, it hides the same ones and logs the same losses.
void TestTrainer::maskedLanguageModelResumesExactly()
{
    const std::filesystem::path text = "/usr/share/common-licenses/GPL-3";
    if (!std::filesystem::exists(text))
        QSKIP("no licence text on this machine");
    QTemporaryDir dir;
    const std::string document = nlohmann::json{
        {"model", {{"vocab_size", 259}, {"max_len", 32}, {"d_model", 16}, {"layers", 1}, {"heads", 2}, {"ffn_dim", 32},
                   {"dropout", 0.1}, {"head", "masked_lm"}}},
        {"task", {{"kind", "masked_lm"}, {"path", text.string()}, {"tokenizer", "byte"}}},
        {"train", {{"steps", 12}, {"batch_size", 4}, {"log_every", 1}, {"eval_every", 6}, {"eval_batches", 2},
                   {"checkpoint_every", 6}, {"threads", 1}, {"device", "cpu"}}}}.dump();
    resumedRunRetracesTheWholeRun([&] { return parseRunDocument(document); }, dir, 6);
    const auto whole = metricLines(fresh(dir, "whole"), "eval"), parts = metricLines(fresh(dir, "parts"), "eval");
    QCOMPARE(parts.size(), whole.size());
    QCOMPARE(parts.back()["accuracy"].get<double>(), whole.back()["accuracy"].get<double>());
}

void TestTrainer::exportedWeightsLoadInPython()
{
    QTemporaryDir dir;
    std::atomic<bool> stop{false};
    TrainerOptions few;
    few.steps = 2;
    Trainer(tinyRun(), fresh(dir, "run"), few).run(stop);
    const OpenedRun opened = openRun(fresh(dir, "run"));
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& item : opened.model->named_parameters())
        dict.insert(item.key(), item.value().detach());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    const std::filesystem::path file = fresh(dir, "model.pt");
    std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    // Python reads it with torch.load and finds the same keys and sums.
    const double sum = opened.model->named_parameters()["attention.0.qkv.weight"].sum().item<double>();
    const std::string command = std::string(WIDELAB_REFERENCE_PYTHON) + " -c \"import torch; d = torch.load('"
                                + file.string() + "', weights_only=False); print(len(d), float(d['attention.0.qkv.weight'].sum()))\"";
    FILE* pipe = popen(command.c_str(), "r");
    QVERIFY(pipe);
    int count = 0;
    double pythonSum = 0;
    QCOMPARE(fscanf(pipe, "%d %lf", &count, &pythonSum), 2);
    QCOMPARE(pclose(pipe), 0);
    QCOMPARE(count, static_cast<int>(opened.model->parameters().size()));
    QVERIFY(std::abs(pythonSum - sum) < 1e-4 * std::max(1.0, std::abs(sum)));
}

QTEST_GUILESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
