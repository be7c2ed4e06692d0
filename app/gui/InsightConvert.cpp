#include "InsightConvert.h"

#include "vocab/ByteText.h"
#include "vocab/Snapshot.h"

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
    c.trueLabel = static_cast<int>(p.label);
    for (const LensStage& stage : p.logitLens) {
        c.lensStages.push_back(QStringLiteral("block %1 %2").arg(stage.block + 1).arg(QString::fromStdString(stage.sublayer)));
        c.logitLens.push_back(vectorOf<float>(stage.distribution));
    }
    c.lensColumns = vectorOf<int>(p.lensColumns);
    const ProbeImage& image = p.image;  // empty for a text probe
    if (image.width > 0)
        c.image = CaptureImage::fromPixels(image.width, image.height, image.channels, image.pixels.data(),
                                           static_cast<qint64>(image.pixels.size()), image.gridRows, image.gridCols);
    return c;
}

}  // namespace widelab
