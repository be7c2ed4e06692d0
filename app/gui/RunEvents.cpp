#include "RunEvents.h"

#include "vocab/Curves.h"

namespace widelab {

MetricsRecord recordOf(const TrainingSnapshot& snapshot)
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Train;
    record.step = snapshot.step;
    record.train = snapshot;
    for (const TrainingCurve& curve : kTrainingCurves)
        record.values[curve.name] = snapshot.*curve.value;
    return record;
}

MetricsRecord recordOf(const EvaluationResult& result)
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Eval;
    record.step = result.step;
    record.eval = result;
    return record;
}

MetricsRecord recordOf(const ProbeResult& probe)
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Probe;
    record.step = probe.step;
    record.probe = probe;
    return record;
}

MetricsRecord recordOf(const ValidationInsights& insights)
{
    MetricsRecord record;
    record.type = MetricsRecord::Type::Insights;
    record.step = insights.step;
    record.insights = insights;
    return record;
}

}  // namespace widelab
