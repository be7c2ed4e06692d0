#include "InsightConvert.h"

#include "data/ByteText.h"
#include "train/Snapshot.h"

#include <QJsonArray>
#include <QJsonObject>

namespace widelab {

namespace {

template <typename T, typename From>
QVector<T> vectorOf(const std::vector<From>& values)
{
    return QVector<T>(values.begin(), values.end());
}

template <typename T, typename From>
QVector<QVector<T>> matrixOf(const std::vector<std::vector<From>>& rows)
{
    QVector<QVector<T>> out;
    out.reserve(static_cast<qsizetype>(rows.size()));
    for (const auto& row : rows)
        out.push_back(vectorOf<T>(row));
    return out;
}

Divergence divergenceOf(const LayerNormDivergence& d)
{
    return {d.gammaAllPairs, d.betaAllPairs, d.gammaElementwise, d.betaElementwise};
}

QVector<float> floatsOf(const QJsonValue& value)
{
    QVector<float> out;
    for (const QJsonValue& v : value.toArray())
        out.push_back(static_cast<float>(v.toDouble()));
    return out;
}

QVector<double> doublesOf(const QJsonValue& value)
{
    QVector<double> out;
    for (const QJsonValue& v : value.toArray())
        out.push_back(v.toDouble());
    return out;
}

QVector<QVector<float>> floatRowsOf(const QJsonValue& value)
{
    QVector<QVector<float>> out;
    for (const QJsonValue& row : value.toArray())
        out.push_back(floatsOf(row));
    return out;
}

Divergence divergenceOf(const QJsonObject& d)
{
    return {d.value(QStringLiteral("gamma_all_pairs")).toDouble(), d.value(QStringLiteral("beta_all_pairs")).toDouble(),
            d.value(QStringLiteral("gamma_elementwise")).toDouble(),
            d.value(QStringLiteral("beta_elementwise")).toDouble()};
}

// Attention maps [layer][head][query][key] flattened per head.
QVector<QVector<QVector<float>>> flatMaps(const std::vector<std::vector<std::vector<std::vector<float>>>>& maps)
{
    QVector<QVector<QVector<float>>> out;
    for (const auto& layer : maps) {
        QVector<QVector<float>> heads;
        for (const auto& head : layer) {
            QVector<float> flat;
            for (const auto& row : head)
                flat += vectorOf<float>(row);
            heads.push_back(std::move(flat));
        }
        out.push_back(std::move(heads));
    }
    return out;
}

}  // namespace

ModelState toModelState(const TrainingSnapshot& s)
{
    ModelState state;
    state.step = s.step;
    for (const RoutingStats& r : s.routing)
        state.routing.push_back({static_cast<int>(r.block), vectorOf<qint64>(r.tokensPerExpert),
                                 vectorOf<double>(r.droppedPercentPerChoice), static_cast<int>(r.unusedExperts),
                                 r.routerEntropy, vectorOf<double>(r.loadVsFair)});
    state.norms.attentionGamma = matrixOf<float>(s.attentionGamma);
    state.norms.attentionBeta = matrixOf<float>(s.attentionBeta);
    state.norms.ffnGamma = matrixOf<float>(s.ffnGamma);
    state.norms.ffnBeta = matrixOf<float>(s.ffnBeta);
    state.norms.ffn = divergenceOf(s.divergence);
    state.norms.attention = divergenceOf(s.attentionDivergence);
    for (const PathWeights& p : s.paths)
        state.paths.push_back({static_cast<int>(p.block), QString::fromStdString(p.sublayer), static_cast<int>(p.paths),
                               vectorOf<float>(p.alpha), p.beta, p.diversity});
    return state;
}

ProbeCapture toProbeCapture(const ProbeResult& p)
{
    ProbeCapture c;
    c.step = p.step;
    c.text = QString::fromStdString(legibleBytes(p.text));
    for (const std::string& token : p.tokens)
        c.tokens.push_back(QString::fromStdString(token));
    c.attention = flatMaps(p.attention);
    for (const auto& block : p.experts) {
        QVector<QVector<int>> tokens;
        for (const auto& choices : block)
            tokens.push_back(vectorOf<int>(choices));
        c.experts.push_back(std::move(tokens));
    }
    c.prediction = vectorOf<float>(p.prediction);
    for (const std::string& label : p.predictionLabels)
        c.predictionLabels.push_back(QString::fromStdString(label));
    return c;
}

ModelState modelStateFromJson(const QJsonObject& line)
{
    ModelState state;
    state.step = static_cast<qint64>(line.value(QStringLiteral("step")).toDouble());
    for (const QJsonValue& value : line.value(QStringLiteral("routing")).toArray()) {
        const QJsonObject r = value.toObject();
        ExpertLoad load;
        load.block = r.value(QStringLiteral("block")).toInt();
        for (const QJsonValue& tokens : r.value(QStringLiteral("tokens_per_expert")).toArray())
            load.tokensPerExpert.push_back(static_cast<qint64>(tokens.toDouble()));
        load.droppedPercentPerChoice = doublesOf(r.value(QStringLiteral("dropped_percent_per_choice")));
        load.unusedExperts = r.value(QStringLiteral("unused_experts")).toInt();
        load.routerEntropy = r.value(QStringLiteral("router_entropy")).toDouble();
        load.loadVsFair = doublesOf(r.value(QStringLiteral("load_vs_fair")));
        state.routing.push_back(std::move(load));
    }
    const QJsonObject norms = line.value(QStringLiteral("layernorm")).toObject();
    state.norms.attentionGamma = floatRowsOf(norms.value(QStringLiteral("attention_gamma")));
    state.norms.attentionBeta = floatRowsOf(norms.value(QStringLiteral("attention_beta")));
    state.norms.ffnGamma = floatRowsOf(norms.value(QStringLiteral("ffn_gamma")));
    state.norms.ffnBeta = floatRowsOf(norms.value(QStringLiteral("ffn_beta")));
    state.norms.ffn = divergenceOf(line.value(QStringLiteral("divergence")).toObject());
    state.norms.attention = divergenceOf(line.value(QStringLiteral("attention_divergence")).toObject());
    for (const QJsonValue& value : line.value(QStringLiteral("paths")).toArray()) {
        const QJsonObject p = value.toObject();
        PathWeightState path;
        path.block = p.value(QStringLiteral("block")).toInt();
        path.sublayer = p.value(QStringLiteral("sublayer")).toString();
        path.alpha = floatsOf(p.value(QStringLiteral("alpha")));
        path.paths = p.value(QStringLiteral("paths")).toInt(static_cast<int>(path.alpha.size()));
        path.beta = static_cast<float>(p.value(QStringLiteral("beta")).toDouble(1.0));
        path.diversity = p.value(QStringLiteral("diversity")).toDouble();
        state.paths.push_back(std::move(path));
    }
    return state;
}

ProbeCapture probeCaptureFromJson(const QJsonObject& line)
{
    ProbeCapture c;
    c.step = static_cast<qint64>(line.value(QStringLiteral("step")).toDouble());
    c.text = line.value(QStringLiteral("text")).toString();
    for (const QJsonValue& token : line.value(QStringLiteral("tokens")).toArray())
        c.tokens.push_back(token.toString());
    for (const QJsonValue& layer : line.value(QStringLiteral("attention")).toArray()) {
        QVector<QVector<float>> heads;
        for (const QJsonValue& head : layer.toArray()) {
            QVector<float> flat;
            for (const QJsonValue& row : head.toArray())
                flat += floatsOf(row);
            heads.push_back(std::move(flat));
        }
        c.attention.push_back(std::move(heads));
    }
    for (const QJsonValue& block : line.value(QStringLiteral("experts")).toArray()) {
        QVector<QVector<int>> tokens;
        for (const QJsonValue& choices : block.toArray()) {
            QVector<int> chosen;
            for (const QJsonValue& expert : choices.toArray())
                chosen.push_back(expert.toInt(-1));
            tokens.push_back(std::move(chosen));
        }
        c.experts.push_back(std::move(tokens));
    }
    c.prediction = floatsOf(line.value(QStringLiteral("prediction")));
    for (const QJsonValue& label : line.value(QStringLiteral("prediction_labels")).toArray())
        c.predictionLabels.push_back(label.toString());
    return c;
}

}  // namespace widelab
