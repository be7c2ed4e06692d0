// defines: AblationRow, AblationScan: an ablation scan as plain Qt data (the
// core's core/train/Ablation.h, converted by app/): every head, expert, path or
// sublayer switched off in turn, and what that did to validation loss, accuracy
// and the probe's prediction
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

namespace widelab {

struct AblationRow {
    int layer = 0;        // 0-based block
    int index = 0;        // head, expert or path (0-based); for sublayers 0 attention, 1 ffn
    QString label;        // "layer 2 head 5", "block 1 expert 3", "block 4 ffn"
    double loss = 0;      // validation loss with the part ablated
    double lossDelta = 0; // loss - baseline loss (positive: the part helped)
    double accuracyDelta = 0;  // accuracy - baseline accuracy, 0..1 scale
    QVector<float> probePrediction;  // the probe's prediction with the part ablated; empty: no probe
};

struct AblationScan {
    QString kind;          // "heads", "experts", "paths" or "sublayers"
    QString mode;          // "zero" or "mean"
    qint64 step = 0;       // of the weights scanned
    QString weights;       // where the weights came from: "best.pt", "step 1200 (live copy)", ...
    double baselineLoss = 0;
    double baselineAccuracy = 0;
    qint64 examples = 0;   // validation examples each measurement used
    int layers = 0;        // rows of the heatmap
    int columns = 0;       // heads, experts or paths per layer; 2 for sublayers
    QString probeText;     // empty: no probe
    QStringList predictionLabels;
    QVector<float> baselinePrediction;
    QVector<AblationRow> rows;  // in scan order: layer by layer, index by index
};

}  // namespace widelab
