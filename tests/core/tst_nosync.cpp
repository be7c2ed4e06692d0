// Tests that a training step of every family makes the host wait for nothing:
// forward, loss, backward, clipping, the non-finite watch and the optimiser's
// step dispatch no operator that reads a value back or sizes its result by the
// data (runtime/OperatorCount.h: synchronisesWithTheDevice), counted on the CPU
// through the operator counter `widelab-cli bench` reports them with. On a GPU
// each would stall the queue of kernels until the device caught up.
#include "TestSupport.h"
#include "config/Presets.h"
#include "model/WideTransformer.h"
#include "runtime/OperatorCount.h"
#include "train/GradientHealth.h"
#include "train/Optimizers.h"
#include "train/RunConfig.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace widelab;

namespace {

// One step on random data, as the trainer takes it; padded: the last quarter
// of every sequence is padding (a mask), as a batch of texts of unequal length.
OperatorTally countStep(const RunDocument& run, bool padded)
{
    torch::manual_seed(3);
    const ModelConfig& c = run.model;
    WideTransformer model(c);
    model->train();
    const std::unique_ptr<torch::optim::Optimizer> optimizer = makeOptimizer(run.train, *model);
    const std::vector<torch::Tensor> parameters = model->parameters();
    std::vector<std::string> names;
    for (const auto& named : model->named_parameters())
        names.push_back(named.key());
    NonFiniteWatch watch(names);
    const std::int64_t B = 2, T = std::min<std::int64_t>(16, c.maxLen);
    const torch::Tensor input = c.imageInput() ? torch::randn({B, c.channels, c.imageSize, c.imageSize})
                                               : torch::randint(c.vocabSize, {B, T}, torch::kLong);
    const torch::Tensor mask = padded ? torch::arange(T).lt(T - T / 4).view({1, T}).expand({B, T}).contiguous()
                                      : torch::Tensor();
    const torch::Tensor targets = c.predictsTokens() ? torch::randint(c.vocabSize, {B, T}, torch::kLong)
                                                     : torch::randint(c.numClasses, {B}, torch::kLong);
    const TargetInput target = c.isTranslation() ? TargetInput{input, mask} : TargetInput{};
    // What a model with experts routes, found on the host before the step as the trainer finds it.
    const torch::Tensor routed = model->routedPositions(mask);
    std::int64_t step = 0;
    auto trainStep = [&] {
        clearGradients(parameters);
        const ModelOutput output = model->forward(input, mask, target, routed);
        const torch::Tensor task = taskLoss(c, output.logits, targets, c.predictsTokens() ? mask : torch::Tensor());
        const torch::Tensor loss = trainingLoss(c, task, output);
        loss.backward();
        const GradientNorms norms = clipGradients(parameters, run.train.gradientClip);
        watch.observe(++step, loss, norms);
        optimizer->step();
    };
    trainStep();  // the optimiser's state is made on its first step
    const OperatorCounter counter;
    trainStep();
    return counter.tally();
}

QString named(const std::map<std::string, std::int64_t>& counts)
{
    QStringList parts;
    for (const auto& [name, count] : counts)
        parts << QStringLiteral("%1 x%2").arg(QString::fromStdString(name)).arg(count);
    return parts.join(QStringLiteral(", "));
}

}  // namespace

class TestNoSync : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void aTrainingStepWaitsForNothing_data();
    void aTrainingStepWaitsForNothing();

private:
    QTemporaryDir m_dir;
};

void TestNoSync::initTestCase()
{
    // The presets that read files name them relative to where they are read:
    // a few lines of each here, for their documents to load (no data is read).
    QVERIFY(m_dir.isValid());
    QVERIFY(QDir::setCurrent(m_dir.path()));
    QFile text(QStringLiteral("bible.txt")), pairs(QStringLiteral("web-sparv.tsv"));
    QVERIFY(text.open(QIODevice::WriteOnly) && pairs.open(QIODevice::WriteOnly));
    text.write("In the beginning God created the heavens and the earth.\n");
    pairs.write("In the beginning.\tEn el principio.\n");
}

void TestNoSync::aTrainingStepWaitsForNothing_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<bool>("padded");
    // Every family: deep and wide dense, WideNet and ViT-MoE style experts,
    // multi-path, translation, a masked language model, images, and the
    // attention mechanisms whose patterns are built per step.
    for (const char* preset : {"transformer-6x8", "transformer-1x48", "widenet", "vit-moe", "multipath-3x4-features",
                               "translation-bible", "bible-mlm-bytes", "attention-bigbird-6x8", "attention-sparse-6x8",
                               "attention-sinkhorn-6x8", "attention-performer-6x8", "attention-linformer-6x8",
                               "attention-longformer-6x8", "attention-local-6x8", "attention-synthesizer-6x8",
                               "attention-linear-6x8", "attention-mixed-6x8", "vit-widenet", "vit-moe-image", "vit-6x8"})
        for (const bool padded : {false, true})
            QTest::newRow(qPrintable(QStringLiteral("%1%2").arg(preset, padded ? " padded" : ""))) << preset << padded;
}

void TestNoSync::aTrainingStepWaitsForNothing()
{
    QFETCH(QString, preset);
    QFETCH(bool, padded);
    OperatorTally tally;
    try {
        const RunDocument run = loadRunDocument(resolveConfigPath(preset.toStdString()));
        if (padded && run.model.imageInput())
            QSKIP("an image model has no padding");
        tally = countStep(run, padded);
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
    QVERIFY(tally.operators > 100);  // the step was counted
    QVERIFY2(tally.synchronisingInStep().empty(), qPrintable(named(tally.synchronisingInStep())));
}

QTEST_GUILESS_MAIN(TestNoSync)
#include "tst_nosync.moc"
