#include "RunRecord.h"

#include "InsightConvert.h"

#include "train/Snapshot.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>

namespace widelab {
namespace {

const char* const kTrainingMetrics[] = {"loss", "accuracy", "balance_loss", "learning_rate", "gradient_norm",
                                        "tokens_per_second"};

}  // namespace

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
    const CurvePoint lossPoint{step, m_lastSeconds, loss}, accuracyPoint{step, m_lastSeconds, accuracy};
    curves[QStringLiteral("validation_loss")].append(lossPoint);
    curves[QStringLiteral("validation_accuracy")].append(accuracyPoint);
    added[QStringLiteral("validation_loss")].append(lossPoint);
    added[QStringLiteral("validation_accuracy")].append(accuracyPoint);
    return added;
}

void RunRecord::restart()
{
    curves.clear();
    insights->clear();
    m_lastStep = 0;
    m_lastSeconds = 0;
    m_secondsOffset = 0;
    m_sessionSeconds = 0;
}

CurveBatch RunRecord::addTraining(const TrainingSnapshot& s)
{
    insights->addState(toModelState(s));
    return addTrainingValues(static_cast<double>(s.step), s.wallSeconds,
                             {{QStringLiteral("loss"), s.loss},
                              {QStringLiteral("accuracy"), s.accuracy},
                              {QStringLiteral("balance_loss"), s.balanceLoss},
                              {QStringLiteral("learning_rate"), s.learningRate},
                              {QStringLiteral("gradient_norm"), s.gradientNorm},
                              {QStringLiteral("tokens_per_second"), s.tokensPerSecond}});
}

CurveBatch RunRecord::addEvaluation(const EvaluationResult& r)
{
    if (r.split != "validation")
        return {};
    return addEvaluationValues(static_cast<double>(r.step), r.loss, r.accuracy);
}

void RunRecord::addProbe(const ProbeResult& probe) { insights->addCapture(toProbeCapture(probe)); }

CurveBatch RunRecord::addMetricsLine(const QByteArray& line)
{
    const QJsonObject json = QJsonDocument::fromJson(line).object();
    const QString type = json.value(QStringLiteral("type")).toString();
    const double step = json.value(QStringLiteral("step")).toDouble();
    if (type == QLatin1String("train")) {
        QHash<QString, double> values;
        for (const char* name : kTrainingMetrics)
            values.insert(QLatin1String(name), json.value(QLatin1String(name)).toDouble());
        insights->addState(modelStateFromJson(json));
        return addTrainingValues(step, json.value(QStringLiteral("wall_seconds")).toDouble(), values);
    }
    if (type == QLatin1String("probe")) {
        insights->addCapture(probeCaptureFromJson(json));
        return {};
    }
    if (type == QLatin1String("eval") && json.value(QStringLiteral("split")).toString() == QLatin1String("validation"))
        return addEvaluationValues(step, json.value(QStringLiteral("loss")).toDouble(),
                                   json.value(QStringLiteral("accuracy")).toDouble());
    return {};
}

bool loadRunRecord(const QString& directory, RunRecord& record, QString* error, LineTail* tail)
{
    const QDir dir(directory);
    if (!QFileInfo::exists(dir.filePath(QStringLiteral("config.json")))) {
        if (error)
            *error = QObject::tr("%1 is not a WideLab run (it has no config.json).").arg(QDir::toNativeSeparators(directory));
        return false;
    }
    record.directory = dir.absolutePath();
    LineTail metrics(dir.filePath(QStringLiteral("metrics.jsonl")).toStdString());
    for (LineTail::Update update = metrics.poll();; update = metrics.poll()) {
        for (const std::string& line : update.lines)
            record.addMetricsLine(QByteArray::fromStdString(line));
        if (!update.more)
            break;  // a missing file too: a run that has not logged yet
    }
    if (tail)
        *tail = std::move(metrics);
    return true;
}

}  // namespace widelab
