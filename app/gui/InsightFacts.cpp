// Torch first: Qt's `slots` macro would break its headers.
#include "model/attention/MechanismSpec.h"
#include "train/RunConfig.h"

#include "InsightFacts.h"

#include <QJsonDocument>

#include <exception>

namespace widelab {

void describeInsights(InsightHistory& history, const QJsonObject& document)
{
    const QJsonObject model = document.value(QStringLiteral("model")).toObject();
    history.setImageInput(model.value(QStringLiteral("input")).toString() == QLatin1String("image"));
    // What each head's map is comes from the core's registry of mechanisms.
    QVector<HeadMapCaption> captions;
    try {
        const std::string text = QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString();
        const RunDocument run = parseRunDocument(text, "the configuration", false);  // a moved data file changes no head
        for (const std::string& mechanism : headMechanisms(run.model))
            captions.push_back({QString::fromStdString(mechanism), QString::fromStdString(toString(mapKind(mechanism)))});
    } catch (const std::exception&) {
        captions.clear();  // a document the core cannot read: nothing said
    }
    history.setHeadCaptions(captions);
}

}  // namespace widelab
