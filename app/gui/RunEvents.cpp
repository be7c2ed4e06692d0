#include "RunEvents.h"

#include "vocab/Curves.h"

namespace widelab {
namespace {

// A record of `type` holding `event` in its `part`.
template <typename Event>
MetricsRecord recordHolding(MetricsRecord::Type type, Event MetricsRecord::*part, const Event& event)
{
    MetricsRecord record;
    record.type = type;
    record.step = event.step;
    record.*part = event;
    return record;
}

}  // namespace

MetricsRecord recordOf(const TrainingSnapshot& snapshot)
{
    MetricsRecord record = recordHolding(MetricsRecord::Type::Train, &MetricsRecord::train, snapshot);
    for (const TrainingCurve& curve : kTrainingCurves)
        record.values[curve.name] = snapshot.*curve.value;
    return record;
}

MetricsRecord recordOf(const EvaluationResult& result)
{
    return recordHolding(MetricsRecord::Type::Eval, &MetricsRecord::eval, result);
}

MetricsRecord recordOf(const ProbeResult& probe)
{
    return recordHolding(MetricsRecord::Type::Probe, &MetricsRecord::probe, probe);
}

MetricsRecord recordOf(const ValidationInsights& insights)
{
    return recordHolding(MetricsRecord::Type::Insights, &MetricsRecord::insights, insights);
}

}  // namespace widelab
