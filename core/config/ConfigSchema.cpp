#include "ConfigSchema.h"

#include "model/attention/MechanismSpec.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>

namespace widelab {
namespace {

using json = nlohmann::json;

// Generous upper bounds: a typo such as 1e9 layers is an error, not an allocation.
constexpr double kMaxWidth = 1 << 16;
constexpr double kMaxVocab = 10'000'000;
constexpr double kMaxLen = 1 << 20;
constexpr double kMaxImageSize = 4096;
constexpr double kMaxLayers = 1024;
constexpr double kMaxHeads = 4096;
constexpr double kMaxExperts = 4096;
constexpr double kMaxPaths = 64;
constexpr double kBig = static_cast<double>(std::int64_t{1} << 40);

KeySpec integer(std::string key, double min, double max, std::int64_t value, std::string description)
{
    return integerKey(std::move(key), min, max, value, std::move(description));
}

KeySpec number(std::string key, double min, double max, double value, std::string description)
{
    return numberKey(std::move(key), min, max, value, std::move(description));
}

KeySpec boolean(std::string key, bool value, std::string description)
{
    return booleanKey(std::move(key), value, std::move(description));
}

KeySpec choice(std::string key, std::vector<std::string> choices, std::string description, std::size_t defaultIndex = 0)
{
    return choiceKey(std::move(key), std::move(choices), std::move(description), defaultIndex);
}

KeySpec text(std::string key, KeyType type, json value, std::string description)
{
    KeySpec s;
    s.key = std::move(key);
    s.type = type;
    s.defaultValue = std::move(value);
    s.description = std::move(description);
    return s;
}

KeySpec derived(KeySpec spec, std::string rule, std::vector<std::string> dependsOn)
{
    spec.derivedRule = std::move(rule);
    spec.dependsOn = std::move(dependsOn);
    return spec;
}

// model.attention, model.attention_mix and every registered mechanism's keys.
std::vector<KeySpec> attentionKeys()
{
    std::vector<KeySpec> keys = {
        choice("model.attention", attentionChoices(),
               "how each head mixes the values: a mechanism of the Wide Attention paper, or mixed"),
        text("model.attention_mix", KeyType::TextList, json::array(),
             "mixed attention: mechanisms sharing each layer's heads equally, in order"),
    };
    for (const MechanismSpec* mechanism : attentionMechanisms())
        keys.insert(keys.end(), mechanism->keys.begin(), mechanism->keys.end());
    return keys;
}

std::vector<KeySpec> makeSchema()
{
    std::vector<KeySpec> keys = {
        text("name", KeyType::Text, "", "a short name for the run, shown in lists and plots"),
        text("description", KeyType::Text, "", "what the run is about: free text, kept with the run"),

        integer("model.vocab_size", 2, kMaxVocab, 256, "token vocabulary size; holds the tokenizer's vocabulary"),
        integer("model.max_len", 1, kMaxLen, 512, "longest input in tokens, not counting the CLS token; image input: the number of patches"),
        choice("model.input", {"tokens", "image"}, "token ids, or images cut into patches (ViT)"),
        integer("model.image_size", 1, kMaxImageSize, 32, "image input: height and width in pixels, a multiple of patch_size"),
        integer("model.patch_size", 1, kMaxImageSize, 4, "image input: height and width of a patch in pixels"),
        integer("model.channels", 1, 3, 3, "image input: 1 (grey) or 3 (RGB)"),
        integer("model.d_model", 1, kMaxWidth, 256, "width of the residual stream"),
        integer("model.embedding_dim", 0, kMaxWidth, 0, "factorised token embedding size; 0: embed straight into d_model"),
        integer("model.layers", 1, kMaxLayers, 6, "number of Transformer blocks"),
        integer("model.heads", 1, kMaxHeads, 8, "attention heads per block"),
        derived(integer("model.head_dim", 1, kMaxWidth, 32, "width of each attention head"), "d_model / heads",
                {"model.d_model", "model.heads"}),
        derived(integer("model.ffn_dim", 1, kMaxWidth * 16, 1024, "hidden width of the FFN and of each expert"),
                "4 * d_model", {"model.d_model"}),
        choice("model.activation", {"gelu", "relu", "silu"}, "nonlinearity of the FFN and the experts"),
        number("model.dropout", 0.0, 0.99, 0.1, "dropout on embeddings, attention probabilities and sublayer outputs"),

        choice("model.head", {"classification", "language_model", "translation", "masked_lm"},
               "one label per sequence, next-token logits, an encoder-decoder's target tokens, or every "
               "position's token seen from both sides (masked-LM pretraining)"),
        derived(integer("model.decoder_layers", 1, kMaxLayers, 6,
                        "translation: blocks of the decoder (layers sets the encoder's)"),
                "layers", {"model.layers"}),
        derived(integer("model.decoder_paths", 1, kMaxPaths, 1,
                        "translation: paths in the decoder's sublayers; 1: plain sublayers, as the Multi-Path "
                        "paper's decoder"),
                "paths", {"model.paths"}),
        choice("model.pooling", {"cls", "mean"}, "classification: read a CLS token or average the tokens"),
        boolean("model.pooler", false, "classification: a tanh dense layer on the pooled vector"),
        integer("model.num_classes", 2, kMaxVocab, 10, "classification: number of labels"),
        integer("model.segments", 0, 8, 0,
                "text pairs: segment embeddings (2: the first text and the second, each token's read from the "
                "separators before it); 0: none"),

        integer("model.experts", 1, kMaxExperts, 1, "1: a dense FFN; more: a mixture of experts"),
        derived(integer("model.top_k", 1, kMaxExperts, 1, "experts each token is routed to"), "min(2, experts)",
                {"model.experts"}),
        number("model.capacity_factor", -1.0e9, 1.0e9, 1.2, "tokens an expert takes in training, as a factor; <= 0: never drop"),
        derived(number("model.eval_capacity_factor", -1.0e9, 1.0e9, 2.0,
                       "the capacity factor in evaluation, inspection and probes; <= 0: never drop (a language "
                       "model's and a decoder's default: then no prediction depends on a later token)"),
                "2 for a classifier, else 0", {"model.head"}),
        derived(number("model.router_noise_std", 0.0, 1.0e3, 0.0, "Gaussian noise on router logits while training (0 with one expert)"),
                "1 / experts", {"model.experts"}),
        number("model.balance_loss_weight", 0.0, 1.0e3, 0.01, "weight of the load-balancing loss"),
        choice("model.balance_count", {"top1", "topk"},
               "the load-balancing loss counts a token at its top-1 expert (Switch, V-MoE) or at each of its top_k "
               "(WideNet Eq. 4 as printed: a K-hot h, so a balanced router scores K rather than 1)"),
        number("model.router_z_loss_weight", 0.0, 1.0e3, 0.0,
               "weight of the router z-loss (mean squared log-sum-exp of the router logits); 0: off"),
        derived(integer("model.routing_groups", 1, kMaxLayers, 6, "groups of consecutive blocks that share one routing"),
                "layers", {"model.layers"}),
        choice("model.routing_priority", {"position", "batch"}, "which tokens fill a full expert first"),
        boolean("model.renormalize_gates", false, "scale the top-k gates to sum to 1"),
        boolean("model.share_router", true, "one router for every block"),

        boolean("model.share_attention", false, "one attention module for every block"),
        boolean("model.share_ffn", false, "one FFN or mixture of experts for every block"),
        boolean("model.share_layernorm", false, "one pair of LayerNorms for every block"),

        integer("model.paths", 1, kMaxPaths, 1, "parallel paths in every sublayer (Multi-Path Transformer)"),
        boolean("model.path_norm", false, "a LayerNorm at the end of every path"),
        boolean("model.learnable_path_weights", false, "train the weights of the paths' sum"),
        choice("model.path_weight", {"inverse_sqrt_2n", "inverse_n", "inverse_sqrt_n"},
               "each path's weight alpha for n paths, fixed or the learnable weights' start: 1/sqrt(2n) "
               "(the paper's start), 1/n (its \"+ Multi-Path\"), 1/sqrt(n) (its \"+ PathNorm\")"),
        boolean("model.path_extra_features", false, "extra features, each the mean of n-1 paths"),

        choice("task.kind", {"listops", "classification", "language_model", "image_folder", "cifar10", "shapes",
                             "translation", "fashion_mnist", "masked_lm", "pair_classification"},
               "generated ListOps, a data file, a folder of images, CIFAR-10, generated shapes, pairs of "
               "texts to translate, Fashion-MNIST (Debian's dataset-fashion-mnist), the hidden tokens of a "
               "text file (masked-LM pretraining), or a file of labelled text pairs (label TAB first TAB "
               "second, as MNLI)"),
        text("task.path", KeyType::FilePath, "",
             "the data file, image folder or CIFAR-10 folder of the task; translation: source TAB target lines, "
             "or the source lines when task.target_path is given; fashion_mnist: the folder of its IDX files, "
             "empty for Debian's (/usr/share/datasets/fashion-mnist)"),
        text("task.target_path", KeyType::FilePath, "",
             "translation: the target lines, line by line with task.path's sources; empty: task.path is a TSV"),
        choice("task.tokenizer", {"byte", "character", "word", "bpe"}, "how file texts become tokens"),
        integer("task.vocab_limit", 3, 10'000'000, 8000, "character and word tokenizers: the most tokens kept"),
        integer("task.bpe_merges", 0, 1'000'000, 8000,
                "bpe tokenizer: merges learned from the training texts; its vocabulary is 260 + merges ids"),
        integer("task.sequence_length", 0, kBig, 0, "longer texts are cut; 0: model.max_len"),
        number("task.validation_fraction", 0.0, 0.5, 0.05, "share of the file held out for validation"),
        number("task.test_fraction", 0.0, 0.5, 0.05, "share of the file held out for testing"),
        integer("task.min_length", 1, 1 << 20, 16, "ListOps: shortest expression in tokens"),
        integer("task.max_length", 1, 1 << 20, 128, "ListOps: longest expression in tokens"),
        integer("task.train_size", 1, kBig, 20000, "ListOps and shapes: examples in the training split"),
        integer("task.validation_size", 1, kBig, 1000, "ListOps and shapes: examples in the validation split"),
        integer("task.test_size", 1, kBig, 1000, "ListOps and shapes: examples in the test split"),
        integer("task.seed", 0, kBig, 0, "seed of the ListOps and shapes generators and of the file and folder splits"),
        integer("task.crop_padding", 0, 1024, 4, "images: random crop after padding by this many pixels while training; 0: off"),
        boolean("task.flip", true, "images: random horizontal flip while training"),
        number("task.crop_scale", 0.0, 1.0, 0.0,
               "images: Inception-style crop while training, a random region of at least this share of the area "
               "(aspect 3/4 to 4/3) resized to the image (the Inception recipe's 0.08); 0: off"),
        integer("task.randaugment", 0, 10, 0,
                "images: RandAugment while training, this many operations per picture drawn from 14 (shears, "
                "translations, rotation, brightness, colour, contrast, sharpness, posterize, solarize, "
                "autocontrast, equalize, identity); 0: off"),
        integer("task.randaugment_magnitude", 0, 30, 9,
                "images: RandAugment's magnitude on its 0-30 scale (the paper's ImageNet ResNet-50: 9)"),
        number("task.mixup", 0.0, 1.0, 0.0,
               "images: Mixup while training, each picture mixed with another by a weight from Beta(alpha, alpha) "
               "with this alpha, labels alike (WideNet's 0.5); 0: off"),
        integer("task.max_subwords", 1, 1 << 20, 250,
                "translation: pairs with a side longer than this many subword units are left out"),
        boolean("task.skip_bad_inputs", false,
                "image folders and translation pairs: leave out, counted, the inputs that cannot be read, rather "
                "than stop"),

        choice("train.optimizer", {"adamw", "lamb", "sgd"}, "the optimizer"),
        number("train.learning_rate", 1e-12, 100.0, 1e-3, "peak learning rate, reached after warmup"),
        number("train.weight_decay", 0.0, 10.0, 0.01, "decoupled weight decay on matrices"),
        number("train.beta1", 0.0, 0.999999, 0.9, "AdamW and LAMB: decay of the first moment"),
        number("train.beta2", 0.0, 0.999999999, 0.999, "AdamW and LAMB: decay of the second moment"),
        number("train.epsilon", 1e-20, 1.0, 1e-8, "AdamW and LAMB: added to the denominator"),
        number("train.momentum", 0.0, 0.999999, 0.9, "SGD: momentum"),
        choice("train.schedule", {"constant", "warmup_cosine", "inverse_sqrt", "warmup_rsqrt", "warmup_linear"},
               "how the learning rate moves over training", 1),
        integer("train.warmup_steps", 0, kBig, 100, "linear warmup to the peak learning rate"),
        number("train.min_learning_rate_ratio", 0.0, 1.0, 0.0, "cosine and linear: the final rate as a fraction of the peak"),
        integer("train.steps", 1, kBig, 2000, "optimizer steps in the whole run"),
        integer("train.batch_size", 1, 1 << 20, 32, "sequences per step"),
        integer("train.batch_tokens", 0, 1 << 30, 0,
                "> 0: a training batch takes examples up to this many tokens (a translation pair counts its longer "
                "side) instead of batch_size examples"),
        number("train.gradient_clip", -1.0, 1e9, 1.0, "clip the global gradient norm; <= 0: off"),
        number("train.label_smoothing", 0.0, 0.99, 0.0, "target probability spread over the other classes"),
        text("train.device", KeyType::Device, "auto", "auto, cpu, cuda or cuda:N"),
        boolean("train.bf16", true, "autocast to bfloat16 on CUDA"),
        boolean("train.cuda_graph", false,
                "CUDA: capture each training step once per batch shape and replay it, padding text batches to a few "
                "lengths; ordinary steps where a run cannot"),
        integer("train.threads", 0, 4096, 0, "intra-op CPU threads; 0: every core"),
        integer("train.processes", 1, 1024, 1,
                "processes sharing each batch on this machine (distributed; a launcher's count wins)"),
        boolean("train.expert_parallel", false,
                "distributed runs: split each mixture layer's experts over the processes instead of copying them"),
        integer("train.seed", 0, kBig, 0, "seed of initialisation, dropout, router noise and batch order"),
        integer("train.log_every", 1, kBig, 10, "steps between snapshots and metrics lines"),
        integer("train.eval_every", 1, kBig, 200, "steps between validation passes"),
        integer("train.eval_batches", 0, kBig, 20, "validation batches per evaluation; 0: the whole split"),
        choice("train.select_best", {"loss", "accuracy"},
               "the validation that makes checkpoints/best.pt, the model studies test: the lowest loss, or the "
               "highest accuracy (the Wide Attention paper's rule)"),
        integer("train.bleu_sentences", 0, kBig, 200,
                "translation: validation sentences translated (greedily) for BLEU and chrF at each evaluation; 0: none"),
        integer("train.checkpoint_every", 1, kBig, 200, "steps between checkpoints"),
        integer("train.keep_last", 1, 1000, 3, "checkpoints kept"),
        integer("train.probe_every", 0, kBig, 0, "steps between probe inspections; 0: with every validation"),
        number("train.alarm_expert_share", 0.0, 1.0, 0.6,
               "warn when one expert takes more than this share of a block's tokens (collapse)"),
        integer("train.collective_timeout_s", 1, 86400, 60,
                "distributed runs: seconds a rank waits for the others before it stops with an error"),
        text("train.init_from", KeyType::RunFolder, "",
             "start from another run's weights: RUN_DIR (its latest checkpoint) or RUN_DIR:STEP, :best, :latest; "
             "the body must match, a head for another task starts anew"),
        text("train.probes", KeyType::TextList, json::array(),
             "texts inspected during training; images: validation:N or an image file"),
    };
    const auto at = std::find_if(keys.begin(), keys.end(), [](const KeySpec& k) { return k.key == "model.dropout"; });
    const std::vector<KeySpec> attention = attentionKeys();
    keys.insert(at + 1, attention.begin(), attention.end());
    return keys;
}

}  // namespace

std::string KeySpec::section() const
{
    const auto dot = key.find('.');
    return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

std::string KeySpec::name() const
{
    const auto dot = key.find('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

const std::vector<KeySpec>& configSchema()
{
    static const std::vector<KeySpec> schema = makeSchema();
    return schema;
}

const KeySpec& keySpec(const std::string& key)
{
    static const std::unordered_map<std::string, const KeySpec*> byKey = [] {
        std::unordered_map<std::string, const KeySpec*> map;
        for (const KeySpec& spec : configSchema())
            map.emplace(spec.key, &spec);
        return map;
    }();
    const auto it = byKey.find(key);
    if (it == byKey.end())
        throw std::out_of_range("no configuration key " + key);
    return *it->second;
}

std::string toString(KeyType type)
{
    static const char* const names[] = {"integer", "number", "boolean", "choice", "text", "file path", "list of texts", "device", "run folder"};
    return names[static_cast<int>(type)];
}

KeySpec integerKey(std::string key, double min, double max, std::int64_t value, std::string description)
{
    KeySpec s;
    s.key = std::move(key);
    s.type = KeyType::Integer;
    s.min = min;
    s.max = max;
    s.defaultValue = value;
    s.description = std::move(description);
    return s;
}

KeySpec numberKey(std::string key, double min, double max, double value, std::string description)
{
    KeySpec s = integerKey(std::move(key), min, max, 0, std::move(description));
    s.type = KeyType::Number;
    s.defaultValue = value;
    return s;
}

KeySpec booleanKey(std::string key, bool value, std::string description)
{
    KeySpec s;
    s.key = std::move(key);
    s.type = KeyType::Boolean;
    s.defaultValue = value;
    s.description = std::move(description);
    return s;
}

KeySpec choiceKey(std::string key, std::vector<std::string> choices, std::string description, std::size_t defaultIndex)
{
    KeySpec s;
    s.key = std::move(key);
    s.type = KeyType::Choice;
    s.defaultValue = choices.at(defaultIndex);
    s.choices = std::move(choices);
    s.description = std::move(description);
    return s;
}

}  // namespace widelab
