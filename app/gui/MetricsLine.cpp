#include "MetricsLine.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <limits>

namespace widelab {
namespace {

// Bounds far beyond any model WideLab trains, so that a damaged number cannot
// make a view build millions of rows, combo entries or colour categories.
constexpr qint64 kMaxBlocks = 4096;
constexpr qint64 kMaxExperts = 65536;
constexpr qint64 kMaxPaths = 1024;
constexpr qint64 kMaxTokens = 100000;
// Attention weights and predictions are probabilities; float rounding may pass 1 by a hair.
constexpr double kProbabilitySlack = 1e-3;

const char* const kTrainingMetrics[] = {"loss", "accuracy", "balance_loss", "learning_rate", "gradient_norm",
                                        "tokens_per_second"};

// Thrown inside this file only, caught by the public functions: the reason a line is refused.
struct Refused {
    QString reason;
};

[[noreturn]] void refuse(const QString& reason) { throw Refused{reason}; }

// A value as a message shows it: numbers in full, strings quoted and shortened.
QString shown(const QJsonValue& value)
{
    switch (value.type()) {
    case QJsonValue::Null:
        return QStringLiteral("null");
    case QJsonValue::Bool:
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double:
        return QString::number(value.toDouble(), 'g', 17);
    case QJsonValue::String: {
        const QString text = value.toString();
        return QLatin1Char('"') + (text.size() > 40 ? text.left(40) + QStringLiteral("…") : text) + QLatin1Char('"');
    }
    case QJsonValue::Array:
        return QStringLiteral("an array");
    case QJsonValue::Object:
        return QStringLiteral("an object");
    case QJsonValue::Undefined:
        break;
    }
    return QStringLiteral("missing");
}

QString quoted(const QString& where) { return QLatin1Char('"') + where + QLatin1Char('"'); }

// A finite number; null (how the trainer writes NaN and infinities) is NaN where allowed.
double number(const QJsonValue& value, const QString& where, bool nullAllowed = true)
{
    if (value.isNull() && nullAllowed)
        return std::numeric_limits<double>::quiet_NaN();
    if (!value.isDouble())
        refuse(QStringLiteral("%1 is %2, not a number").arg(quoted(where), shown(value)));
    const double v = value.toDouble();
    if (!std::isfinite(v))
        refuse(QStringLiteral("%1 is not a finite number").arg(quoted(where)));
    return v;
}

// A number that is a probability (or null).
double probability(const QJsonValue& value, const QString& where)
{
    const double v = number(value, where);
    if (v < -kProbabilitySlack || v > 1 + kProbabilitySlack)
        refuse(QStringLiteral("%1 is %2, not a weight from 0 to 1").arg(quoted(where), shown(value)));
    return v;
}

qint64 integer(const QJsonValue& value, const QString& where, qint64 lowest, qint64 highest, const QString& bounds)
{
    const double v = value.isDouble() ? value.toDouble() : std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lowest) || v > static_cast<double>(highest))
        refuse(QStringLiteral("%1 is %2, not a whole number %3").arg(quoted(where), shown(value), bounds));
    return static_cast<qint64>(v);
}

QJsonArray array(const QJsonValue& value, const QString& where)
{
    if (!value.isArray())
        refuse(QStringLiteral("%1 is %2, not an array").arg(quoted(where), shown(value)));
    return value.toArray();
}

// An array that may be left out (an older trainer, a dense model): empty then.
QJsonArray optionalArray(const QJsonObject& object, const QString& key, const QString& where)
{
    return object.contains(key) ? array(object.value(key), where) : QJsonArray();
}

QJsonObject object(const QJsonValue& value, const QString& where)
{
    if (!value.isObject())
        refuse(QStringLiteral("%1 is %2, not an object").arg(quoted(where), shown(value)));
    return value.toObject();
}

QString string(const QJsonValue& value, const QString& where)
{
    if (!value.isString())
        refuse(QStringLiteral("%1 is %2, not a text").arg(quoted(where), shown(value)));
    return value.toString();
}

