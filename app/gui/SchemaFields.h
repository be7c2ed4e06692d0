// defines: schemaFields, resolveDocument, documentDifferences: the core's
// configuration schema as the panel's plain field descriptions, a document
// resolved by the core, and two documents compared by it
#pragma once

#include "configuration/ConfigDiffDialog.h"
#include "configuration/ConfigTypes.h"

#include <QJsonObject>
#include <QList>

namespace widelab {

// Every key of core/config/ConfigSchema, in its order.
QList<FieldSpec> schemaFields();

// `document` with every key given its value as the core reads it (given values
// that read cleanly, defaults and derived defaults for the rest); never fails.
// What the panel asks to show derived values.
QJsonObject resolveDocument(const QJsonObject& document);

// The keys whose values differ between two documents, each resolved first
// (core's configurationDiff: what `widelab-cli diff` prints).
QList<ConfigDiffDialog::Row> documentDifferences(const QJsonObject& a, const QJsonObject& b);

}  // namespace widelab
