#include "RunRecord.h"

#include "InsightConvert.h"
#include "MetricsLine.h"
#include "RunFiles.h"

#include "vocab/Curves.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>

#include <algorithm>

namespace widelab {

CurveBatch RunRecord::addTrainingValues(double step, double seconds, const QHash<QString, double>& values)
{
    if (seconds < m_sessionSeconds)  // a new session of the same run: its clock starts again
        m_secondsOffset = m_lastSeconds;
    m_sessionSeconds = seconds;
    m_lastSeconds = m_secondsOffset + seconds;
    m_lastStep = step;
    CurveBatch added;
    for (auto it = values.begin(); it != values.end(); ++it) {
        const CurvePoint point{step, m_lastSeconds, it.value()};
        curves[it.key()].append(point);
        added[it.key()].append(point);
    }
    return added;
}

CurveBatch RunRecord::addEvaluationValues(double step, double loss, double accuracy)
{
    CurveBatch added;
    // Evaluations happen right after a training snapshot: they share its time.
    const auto add = [&](const char* name, double value) {
        const CurvePoint point{step, m_lastSeconds, value};
        curves[QLatin1String(name)].append(point);
        added[QLatin1String(name)].append(point);
    };
    add(curve::kValidationLoss, loss);
    add(curve::kValidationAccuracy, accuracy);
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

CurveBatch RunRecord::addTraining(const TrainingSnapshot& s)
{
    insights->addState(toModelState(s));
    world = s.world;
    m_lastTrainStep = std::max(m_lastTrainStep, static_cast<qint64>(s.step));
    QHash<QString, double> values;
    for (const TrainingCurve& curve : kTrainingCurves)
        values.insert(QLatin1String(curve.name), s.*curve.value);
    return addTrainingValues(static_cast<double>(s.step), s.wallSeconds, values);
}

CurveBatch RunRecord::addEvaluation(const EvaluationResult& r)
{
    if (r.split != "validation")
        return {};
    return addEvaluationValues(static_cast<double>(r.step), r.loss, r.accuracy);
}

void RunRecord::addProbe(const ProbeResult& probe) { insights->addCapture(toProbeCapture(probe)); }

void RunRecord::addValidationInsights(const ValidationInsights& v) { insights->addValidationInsight(toValidationInsight(v)); }

CurveBatch RunRecord::addMetricsLine(const QByteArray& bytes, qint64 lineNumber, QString* warning)
{
    QString reason;
    std::optional<MetricsLine> line = decodeMetricsLine(bytes, &reason);
    // A step before an earlier train line's would draw the curve back over
    // itself and move the shown step back: the line is damaged, or from another run.
    if (line && line->type == MetricsLine::Type::Train && line->step < m_lastTrainStep) {
        reason = QObject::tr("its step %1 is before step %2 of an earlier line").arg(line->step).arg(m_lastTrainStep);
        line.reset();
    }
    if (!line) {
        if (warning)
            *warning = QObject::tr("%1, line %2: skipped, %3")
                           .arg(QDir::toNativeSeparators(runFile(directory, runlayout::kMetrics)))
                           .arg(lineNumber)
                           .arg(reason);
        return {};
    }
    switch (line->type) {
    case MetricsLine::Type::Train:
        m_lastTrainStep = line->step;
        world = line->world;
        insights->addState(std::move(line->state));
        return addTrainingValues(static_cast<double>(line->step), line->wallSeconds, line->values);
    case MetricsLine::Type::Probe:
        insights->addCapture(std::move(line->capture));
        return {};
    case MetricsLine::Type::Insights:
        insights->addValidationInsight(std::move(line->insight));
        return {};
    case MetricsLine::Type::Eval:
        if (line->split == QLatin1String("validation"))
            return addEvaluationValues(static_cast<double>(line->step), line->loss, line->accuracy);
        return {};
    case MetricsLine::Type::Other:
        break;
    }
    return {};
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
