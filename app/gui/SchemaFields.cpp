#include "SchemaFields.h"

#include "config/ConfigSchema.h"
#include "train/RunConfig.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace widelab {
namespace {

FieldSpec::Type fieldType(KeyType type)
{
    switch (type) {
    case KeyType::Integer: return FieldSpec::Type::Integer;
    case KeyType::Number: return FieldSpec::Type::Number;
    case KeyType::Boolean: return FieldSpec::Type::Boolean;
    case KeyType::Choice: return FieldSpec::Type::Choice;
    case KeyType::Text: return FieldSpec::Type::Text;
    case KeyType::FilePath: return FieldSpec::Type::FilePath;
    case KeyType::TextList: return FieldSpec::Type::TextList;
    case KeyType::Device: return FieldSpec::Type::Device;
    }
    return FieldSpec::Type::Text;
}

QString text(const std::string& s) { return QString::fromStdString(s); }

// A JSON value of any kind, through its text (an array wrapped so that a scalar parses too).
QJsonValue toQt(const nlohmann::json& value)
{
    const QByteArray wrapped = QByteArray::fromStdString(nlohmann::json::array({value}).dump());
    return QJsonDocument::fromJson(wrapped).array().at(0);
}

}  // namespace

QList<FieldSpec> schemaFields()
{
    QList<FieldSpec> fields;
    for (const KeySpec& spec : configSchema()) {
        FieldSpec field;
        field.key = text(spec.key);
        field.type = fieldType(spec.type);
        field.min = spec.min;
        field.max = spec.max;
        field.defaultValue = toQt(spec.defaultValue);
        for (const std::string& choice : spec.choices)
            field.choices << text(choice);
        field.description = text(spec.description);
        field.derivedRule = text(spec.derivedRule);
        fields.append(field);
    }
    return fields;
}

QJsonObject resolveDocument(const QJsonObject& document)
{
    const auto json = nlohmann::json::parse(QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString());
    return QJsonDocument::fromJson(QByteArray::fromStdString(resolveRunDocument(json).dump())).object();
}

}  // namespace widelab
