// defines: schemaFields, resolveDocument, documentDifferences, modelFamily,
// modelFamilies: the core's configuration schema as the panel's plain field
// descriptions, a document resolved by the core, two documents compared by it,
// and the family of papers a document's model belongs to
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

// The family a document's model belongs to, read from its resolved keys, as the
// preset picker groups them: "Translation" (task.kind translation), "Vision"
// (model.input image), "Multi-Path" (more than one path on either side),
// "WideNet" (more than one expert, or attention or FFN shared across blocks, as
// its ALBERT baseline), else "Wide Attention" (dense Transformers, deep or
// wide, with any attention mechanism).
QString modelFamily(const QJsonObject& document);
// Every family modelFamily names, in the order the picker lists them.
QStringList modelFamilies();

}  // namespace widelab