QString at(const QString& where, qsizetype index) { return where + QLatin1Char('[') + QString::number(index) + QLatin1Char(']'); }

QString field(const QString& where, const char* key) { return where + QLatin1Char('.') + QLatin1String(key); }

template <typename T, typename Read>
QVector<T> listOf(const QJsonArray& values, const QString& where, Read read)
{
    QVector<T> out;
    out.reserve(values.size());
    for (qsizetype i = 0; i < values.size(); ++i)
        out.push_back(static_cast<T>(read(values[i], at(where, i))));
    return out;
}

QVector<float> floatsOf(const QJsonValue& value, const QString& where)
{
    return listOf<float>(array(value, where), where, [](const QJsonValue& v, const QString& w) { return number(v, w); });
}

QVector<double> doublesOf(const QJsonValue& value, const QString& where)
{
    return listOf<double>(array(value, where), where, [](const QJsonValue& v, const QString& w) { return number(v, w); });
}

// The step every line carries: a whole number from 0 to 2^53.
qint64 stepOf(const QJsonObject& line)
{
    if (!line.contains(QStringLiteral("step")))
        refuse(QStringLiteral("it has no \"step\""));
    return integer(line.value(QStringLiteral("step")), QStringLiteral("step"), 0, kMaxMetricsStep,
                   QStringLiteral("from 0 to 2^53"));
}

// [block][channel], every row of one length.
QVector<QVector<float>> normRows(const QJsonObject& norms, const char* key)
{
    const QString where = field(QStringLiteral("layernorm"), key);
    const QJsonArray rows = optionalArray(norms, QLatin1String(key), where);
    if (rows.size() > kMaxBlocks)
        refuse(QStringLiteral("%1 has %2 rows, more than %3 blocks").arg(quoted(where)).arg(rows.size()).arg(kMaxBlocks));
    QVector<QVector<float>> out;
    for (qsizetype b = 0; b < rows.size(); ++b) {
        out.push_back(floatsOf(rows[b], at(where, b)));
        if (out.back().size() != out.front().size())
            refuse(QStringLiteral("%1 has %2 channels but %3 has %4")
                       .arg(quoted(at(where, b)))
                       .arg(out.back().size())
                       .arg(quoted(at(where, 0)))
                       .arg(out.front().size()));
    }
    return out;
}

void sameShape(const QVector<QVector<float>>& gamma, const QVector<QVector<float>>& beta, const char* gammaKey,
               const char* betaKey)
{
    const auto width = [](const QVector<QVector<float>>& rows) { return rows.isEmpty() ? 0 : rows.front().size(); };
    if (gamma.size() != beta.size() || width(gamma) != width(beta))
        refuse(QStringLiteral("\"layernorm.%1\" is %2 x %3 but \"layernorm.%4\" is %5 x %6")
                   .arg(QLatin1String(gammaKey))
                   .arg(gamma.size())
                   .arg(width(gamma))
                   .arg(QLatin1String(betaKey))
                   .arg(beta.size())
                   .arg(width(beta)));
}

Divergence divergenceOf(const QJsonObject& line, const char* key)
{
    const QString where = QLatin1String(key);
    if (!line.contains(where))
        return {};
    const QJsonObject d = object(line.value(where), where);
    auto value = [&](const char* name) {
        return d.contains(QLatin1String(name)) ? number(d.value(QLatin1String(name)), field(where, name)) : 0.0;
    };
    return {value("gamma_all_pairs"), value("beta_all_pairs"), value("gamma_elementwise"), value("beta_elementwise")};
}

