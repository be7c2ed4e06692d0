// defines: schemaFields, resolveDocument: the core's configuration schema as the
// panel's plain field descriptions, and a document resolved by the core
#pragma once

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

}  // namespace widelab
