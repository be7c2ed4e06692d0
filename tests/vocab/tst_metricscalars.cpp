// Tests vocab/MetricScalars: every number of a train or eval line under its tag,
// blocks, experts, choices and paths counted from 1, as TensorBoard and the app's
// chart chooser both name them; hand-worked from test::snapshotWithInsights.
#include "SampleSnapshot.h"
#include "vocab/MetricScalars.h"

#include <QtTest>

using namespace widelab;

namespace {

QStringList tagsOf(const std::vector<MetricScalar>& scalars)
{
    QStringList tags;
    for (const MetricScalar& s : scalars)
        tags << QString::fromStdString(s.tag);
    return tags;
}

double valueOf(const std::vector<MetricScalar>& scalars, const std::string& tag)
{
    for (const MetricScalar& s : scalars)
        if (s.tag == tag)
            return s.value;
    return -999;
}

}  // namespace

class TestMetricScalars : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aTrainLineNamesEveryNumberByBlockExpertAndPath();
    void anEvalLineNamesItsSplit();
    void otherLinesHoldNone();
    void tagPartsCarryNoSlash();
};

void TestMetricScalars::aTrainLineNamesEveryNumberByBlockExpertAndPath()
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Train;
    record.step = 40;
    record.train = test::snapshotWithInsights(40);
    record.train.memoryKind = "cpu";
    record.train.memoryBytes = 1000;
    record.values = {{"loss", 2.0}};  // the one curve the line holds
    const std::vector<MetricScalar> scalars = metricScalars(record);
    const QStringList expected{
        "train/loss", "train/task_loss", "time/wall_seconds", "time/step_seconds", "time/data_seconds",
        "time/measurement_seconds",
        "memory/cpu/bytes", "memory/cpu/reserved_bytes", "memory/cpu/peak_bytes", "memory/cpu/peak_reserved_bytes",
        // The routing block is block 1 counted from 0: block_2. No consistency: it is the first routing block (-1).
        "routing/block_2/router_entropy", "routing/block_2/unused_experts", "routing/block_2/max_violation",
        "routing/block_2/effective_experts", "routing/block_2/z_loss", "routing/block_2/dead_fraction",
        "routing/block_2/dropped_percent/choice_1", "routing/block_2/dropped_percent/choice_2",
        "experts/block_2/load_vs_fair/expert_1", "experts/block_2/load_vs_fair/expert_2",
        "experts/block_2/load_vs_fair/expert_3",
        "divergence/ffn/gamma_all_pairs", "divergence/ffn/beta_all_pairs", "divergence/ffn/gamma_elementwise",
        "divergence/ffn/beta_elementwise", "divergence/attention/gamma_all_pairs", "divergence/attention/beta_all_pairs",
        "divergence/attention/gamma_elementwise", "divergence/attention/beta_elementwise",
        // Two paths and two extra features of block 0's FFN.
        "paths/block_1/ffn/alpha/path_1", "paths/block_1/ffn/alpha/path_2", "paths/block_1/ffn/alpha/extra_1",
        "paths/block_1/ffn/alpha/extra_2", "paths/block_1/ffn/beta", "paths/block_1/ffn/diversity"};
    QCOMPARE(tagsOf(scalars), expected);
    QCOMPARE(valueOf(scalars, "train/loss"), 2.0);
    QCOMPARE(valueOf(scalars, "memory/cpu/bytes"), 1000.0);
    QCOMPARE(valueOf(scalars, "routing/block_2/unused_experts"), 1.0);
    QCOMPARE(valueOf(scalars, "routing/block_2/dropped_percent/choice_2"), 40.0);
    QCOMPARE(valueOf(scalars, "experts/block_2/load_vs_fair/expert_3"), 1.75);
    QCOMPARE(valueOf(scalars, "divergence/attention/beta_elementwise"), 4.5);
    QCOMPARE(valueOf(scalars, "paths/block_1/ffn/alpha/extra_2"), 0.0625);
    QCOMPARE(valueOf(scalars, "paths/block_1/ffn/diversity"), 0.375);

    // From the second routing block on, the consistency with the one before.
    record.train.routing.front().consistency = 0.5;
    QCOMPARE(valueOf(metricScalars(record), "routing/block_2/consistency"), 0.5);
    // No LayerNorm rows: no divergences (they would all be 0).
    record.train.ffnGamma.clear();
    QVERIFY(!tagsOf(metricScalars(record)).contains(QStringLiteral("divergence/ffn/gamma_all_pairs")));
}

void TestMetricScalars::anEvalLineNamesItsSplit()
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Eval;
    record.eval = EvaluationResult{100, "validation", 1.5, 0.5, 4.25, 64, 0.0, 0.0, 0};
    QCOMPARE(tagsOf(metricScalars(record)), (QStringList{"validation/loss", "validation/accuracy", "validation/perplexity",
                                                         "validation/examples"}));
    record.eval = EvaluationResult{100, "test", 2.0, 0.25, 0.0, 10, 9.5, 30.0, 10};  // a translation's test split
    const std::vector<MetricScalar> scalars = metricScalars(record);
    QCOMPARE(tagsOf(scalars),
             (QStringList{"test/loss", "test/accuracy", "test/bleu", "test/chrf", "test/examples"}));
    QCOMPARE(valueOf(scalars, "test/bleu"), 9.5);
}

void TestMetricScalars::otherLinesHoldNone()
{
    MetricsRecord probe;
    probe.type = MetricsRecord::Type::Probe;
    probe.probe = test::imageProbe(10);
    QVERIFY(metricScalars(probe).empty());
    MetricsRecord other;
    QVERIFY(metricScalars(other).empty());
}

void TestMetricScalars::tagPartsCarryNoSlash()
{
    QCOMPARE(metricTagPart("cuda:0/x y"), std::string("cuda:0_x_y"));
    QCOMPARE(metricTagPart(""), std::string("_"));
    QCOMPARE(numberedTag("block_", 0), std::string("block_1"));
}

QTEST_GUILESS_MAIN(TestMetricScalars)
#include "tst_metricscalars.moc"
