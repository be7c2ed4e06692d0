// defines: RunRecord, loadRunRecord: one run's curves and insights as
// the window keeps them, filled through one RunRecord::add from the records of a
// run trained here, followed, or read back from RUN_DIR/metrics.jsonl
#pragma once

#include "curves/CurvePoint.h"
#include "insights/InsightHistory.h"
#include "run/LineTail.h"
#include "vocab/MetricsCodec.h"

#include <QHash>
#include <QString>
#include <QStringList>
#include <QVector>

#include <map>
#include <memory>
#include <string>

namespace widelab {

// Curves by their names in metrics.jsonl (vocab/Curves.h), and every other
// number a line holds by its tag (vocab/MetricScalars.h: the tags hold a '/').
using CurveBatch = QHash<QString, QVector<CurvePoint>>;

class RunRecord {
public:
    QString id;          // unique in the window
    QString label;       // legend text
    QString directory;
    double parameters = 0;  // stored parameters, for comparisons against size
    CurveBatch curves;   // every point, in step order
    WorldPace world;     // the last train line's processes (a distributed run)
    // What the interpretability views draw: model states and probe captures.
    std::shared_ptr<InsightHistory> insights = std::make_shared<InsightHistory>();

    // One record of the run, the one way in for a run trained here, a run
    // followed and a run read from disk: a train record's curves (those it
    // holds: a curve left out of a line gets no point) and model state, a
    // validation's loss and accuracy, a probe's capture, a validation's
    // insights; other records are passed over. Returns the points it appended,
    // for the views to draw.
    CurveBatch add(const MetricsRecord& record);
    // A line of metrics.jsonl, `lineNumber` its place in the file, decoded by the
    // core's reader (decodeMetricsLine) and added. A line that does not decode,
    // or a train line whose step is before an earlier one's (a resume rewrites
    // the file instead), is skipped: nothing changes and *warning says so in one
    // sentence naming the file and the line.
    CurveBatch addMetricsLine(const QByteArray& line, qint64 lineNumber = 0, QString* warning = nullptr);

    // Drops every point, state and capture, keeping id, label, directory and
    // parameters: the record is then rebuilt from a replaced or trimmed file.
    void restart();

    double lastStep() const { return m_lastStep; }
    double lastSeconds() const { return m_lastSeconds; }

private:
    CurveBatch addFixed(const MetricsRecord& record);  // the fixed charts' curves, insights
    CurveBatch addTrainingValues(double step, double seconds, const std::map<std::string, double>& values);
    CurveBatch addEvaluationValues(const EvaluationResult& result);

    double m_lastStep = 0;
    qint64 m_lastTrainStep = -1;  // of the last train line or snapshot: train lines may not go back from it
    double m_lastSeconds = 0;
    double m_secondsOffset = 0;  // a resumed run's clock restarts at 0: the time before it
    double m_sessionSeconds = 0; // the last wall time of the current session
};

// Reads RUN_DIR/metrics.jsonl (a missing file gives an empty record; a damaged
// line is skipped, with one line in `warnings` naming it and saying why; a last
// line still being written is left for later). Returns false with `error` set
// when the directory is not a run. `tail`, when given, ends where the reading
// stopped, for a RunFollower to go on from there.
bool loadRunRecord(const QString& directory, RunRecord& record, QString* error, LineTail* tail = nullptr,
                   QStringList* warnings = nullptr);

}  // namespace widelab