ModelState decodeState(const QJsonObject& line)
{
    ModelState state;
    state.step = stepOf(line);

    const QJsonArray routing = optionalArray(line, QStringLiteral("routing"), QStringLiteral("routing"));
    if (routing.size() > kMaxBlocks)
        refuse(QStringLiteral("\"routing\" has %1 blocks, more than %2").arg(routing.size()).arg(kMaxBlocks));
    for (qsizetype i = 0; i < routing.size(); ++i) {
        const QString where = at(QStringLiteral("routing"), i);
        const QJsonObject r = object(routing[i], where);
        ExpertLoad load;
        load.block = static_cast<int>(integer(r.value(QStringLiteral("block")), field(where, "block"), 0, kMaxBlocks - 1,
                                              QStringLiteral("from 0 to %1").arg(kMaxBlocks - 1)));
        const QString tokensWhere = field(where, "tokens_per_expert");
        const QJsonArray tokens = array(r.value(QStringLiteral("tokens_per_expert")), tokensWhere);
        if (tokens.isEmpty() || tokens.size() > kMaxExperts)
            refuse(QStringLiteral("%1 has %2 experts, not 1 to %3").arg(quoted(tokensWhere)).arg(tokens.size()).arg(kMaxExperts));
        load.tokensPerExpert = listOf<qint64>(tokens, tokensWhere, [](const QJsonValue& v, const QString& w) {
            return integer(v, w, 0, kMaxMetricsStep, QStringLiteral("from 0 to 2^53"));
        });
        const qsizetype experts = load.tokensPerExpert.size();
        if (i > 0 && experts != state.routing.front().tokensPerExpert.size())
            refuse(QStringLiteral("%1 has %2 experts but \"routing[0]\" has %3")
                       .arg(quoted(where))
                       .arg(experts)
                       .arg(state.routing.front().tokensPerExpert.size()));
        if (r.contains(QStringLiteral("dropped_percent_per_choice"))) {
            const QString droppedWhere = field(where, "dropped_percent_per_choice");
            load.droppedPercentPerChoice = doublesOf(r.value(QStringLiteral("dropped_percent_per_choice")), droppedWhere);
            if (load.droppedPercentPerChoice.size() > experts)
                refuse(QStringLiteral("%1 has %2 choices for %3 experts")
                           .arg(quoted(droppedWhere))
                           .arg(load.droppedPercentPerChoice.size())
                           .arg(experts));
        }
        if (r.contains(QStringLiteral("unused_experts")))
            load.unusedExperts = static_cast<int>(integer(r.value(QStringLiteral("unused_experts")),
                                                          field(where, "unused_experts"), 0, experts,
                                                          QStringLiteral("from 0 to %1 (the experts)").arg(experts)));
        if (r.contains(QStringLiteral("router_entropy")))
            load.routerEntropy = number(r.value(QStringLiteral("router_entropy")), field(where, "router_entropy"));
        if (r.contains(QStringLiteral("load_vs_fair"))) {
            const QString fairWhere = field(where, "load_vs_fair");
            load.loadVsFair = doublesOf(r.value(QStringLiteral("load_vs_fair")), fairWhere);
            if (load.loadVsFair.size() != experts)
                refuse(QStringLiteral("%1 has %2 values for %3 experts").arg(quoted(fairWhere)).arg(load.loadVsFair.size()).arg(experts));
        }
        state.routing.push_back(std::move(load));
    }

    if (line.contains(QStringLiteral("layernorm"))) {
        const QJsonObject norms = object(line.value(QStringLiteral("layernorm")), QStringLiteral("layernorm"));
        state.norms.attentionGamma = normRows(norms, "attention_gamma");
        state.norms.attentionBeta = normRows(norms, "attention_beta");
        state.norms.ffnGamma = normRows(norms, "ffn_gamma");
        state.norms.ffnBeta = normRows(norms, "ffn_beta");
        sameShape(state.norms.attentionGamma, state.norms.attentionBeta, "attention_gamma", "attention_beta");
        sameShape(state.norms.ffnGamma, state.norms.ffnBeta, "ffn_gamma", "ffn_beta");
    }
    state.norms.ffn = divergenceOf(line, "divergence");
    state.norms.attention = divergenceOf(line, "attention_divergence");

    const QJsonArray paths = optionalArray(line, QStringLiteral("paths"), QStringLiteral("paths"));
    if (paths.size() > 2 * kMaxBlocks)
        refuse(QStringLiteral("\"paths\" has %1 sublayers, more than %2").arg(paths.size()).arg(2 * kMaxBlocks));
    for (qsizetype i = 0; i < paths.size(); ++i) {
        const QString where = at(QStringLiteral("paths"), i);
        const QJsonObject p = object(paths[i], where);
        PathWeightState path;
        path.block = static_cast<int>(integer(p.value(QStringLiteral("block")), field(where, "block"), 0, kMaxBlocks - 1,
                                              QStringLiteral("from 0 to %1").arg(kMaxBlocks - 1)));
        path.sublayer = string(p.value(QStringLiteral("sublayer")), field(where, "sublayer"));
        if (path.sublayer != QLatin1String("attention") && path.sublayer != QLatin1String("ffn"))
            refuse(QStringLiteral("%1 is %2, not \"attention\" or \"ffn\"")
                       .arg(quoted(field(where, "sublayer")), shown(p.value(QStringLiteral("sublayer")))));
        path.alpha = floatsOf(p.value(QStringLiteral("alpha")), field(where, "alpha"));
        path.paths = p.contains(QStringLiteral("paths"))
                         ? static_cast<int>(integer(p.value(QStringLiteral("paths")), field(where, "paths"), 1, kMaxPaths,
                                                    QStringLiteral("from 1 to %1").arg(kMaxPaths)))
                         : static_cast<int>(path.alpha.size());
        // alpha: a weight per path, then (extra features on) one per "mean without path i".
        if (path.alpha.size() != path.paths && path.alpha.size() != 2 * path.paths)
            refuse(QStringLiteral("%1 has %2 weights for %3 paths (it holds one per path, or two with the extra features)")
                       .arg(quoted(field(where, "alpha")))
                       .arg(path.alpha.size())
                       .arg(path.paths));
        if (p.contains(QStringLiteral("beta")))
            path.beta = static_cast<float>(number(p.value(QStringLiteral("beta")), field(where, "beta")));
        if (p.contains(QStringLiteral("diversity")))
            path.diversity = number(p.value(QStringLiteral("diversity")), field(where, "diversity"));
        state.paths.push_back(std::move(path));
    }
    return state;
}

