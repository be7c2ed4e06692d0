#include "RunRecord.h"

#include "RunFiles.h"

#include "vocab/Curves.h"
#include "vocab/MetricScalars.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>

#include <algorithm>
#include <array>
#include <string_view>

namespace widelab {
namespace {

// The scalars the fixed charts draw under their curve names already: a train
// line's curves ("train/<curve>" for curve::kLoss ...) and a validation's
// ("validation/<x>" for curve::kValidationLoss, "validation_<x>", ...). Asked of
// every tag of every line read: no allocation.
bool drawnAsCurve(std::string_view tag)
{
    constexpr std::string_view train = "train/";
    if (tag.starts_with(train)) {
        tag.remove_prefix(train.size());
        return std::any_of(kTrainingCurves.begin(), kTrainingCurves.end(),
                           [&](const TrainingCurve& c) { return tag == c.name; });
    }
    constexpr std::string_view validationTag = "validation/";
    constexpr std::string_view validationCurve = "validation_";
    if (!tag.starts_with(validationTag))
        return false;
    tag.remove_prefix(validationTag.size());
    constexpr std::array<std::string_view, 4> validationCurves{curve::kValidationLoss, curve::kValidationAccuracy,
                                                               curve::kValidationBleu, curve::kValidationChrf};
    return std::any_of(validationCurves.begin(), validationCurves.end(), [&](std::string_view c) {
        return c.starts_with(validationCurve) && c.substr(validationCurve.size()) == tag;
    });
}

}  // namespace


CurveBatch RunRecord::addTrainingValues(double step, double seconds, const std::map<std::string, double>& values)
{
    if (seconds < m_sessionSeconds)  // a new session of the same run: its clock starts again
        m_secondsOffset = m_lastSeconds;
    m_sessionSeconds = seconds;
    m_lastSeconds = m_secondsOffset + seconds;
    m_lastStep = step;
    CurveBatch added;
    for (const auto& [name, value] : values) {
        const CurvePoint point{step, m_lastSeconds, value};
        const QString curve = QString::fromStdString(name);
        curves[curve].append(point);
        added[curve].append(point);
    }
    return added;
}

CurveBatch RunRecord::addEvaluationValues(const EvaluationResult& result)
{
    const auto step = static_cast<double>(result.step);
    CurveBatch added;
    // Evaluations happen right after a training snapshot: they share its time.
    const auto append = [&](const char* name, double value) {
        const CurvePoint point{step, m_lastSeconds, value};
        curves[QLatin1String(name)].append(point);
        added[QLatin1String(name)].append(point);
    };
    append(curve::kValidationLoss, result.loss);
    append(curve::kValidationAccuracy, result.accuracy);
    if (result.translated > 0) {  // a translation run's translations, scored
        append(curve::kValidationBleu, result.bleu);
        append(curve::kValidationChrf, result.chrf);
    }
    return added;
}

void RunRecord::restart()
{
    curves.clear();
    world = WorldPace{};
    insights->clear();
    m_lastStep = 0;
    m_lastSeconds = 0;
    m_secondsOffset = 0;
    m_sessionSeconds = 0;
    m_lastTrainStep = -1;
}

CurveBatch RunRecord::add(const MetricsRecord& record)
{
    CurveBatch added = addFixed(record);
    // Every other number of the line, by its tag, for the charts a user adds.
    if (record.type == MetricsRecord::Type::Train || record.type == MetricsRecord::Type::Eval) {
        for (const MetricScalar& scalar : metricScalars(record)) {
            if (drawnAsCurve(scalar.tag))
                continue;
            const CurvePoint point{static_cast<double>(record.step), m_lastSeconds, scalar.value};
            const QString tag = QString::fromStdString(scalar.tag);
            curves[tag].append(point);
            added[tag].append(point);
        }
    }
    return added;
}

CurveBatch RunRecord::addFixed(const MetricsRecord& record)
{
    switch (record.type) {
    case MetricsRecord::Type::Train:
        m_lastTrainStep = std::max(m_lastTrainStep, static_cast<qint64>(record.step));
        world = record.train.world;
        insights->addState(record.train);
        return addTrainingValues(static_cast<double>(record.step), record.train.wallSeconds, record.values);
    case MetricsRecord::Type::Eval:
        if (record.eval.split == "validation")
            return addEvaluationValues(record.eval);
        return {};
    case MetricsRecord::Type::Probe:
        insights->addCapture(record.probe);  // as the run reports it: the views read it (InsightHistory.h)
        return {};
    case MetricsRecord::Type::Insights:
        insights->addValidationInsight(record.insights);
        return {};
    case MetricsRecord::Type::Other:
        break;
    }
    return {};
}

CurveBatch RunRecord::addMetricsLine(const QByteArray& bytes, qint64 lineNumber, QString* warning)
{
    std::string why;
    std::optional<MetricsRecord> record =
        decodeMetricsLine(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())), &why);
    QString reason = QString::fromStdString(why);
    // A step before an earlier train line's would draw the curve back over
    // itself and move the shown step back: the line is damaged, or from another run.
    if (record && record->type == MetricsRecord::Type::Train && record->step < m_lastTrainStep) {
        reason = QObject::tr("its step %1 is before step %2 of an earlier line").arg(record->step).arg(m_lastTrainStep);
        record.reset();
    }
    if (!record) {
        if (warning)
            *warning = QObject::tr("%1, line %2: skipped, %3")
                           .arg(QDir::toNativeSeparators(runFile(directory, runlayout::kMetrics)))
                           .arg(lineNumber)
                           .arg(reason);
        return {};
    }
    return add(*record);
}

bool loadRunRecord(const QString& directory, RunRecord& record, QString* error, LineTail* tail, QStringList* warnings)
{
    const QDir dir(directory);
    if (!QFileInfo::exists(runFile(dir.path(), runlayout::kConfig))) {
        if (error)
            *error = QObject::tr("%1 is not a WideLab run (it has no config.json).").arg(QDir::toNativeSeparators(directory));
        return false;
    }
    record.directory = dir.absolutePath();
    LineTail metrics(runFile(dir.path(), runlayout::kMetrics).toStdString());
    for (LineTail::Update update = metrics.poll();; update = metrics.poll()) {
        for (std::size_t i = 0; i < update.lines.size(); ++i) {
            QString warning;
            record.addMetricsLine(QByteArray::fromStdString(update.lines[i]),
                                  static_cast<qint64>(update.lineNumbers[i]), &warning);
            if (!warning.isEmpty() && warnings)
                warnings->append(warning);
        }
        if (!update.more)
            break;  // a missing file too: a run that has not logged yet
    }
    if (tail)
        *tail = std::move(metrics);
    return true;
}

}  // namespace widelab
