#include "KeyRules.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

namespace widelab {
namespace {

// The value of `key` when it is a number; NaN, which no comparison holds for, when it is not.
double number(const KeyLookup& value, const char* key)
{
    const nlohmann::json v = value(key);
    return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

bool is(const KeyLookup& value, const char* key, const char* choice)
{
    const nlohmann::json v = value(key);
    return v.is_string() && v.get<std::string>() == choice;
}

bool on(const KeyLookup& value, const char* key)
{
    const nlohmann::json v = value(key);
    return v.is_boolean() && v.get<bool>();
}

bool mixtureOfExperts(const KeyLookup& v) { return number(v, "model.experts") > 1; }
bool imageInput(const KeyLookup& v) { return is(v, "model.input", "image"); }
bool imageTask(const KeyLookup& v)
{
    return is(v, "task.kind", "image_folder") || is(v, "task.kind", "cifar10") || is(v, "task.kind", "shapes")
           || is(v, "task.kind", "fashion_mnist");
}
bool listOps(const KeyLookup& v) { return is(v, "task.kind", "listops"); }
bool translation(const KeyLookup& v) { return is(v, "task.kind", "translation"); }
// Classification or a language model: a task read from a text file.
bool fileTask(const KeyLookup& v) { return !imageTask(v) && !listOps(v); }

std::string patchesReason(const KeyLookup& v)
{
    const double image = number(v, "model.image_size"), patch = number(v, "model.patch_size");
    if (!(patch >= 1.0 && image >= 1.0))
        return "with image input: the sequence is the patches (image_size / patch_size squared)";
    const auto side = static_cast<std::int64_t>(image) / static_cast<std::int64_t>(patch);
    return "with image input: the sequence is the " + std::to_string(side * side)
           + " patches (image_size / patch_size squared)";
}

std::vector<KeyRule> makeRules()
{
    using V = const KeyLookup&;
    return {
        // ---- model
        {{"model.top_k", "model.capacity_factor", "model.eval_capacity_factor", "model.router_noise_std",
          "model.balance_loss_weight", "model.balance_count", "model.router_z_loss_weight", "model.routing_groups",
          "model.routing_priority", "model.renormalize_gates", "model.share_router"},
         [](V v) { return mixtureOfExperts(v); },
         "without a mixture of experts (model.experts is 1)"},
        {{"model.routing_priority"},
         [](V v) {
             return !(mixtureOfExperts(v) && number(v, "model.capacity_factor") <= 0.0
                      && number(v, "model.eval_capacity_factor") <= 0.0);
         },
         "when no token is ever dropped (capacity_factor and eval_capacity_factor <= 0)"},
        {{"model.share_router"},
         [](V v) { return !(mixtureOfExperts(v) && number(v, "model.routing_groups") == 1.0); },
         "with one routing group: only the first block routes"},
        // Not warned: the model section is read without the task's, and a document whose
        // segments and task disagree is an error (RunConfig's crossCheck).
        {{"model.segments"},
         [](V v) { return is(v, "task.kind", "pair_classification"); },
         "except for text pairs (task.kind \"pair_classification\")", WhenUnused::Hidden, false},
        {{"model.pooling", "model.pooler", "model.num_classes"},
         [](V v) { return is(v, "model.head", "classification"); },
         "without a classification head"},
        {{"model.decoder_layers", "model.decoder_paths"},
         [](V v) { return is(v, "model.head", "translation"); },
         "without a decoder (model.head is not \"translation\")", WhenUnused::Hidden},
        {{"model.path_weight"},
         [](V v) {
             return number(v, "model.paths") > 1 || on(v, "model.path_norm") || on(v, "model.learnable_path_weights")
                    || on(v, "model.path_extra_features");
         },
         "with one plain path (model.paths 1, no path_norm or learnable weights)"},
        // The sequence is the patches, whatever max_len says: a given value other than their
        // number says something untrue.
        {{"model.max_len"}, [](V v) { return !imageInput(v); }, "", WhenUnused::Greyed, true, patchesReason},
        {{"model.vocab_size"}, [](V v) { return !imageInput(v); }, "with image input (model.input is \"image\")"},
        {{"model.image_size", "model.patch_size", "model.channels"},
         [](V v) { return imageInput(v); },
         "with token input (model.input is \"tokens\")", WhenUnused::Hidden},
        // Applies while on, so that it can be turned off. Not warned: on with fewer than 3
        // paths is refused (ModelConfig::validate), and off is its default.
        {{"model.path_extra_features"},
         [](V v) { return number(v, "model.paths") >= 3.0 || on(v, "model.path_extra_features"); },
         "with fewer than 3 paths (model.paths)", WhenUnused::Greyed, false},
        // Not warned: a list given with another mechanism is refused (ModelConfig::validate).
        {{"model.attention_mix"},
         [](V v) { return is(v, "model.attention", "mixed"); },
         "unless model.attention is \"mixed\"", WhenUnused::Hidden, false},

        // ---- task
        {{"task.tokenizer", "task.vocab_limit", "task.bpe_merges", "task.sequence_length", "task.min_length",
          "task.max_length"},
         [](V v) { return !imageTask(v); },
         "for an image task (the sequence is the patches)", WhenUnused::Hidden},
        {{"task.path", "task.validation_fraction", "task.test_fraction"},
         [](V v) { return !is(v, "task.kind", "shapes"); },
         "for the generated shapes, sized by train_size, validation_size and test_size", WhenUnused::Hidden},
        {{"task.train_size", "task.validation_size", "task.test_size"},
         [](V v) { return !(imageTask(v) && !is(v, "task.kind", "shapes")); },
         "for images read from a folder (they size generated tasks)", WhenUnused::Hidden},
        {{"task.test_fraction"},
         [](V v) { return !is(v, "task.kind", "cifar10") && !is(v, "task.kind", "fashion_mnist"); },
         "for CIFAR-10 and Fashion-MNIST, whose test split is a file of its own"},
        {{"task.crop_padding", "task.flip", "task.crop_scale", "task.randaugment", "task.randaugment_magnitude",
          "task.mixup"},
         [](V v) { return imageTask(v); },
         "for a text task (they augment images)", WhenUnused::Hidden},
        {{"task.randaugment_magnitude"},
         [](V v) { return number(v, "task.randaugment") > 0; },
         "without RandAugment (task.randaugment is 0)"},
        {{"task.skip_bad_inputs"},
         [](V v) { return is(v, "task.kind", "image_folder") || translation(v); },
         "except for an image folder or translation pairs (the inputs it leaves out so far)", WhenUnused::Hidden},
        {{"task.target_path", "task.max_subwords"},
         [](V v) { return translation(v); },
         "except for translation (they name and filter its pairs)", WhenUnused::Hidden},
        {{"task.sequence_length"},
         [](V v) { return !translation(v); },
         "for translation, whose pairs task.max_subwords filters rather than cuts", WhenUnused::Hidden},
        {{"task.path", "task.tokenizer", "task.vocab_limit", "task.bpe_merges", "task.validation_fraction",
          "task.test_fraction"},
         [](V v) { return !listOps(v); },
         "for ListOps, which is generated with its own fixed vocabulary and split sizes", WhenUnused::Hidden},
        {{"task.min_length", "task.max_length", "task.train_size", "task.validation_size", "task.test_size"},
         [](V v) { return !fileTask(v); },
         "for a task read from a file (they size generated ListOps)", WhenUnused::Hidden},
        {{"task.vocab_limit"},
         [](V v) { return !(fileTask(v) && is(v, "task.tokenizer", "byte")); },
         "with the byte tokenizer, whose vocabulary is fixed"},
        {{"task.vocab_limit"},
         [](V v) { return !(fileTask(v) && is(v, "task.tokenizer", "bpe")); },
         "with the bpe tokenizer, whose size task.bpe_merges sets"},
        {{"task.bpe_merges"},
         [](V v) { return !(fileTask(v) && !is(v, "task.tokenizer", "bpe")); },
         "unless task.tokenizer is \"bpe\""},

        // ---- train
        {{"train.bleu_sentences"}, [](V v) { return translation(v); }, "except for translation", WhenUnused::Hidden},
        {{"train.batch_tokens"},
         [](V v) { return !imageTask(v); },
         "for an image task (a batch is a number of images)", WhenUnused::Hidden},
        {{"train.warmup_steps"}, [](V v) { return !is(v, "train.schedule", "constant"); }, "with the constant schedule"},
        {{"train.min_learning_rate_ratio"},
         [](V v) { return is(v, "train.schedule", "warmup_cosine") || is(v, "train.schedule", "warmup_linear"); },
         "except with the warmup_cosine and warmup_linear schedules"},
        {{"train.beta1", "train.beta2", "train.epsilon"},
         [](V v) { return !is(v, "train.optimizer", "sgd"); },
         "with the sgd optimizer"},
        {{"train.momentum"}, [](V v) { return is(v, "train.optimizer", "sgd"); }, "except with the sgd optimizer"},
        // The trainer autocasts on CUDA only. Not warned: bf16 is on by default, so the one
        // value a document can give it on the CPU is off, which is what happens anyway.
        {{"train.bf16"},
         [](V v) { return !is(v, "train.device", "cpu"); },
         "on the CPU (train.device is \"cpu\")", WhenUnused::Greyed, false},
        {{"train.cuda_graph"},
         [](V v) { return !is(v, "train.device", "cpu"); },
         "on the CPU (train.device is \"cpu\"), which has no CUDA graphs", WhenUnused::Greyed},
    };
}

bool names(const KeyRule& rule, const std::string& key)
{
    return std::find(rule.keys.begin(), rule.keys.end(), key) != rule.keys.end();
}

}  // namespace

KeyLookup sectionsLookup(const nlohmann::json& document)
{
    return [&document](const std::string& key) -> nlohmann::json {
        const std::size_t dot = key.find('.');
        if (dot == std::string::npos || !document.is_object())
            return nullptr;
        const auto section = document.find(key.substr(0, dot));
        if (section == document.end() || !section->is_object())
            return nullptr;
        const auto value = section->find(key.substr(dot + 1));
        return value == section->end() ? nlohmann::json() : *value;
    };
}

const std::vector<KeyRule>& keyRules()
{
    static const std::vector<KeyRule> rules = makeRules();
    return rules;
}

KeyState keyState(const std::string& key, const KeyLookup& value)
{
    KeyState state;
    for (const KeyRule& rule : keyRules()) {
        if (!names(rule, key) || rule.applies(value))
            continue;
        if (state.applicable)
            state.reason = rule.why(value);
        state.applicable = false;
        if (rule.form == WhenUnused::Hidden)
            state.visible = false;
    }
    return state;
}

std::vector<UnusedKey> unusedKeys(const std::string& section, const KeyLookup& value)
{
    const std::string prefix = section + ".";
    std::vector<UnusedKey> unused;
    std::set<std::string> listed;
    for (const KeyRule& rule : keyRules()) {
        if (!rule.warns)
            continue;
        const bool inSection = std::any_of(rule.keys.begin(), rule.keys.end(),
                                           [&](const std::string& key) { return key.starts_with(prefix); });
        if (!inSection || rule.applies(value))
            continue;
        const std::string reason = rule.why(value);
        for (const std::string& key : rule.keys)
            if (key.starts_with(prefix) && listed.insert(key).second)
                unused.push_back({key, reason});
    }
    return unused;
}

}  // namespace widelab