ProbeCapture decodeCapture(const QJsonObject& line)
{
    ProbeCapture c;
    c.step = stepOf(line);
    c.text = string(line.value(QStringLiteral("text")), QStringLiteral("text"));
    const QJsonArray tokens = array(line.value(QStringLiteral("tokens")), QStringLiteral("tokens"));
    if (tokens.isEmpty())
        refuse(QStringLiteral("the probe has no tokens"));
    if (tokens.size() > kMaxTokens)
        refuse(QStringLiteral("the probe has %1 tokens, more than %2").arg(tokens.size()).arg(kMaxTokens));
    for (qsizetype i = 0; i < tokens.size(); ++i)
        c.tokens.push_back(string(tokens[i], at(QStringLiteral("tokens"), i)));
    const qsizetype n = c.tokens.size();

    // [layer][head][query][key]: every head T x T, every layer as many heads.
    const QJsonArray layers = optionalArray(line, QStringLiteral("attention"), QStringLiteral("attention"));
    if (layers.size() > kMaxBlocks)
        refuse(QStringLiteral("\"attention\" has %1 layers, more than %2").arg(layers.size()).arg(kMaxBlocks));
    for (qsizetype l = 0; l < layers.size(); ++l) {
        const QString layerWhere = at(QStringLiteral("attention"), l);
        const QJsonArray heads = array(layers[l], layerWhere);
        if (heads.isEmpty())
            refuse(QStringLiteral("%1 has no heads").arg(quoted(layerWhere)));
        if (l > 0 && heads.size() != c.attention.front().size())
            refuse(QStringLiteral("%1 has %2 heads but \"attention[0]\" has %3")
                       .arg(quoted(layerWhere))
                       .arg(heads.size())
                       .arg(c.attention.front().size()));
        QVector<QVector<float>> maps;
        for (qsizetype h = 0; h < heads.size(); ++h) {
            const QString headWhere = at(layerWhere, h);
            const QJsonArray rows = array(heads[h], headWhere);
            if (rows.size() != n)
                refuse(QStringLiteral("%1 has %2 rows for %3 tokens").arg(quoted(headWhere)).arg(rows.size()).arg(n));
            QVector<float> flat;
            flat.reserve(n * n);
            for (qsizetype q = 0; q < n; ++q) {
                const QString rowWhere = at(headWhere, q);
                const QJsonArray row = array(rows[q], rowWhere);
                if (row.size() != n)
                    refuse(QStringLiteral("%1 has %2 weights for %3 tokens").arg(quoted(rowWhere)).arg(row.size()).arg(n));
                for (qsizetype k = 0; k < n; ++k)
                    flat.push_back(static_cast<float>(probability(row[k], at(rowWhere, k))));
            }
            maps.push_back(std::move(flat));
        }
        c.attention.push_back(std::move(maps));
    }

    // [block][token][choice]: one list per token, as many choices for every token of a block.
    const QJsonArray blocks = optionalArray(line, QStringLiteral("experts"), QStringLiteral("experts"));
    if (blocks.size() > kMaxBlocks)
        refuse(QStringLiteral("\"experts\" has %1 blocks, more than %2").arg(blocks.size()).arg(kMaxBlocks));
    for (qsizetype b = 0; b < blocks.size(); ++b) {
        const QString blockWhere = at(QStringLiteral("experts"), b);
        const QJsonArray perToken = array(blocks[b], blockWhere);
        if (perToken.size() != n)
            refuse(QStringLiteral("%1 has %2 entries for %3 tokens").arg(quoted(blockWhere)).arg(perToken.size()).arg(n));
        QVector<QVector<int>> block;
        for (qsizetype t = 0; t < n; ++t) {
            const QString tokenWhere = at(blockWhere, t);
            const QJsonArray choices = array(perToken[t], tokenWhere);
            if (t > 0 && choices.size() != block.front().size())
                refuse(QStringLiteral("%1 has %2 choices but %3 has %4")
                           .arg(quoted(tokenWhere))
                           .arg(choices.size())
                           .arg(quoted(at(blockWhere, 0)))
                           .arg(block.front().size()));
            block.push_back(listOf<int>(choices, tokenWhere, [](const QJsonValue& v, const QString& w) {
                return integer(v, w, -1, kMaxExperts - 1, QStringLiteral("from -1 (dropped) to %1").arg(kMaxExperts - 1));
            }));
        }
        c.experts.push_back(std::move(block));
    }

    if (line.contains(QStringLiteral("prediction")))
        c.prediction = listOf<float>(array(line.value(QStringLiteral("prediction")), QStringLiteral("prediction")),
                                     QStringLiteral("prediction"), probability);
    const QJsonArray labels = optionalArray(line, QStringLiteral("prediction_labels"), QStringLiteral("prediction_labels"));
    if (!labels.isEmpty() && labels.size() != c.prediction.size())
        refuse(QStringLiteral("\"prediction_labels\" has %1 labels for %2 predictions").arg(labels.size()).arg(c.prediction.size()));
    for (qsizetype i = 0; i < labels.size(); ++i)
        c.predictionLabels.push_back(string(labels[i], at(QStringLiteral("prediction_labels"), i)));
    // Optional: the text's true class, an index into "prediction".
    if (line.contains(QStringLiteral("label"))) {
        if (c.prediction.isEmpty())
            refuse(QStringLiteral("\"label\" is given but there is no \"prediction\""));
        c.trueLabel = static_cast<int>(integer(line.value(QStringLiteral("label")), QStringLiteral("label"), 0,
                                               c.prediction.size() - 1,
                                               QStringLiteral("from 0 to %1").arg(c.prediction.size() - 1)));
    }
    return c;
}

