// defines: ModelConfig, the `model` section of a WideLab document: every knob of
// depth, width, experts, paths and sharing, with its JSON reading, writing and checks
#pragma once

#include "vocab/ConfigError.h"
#include "vocab/JsonText.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace widelab {

// LanguageModel: the next token at every position, causal; MaskedLanguageModel:
// the token at every position from both sides (BERT's masked-LM pretraining).
enum class HeadKind { Classification, LanguageModel, Translation, MaskedLanguageModel };
enum class Pooling { Cls, Mean };
enum class Activation { Gelu, Relu, Silu };
enum class RoutingPriority { Position, Batch };
// Which choices the balance loss counts as a token sent to an expert (its m_e): the
// top-1 only, or every one of the top_k (WideNet Eq. 4's K-hot h).
enum class BalanceCount { Top1, TopK };
enum class InputKind { Tokens, Image };
// The weight alpha of each of n paths' features (Multi-Path Transformer): 1/sqrt(2n)
// (section 3.3, the learnable weights' start), 1/n and 1/sqrt(n) (Table 4's fixed weights).
enum class PathWeight { InverseSqrt2n, InverseN, InverseSqrtN };

struct ModelConfig {
    // Input and width. Defaults describe a small laptop-scale encoder.
    std::int64_t vocabSize = 256;
    std::int64_t maxLen = 512;        // longest input, not counting the CLS token (images: the patches)
    InputKind input = InputKind::Tokens;
    std::int64_t imageSize = 32;      // image input: pixels per side, a multiple of patchSize
    std::int64_t patchSize = 4;       // image input: pixels per patch side
    std::int64_t channels = 3;        // image input: 1 (grey) or 3 (RGB)
    std::int64_t dModel = 256;
    std::int64_t embeddingDim = 0;    // 0: not factorised
    std::int64_t layers = 6;
    std::int64_t heads = 8;
    std::int64_t headDim = 32;        // default d_model / heads
    std::int64_t ffnDim = 1024;       // default 4 * d_model
    Activation activation = Activation::Gelu;
    double dropout = 0.1;

    // Attention mechanism (core/model/attention/): a registered name or "mixed",
    // the per-head list of a mixed model, and every mechanism's own keys by name
    // ("linformer_k": 256), defaults filled in.
    std::string attention = "full";
    std::vector<std::string> attentionMix;
    nlohmann::json attentionOptions = defaultAttentionOptions();

    // Head. Translation: an encoder-decoder; `layers` is the encoder's depth,
    // decoderLayers the decoder's (default layers).
    HeadKind head = HeadKind::Classification;
    std::int64_t decoderLayers = 6;
    std::int64_t decoderPaths = 1;  // default paths; 1: plain decoder sublayers (no PathNorm or path weights)
    Pooling pooling = Pooling::Cls;
    bool pooler = false;
    std::int64_t numClasses = 10;
    // Text pairs (task.kind "pair_classification"): a learned vector per segment added to
    // each token, its segment read from the separators before it (data/PairInput.h); 0: none.
    std::int64_t segments = 0;

    // Mixture of experts (experts == 1: dense FFN).
    std::int64_t experts = 1;
    std::int64_t topK = 1;                 // default min(2, experts)
    double capacityFactor = 1.2;           // <= 0: never drop
    double evalCapacityFactor = 2.0;  // a classifier's default; fromJson gives a language model 0 (never drop)
    double routerNoiseStd = 0.0;           // default 1 / experts when experts > 1
    double balanceLossWeight = 0.01;
    double routerZLossWeight = 0.0;      // the router z-loss in the training loss (ST-MoE); 0: off
    std::int64_t routingGroups = 6;        // default layers
    RoutingPriority routingPriority = RoutingPriority::Position;
    BalanceCount balanceCount = BalanceCount::Top1;
    bool renormalizeGates = false;
    bool shareRouter = true;

    // Sharing across blocks.
    bool shareAttention = false;
    bool shareFfn = false;
    bool shareLayerNorm = false;

    // Multi-path sublayers.
    std::int64_t paths = 1;
    bool pathNorm = false;
    bool learnablePathWeights = false;
    PathWeight pathWeight = PathWeight::InverseSqrt2n;
    bool pathExtraFeatures = false;

    // A mechanism's key (its name without "model."), as the schema types it.
    std::int64_t attentionInteger(const std::string& name) const;
    double attentionNumber(const std::string& name) const;
    std::string attentionText(const std::string& name) const;  // a choice
    bool attentionFlag(const std::string& name) const;
    // Every mechanism key at its schema default.
    static nlohmann::json defaultAttentionOptions();

