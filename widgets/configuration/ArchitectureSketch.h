// defines: ArchitectureSketch, the few facts about a model that the architecture
// diagram draws (depth, sharing, experts, paths, heads, head kind, input)
#pragma once

#include <QString>
#include <QVector>

namespace widelab {

struct ArchitectureSketch {
    int layers = 0;
    bool shareAttention = false;
    bool shareFfn = false;
    bool shareLayerNorm = false;
    int experts = 1;             // 1: dense FFN
    int topK = 1;
    QVector<bool> moeAtBlock;    // per block: an MoE sublayer; empty: every block when experts > 1
    int paths = 1;
    bool pathNorm = false;
    bool learnablePathWeights = false;
    int heads = 0;
    QString headKind;            // model.head's name: "classification", "language_model", "translation", "masked_lm"
    int decoderLayers = 0;       // translation: the decoder's blocks (drawn as one box above the encoder)
    int decoderPaths = 1;        // translation: the paths of the decoder's sublayers
    bool imageInput = false;     // patches of an image, not tokens, enter the embedding
};

}  // namespace widelab
