#include "InsightFacts.h"

namespace widelab {

void describeInsights(InsightHistory& history, const QJsonObject& document)
{
    const QJsonObject model = document.value(QStringLiteral("model")).toObject();
    history.setImageInput(model.value(QStringLiteral("input")).toString() == QLatin1String("image"));
}

}  // namespace widelab
