#include "RunContinuation.h"

#include "run/ResumeRule.h"

#include <QJsonDocument>

namespace widelab {

RunContinuation runContinuation(const QString& directory, const QJsonObject& document)
{
    RunContinuation result;
    if (directory.isEmpty() || document.isEmpty())
        return result;
    try {
        const std::string text = QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString();
        const RunDocument given = parseRunDocument(text, "the configuration", /*requireDataFiles=*/false);
        const ResumeDecision decision = decideResume(directory.toStdString(), given);
        for (const ConfigIssue& issue : decision.differences)
            result.differences.append(QString::fromStdString(issue.text()));
        if (decision.kind != ResumeKind::Continue)
            return result;
        result.continues = true;
        result.step = decision.checkpointStep;
        if (const auto change = scheduleChange(given.train, decision.checkpointStep, decision.saved.train.steps)) {
            result.scheduleChanges = true;
            result.savedSteps = change->savedSteps;
            result.steps = change->steps;
            result.savedRate = change->savedRate;
            result.rate = change->rate;
        }
    } catch (const std::exception& error) {
        result.problem = QString::fromStdString(error.what());
    }
    return result;
}

}  // namespace widelab