    // Derived quantities used throughout the model and the accounting.
    std::int64_t attentionWidth() const { return heads * headDim; }
    bool isMoe() const { return experts > 1; }
    bool imageInput() const { return input == InputKind::Image; }
    std::int64_t patchGrid() const { return patchSize > 0 ? imageSize / patchSize : 0; }  // patches per side
    std::int64_t patches() const { return patchGrid() * patchGrid(); }                   // row-major
    std::int64_t patchInputs() const { return channels * patchSize * patchSize; }          // C * P * P
    bool isMultiPath() const { return paths > 1 || pathNorm || learnablePathWeights || pathExtraFeatures; }
    std::int64_t pathFeatures() const { return pathExtraFeatures ? 2 * paths : paths; }
    bool isTranslation() const { return head == HeadKind::Translation; }
    // A query sees only earlier keys (a language model's encoder; a translation model's decoder side).
    bool causal() const { return head == HeadKind::LanguageModel; }
    // Logits over the vocabulary at every position rather than classes per example.
    bool predictsTokens() const { return head != HeadKind::Classification; }
    // What an encoder-decoder's decoder blocks are built from: `layers` its depth,
    // `paths` its paths (one: plain sublayers, no path combiner), full causal
    // self-attention (the mechanism keys are the encoder's), at most one routing
    // group per block; every other knob as given.
    ModelConfig decoderSide() const;
    // The value of each path's weight alpha for this many paths (model.path_weight).
    double pathWeightValue() const;
    bool usesClsToken() const { return head == HeadKind::Classification && pooling == Pooling::Cls; }
    std::int64_t positions() const { return maxLen + (usesClsToken() ? 1 : 0); }
    std::int64_t outputSize() const { return head == HeadKind::Classification ? numClasses : vocabSize; }
    std::int64_t tokenEmbeddingDim() const { return embeddingDim > 0 ? embeddingDim : dModel; }
    bool factorisedEmbedding() const { return embeddingDim > 0; }
    std::int64_t attentionModules() const { return shareAttention ? 1 : layers; }
    std::int64_t ffnModules() const { return shareFfn ? 1 : layers; }
    std::int64_t layerNormSets() const { return shareLayerNorm ? 1 : layers; }
    std::int64_t routerModules() const { return isMoe() ? (shareRouter ? 1 : layers) : 0; }
    std::int64_t routingGroupOf(std::int64_t block) const { return block * routingGroups / layers; }
    bool routesAt(std::int64_t block) const
    {
        return isMoe() && (block == 0 || routingGroupOf(block) != routingGroupOf(block - 1));
    }
    std::int64_t routingCalls() const { return isMoe() ? routingGroups : 0; }

    // Reads the `model` object, filling defaults that depend on other keys (with
    // image input, max_len becomes the number of patches, so that positions()
    // and everything reading the sequence length stay right). Every
    // problem is appended to `issues` (nothing is thrown); the result is only
    // meaningful when no issue was added. Keys given without effect (routing
    // options of a dense model, ...) are appended to `warnings` when given.
    static ModelConfig fromJson(const nlohmann::json& model, std::vector<ConfigIssue>& issues,
                                const std::string& path = "model", std::vector<ConfigIssue>* warnings = nullptr);
    // Every key, resolved (defaults written out).
    nlohmann::json toJson() const;
    // Cross-key checks; appends to `issues`. Rules that read a key listed in
    // `unreadable` (full dotted keys) are skipped.
    void validate(std::vector<ConfigIssue>& issues, const std::string& path = "model",
                  const std::set<std::string>& unreadable = {}) const;
};

// The most stored parameters a model may have: far beyond what one machine
// trains, and far below where any count in int64 overflows.
inline constexpr std::int64_t kMaxModelParameters = 1'000'000'000'000;

// A WideLab document: {"name", "description", "model": {...}}.
struct ModelDocument {
    std::string name;
    std::string description;
    ModelConfig model;
    std::vector<ConfigIssue> warnings;  // accepted, but probably not what was meant
};

// The pieces of document reading, for documents with more sections:
// parseJsonText (config/JsonText.h) throws ConfigError for malformed JSON;
// readModelDocument reads name, description and model, appending problems (keys
// other than these and `otherSections` are unknown) and filling the result's
// warnings; throwIfAny throws ConfigError when there are problems.
ModelDocument readModelDocument(const nlohmann::json& document, std::vector<ConfigIssue>& issues,
                                const std::vector<std::string>& otherSections);
void throwIfAny(std::vector<ConfigIssue> issues, const std::string& origin);

// Parses and validates a document; throws ConfigError listing every problem.
ModelDocument parseModelDocument(const std::string& text, const std::string& origin = "");
// Reads a file (or the preset named so); throws ConfigError.
ModelDocument loadModelDocument(const std::filesystem::path& file);

std::string toString(Activation activation);

}  // namespace widelab