// The offset of the first byte that is not part of valid UTF-8, or -1.
qsizetype invalidUtf8At(const QByteArray& bytes)
{
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.constData());
    const qsizetype size = bytes.size();
    for (qsizetype i = 0; i < size;) {
        const unsigned char b = p[i];
        int more = 0;
        unsigned int lowest = 0;
        if (b < 0x80) {
            ++i;
            continue;
        }
        if (b >= 0xC2 && b <= 0xDF) {
            more = 1;
            lowest = 0x80;
        } else if (b >= 0xE0 && b <= 0xEF) {
            more = 2;
            lowest = 0x800;
        } else if (b >= 0xF0 && b <= 0xF4) {
            more = 3;
            lowest = 0x10000;
        } else {
            return i;
        }
        if (i + more >= size)
            return i;  // cut off inside a character
        unsigned int code = b & (0x3F >> more);
        for (int k = 1; k <= more; ++k) {
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
            code = (code << 6) | (p[i + k] & 0x3F);
        }
        if (code < lowest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            return i;
        i += more + 1;
    }
    return -1;
}

template <typename T, typename Decode>
std::optional<T> guarded(QString* reason, Decode decode)
{
    try {
        return decode();
    } catch (const Refused& refused) {
        if (reason)
            *reason = refused.reason;
        return std::nullopt;
    }
}

}  // namespace

