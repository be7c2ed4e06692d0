// defines: describeInsights: what the insight views take from a run's
// configuration besides its architecture (image input, what each head's
// attention map is)
#pragma once

#include "insights/InsightHistory.h"

#include <QJsonObject>

namespace widelab {

// Sets on `history` whether the model reads images and the caption of each
// head's attention map, from `document`, a complete valid configuration
// (ConfigAssessment::complete). A document the core cannot read sets nothing.
void describeInsights(InsightHistory& history, const QJsonObject& document);

}  // namespace widelab
