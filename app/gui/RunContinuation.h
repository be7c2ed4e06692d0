// defines: RunContinuation, runContinuation: whether Start continues the run in a
// directory, by the core's one rule (run/ResumeRule.h), for the window's Start/Continue
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace widelab {

struct RunContinuation {
    bool continues = false;   // Start continues the run; otherwise it starts another
    qint64 step = -1;         // the step the run continues from (its newest checkpoint)
    QStringList differences;  // the keys that make the document another run ("key: reason")
    QString problem;          // the document or the run's config.json could not be read
    // Continuing moves a cosine schedule: the rate at `step` before and after.
    bool scheduleChanges = false;
    qint64 savedSteps = 0, steps = 0;
    double savedRate = 0.0, rate = 0.0;
};

// `document` is a complete run document (as ConfigAssessment gives it). Never throws:
// a document or directory that cannot be read is no continuation, `problem` says why.
RunContinuation runContinuation(const QString& directory, const QJsonObject& document);

}  // namespace widelab