std::optional<ModelState> modelStateFromJson(const QJsonObject& line, QString* reason)
{
    return guarded<ModelState>(reason, [&] { return decodeState(line); });
}

std::optional<ProbeCapture> probeCaptureFromJson(const QJsonObject& line, QString* reason)
{
    return guarded<ProbeCapture>(reason, [&] { return decodeCapture(line); });
}

std::optional<MetricsLine> decodeMetricsLine(const QByteArray& bytes, QString* reason)
{
    return guarded<MetricsLine>(reason, [&] {
        if (const qsizetype bad = invalidUtf8At(bytes); bad >= 0)
            refuse(QStringLiteral("not valid UTF-8 (byte %1 of the line is 0x%2)")
                       .arg(bad + 1)
                       .arg(static_cast<uint>(static_cast<unsigned char>(bytes[bad])), 2, 16, QLatin1Char('0')));
        QJsonParseError error{};
        const QJsonDocument document = QJsonDocument::fromJson(bytes, &error);
        if (error.error != QJsonParseError::NoError)
            refuse(QStringLiteral("not JSON (%1 at byte %2)").arg(error.errorString()).arg(error.offset + 1));
        if (!document.isObject())
            refuse(QStringLiteral("not a JSON object"));
        const QJsonObject json = document.object();
        MetricsLine line;
        line.typeName = string(json.value(QStringLiteral("type")), QStringLiteral("type"));
        if (line.typeName == QLatin1String("train")) {
            line.type = MetricsLine::Type::Train;
            line.state = decodeState(json);
            line.step = line.state.step;
            if (json.contains(QStringLiteral("wall_seconds"))) {
                line.wallSeconds = number(json.value(QStringLiteral("wall_seconds")), QStringLiteral("wall_seconds"), false);
                if (line.wallSeconds < 0)
                    refuse(QStringLiteral("\"wall_seconds\" is %1, below 0").arg(line.wallSeconds));
            }
            for (const char* name : kTrainingMetrics)
                if (json.contains(QLatin1String(name)))
                    line.values.insert(QLatin1String(name), number(json.value(QLatin1String(name)), QLatin1String(name)));
        } else if (line.typeName == QLatin1String("probe")) {
            line.type = MetricsLine::Type::Probe;
            line.capture = decodeCapture(json);
            line.step = line.capture.step;
        } else if (line.typeName == QLatin1String("eval")) {
            line.type = MetricsLine::Type::Eval;
            line.step = stepOf(json);
            line.split = string(json.value(QStringLiteral("split")), QStringLiteral("split"));
            line.loss = number(json.value(QStringLiteral("loss")), QStringLiteral("loss"));
            line.accuracy = number(json.value(QStringLiteral("accuracy")), QStringLiteral("accuracy"));
        }
        return line;
    });
}

}  // namespace widelab
