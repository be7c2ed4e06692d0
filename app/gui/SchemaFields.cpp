#include "SchemaFields.h"

#include "config/ConfigSchema.h"
#include "train/RunConfig.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QObject>

namespace widelab {
namespace {

nlohmann::json toJson(const QJsonObject& document)
{
    return nlohmann::json::parse(QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString());
}

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
    case KeyType::RunFolder: return FieldSpec::Type::RunFolder;
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

QStringList modelFamilies()
{
    return {QObject::tr("Wide Attention"), QObject::tr("WideNet"), QObject::tr("Multi-Path"), QObject::tr("Translation"),
            QObject::tr("Vision")};
}

QString modelFamily(const QJsonObject& document)
{
    const nlohmann::json resolved = resolveRunDocument(toJson(document));
    const nlohmann::json& model = resolved.at("model");
    const QStringList families = modelFamilies();
    if (resolved.at("task").value("kind", std::string()) == "translation")
        return families[3];
    if (model.value("input", std::string()) == "image")
        return families[4];
    if (model.value("paths", 1) > 1 || model.value("decoder_paths", 1) > 1)
        return families[2];
    // WideNet's models and its baselines: experts, or weights shared across blocks (ALBERT).
    if (model.value("experts", 1) > 1 || model.value("share_attention", false) || model.value("share_ffn", false))
        return families[1];
    return families[0];
}

}  // namespace widelab
