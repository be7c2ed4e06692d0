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

namespace {

nlohmann::json toJson(const QJsonObject& document)
{
    return nlohmann::json::parse(QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString());
}

}  // namespace

QJsonObject resolveDocument(const QJsonObject& document)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(resolveRunDocument(toJson(document)).dump())).object();
}

QList<ConfigDiffDialog::Row> documentDifferences(const QJsonObject& a, const QJsonObject& b)
{
    QList<ConfigDiffDialog::Row> rows;
    for (const ConfigDifference& difference : configurationDiff(toJson(a), toJson(b)))
        rows.push_back({QString::fromStdString(difference.key), QString::fromStdString(difference.a),
                        QString::fromStdString(difference.b)});
    return rows;
}

}  // namespace widelab
