// Tests of vocab/KeyRules, the one table of when a configuration key has an effect:
// a key's state (applicable, shown, why not) under hand-written documents, and the
// keys a document is warned about, in the table's order. Every expectation is read
// off the rules as docs and the core state them, worked out by hand.
#include "vocab/KeyRules.h"

#include <QtTest>

using namespace widelab;

namespace {

QString q(const std::string& text) { return QString::fromStdString(text); }

KeyState stateIn(const char* key, const nlohmann::json& document)
{
    return keyState(key, sectionsLookup(document));
}

QStringList unusedIn(const char* section, const nlohmann::json& document)
{
    QStringList keys;
    for (const UnusedKey& unused : unusedKeys(section, sectionsLookup(document)))
        keys << q(unused.key);
    return keys;
}

QString reasonOf(const char* section, const char* key, const nlohmann::json& document)
{
    for (const UnusedKey& unused : unusedKeys(section, sectionsLookup(document)))
        if (unused.key == key)
            return q(unused.reason);
    return {};
}

}  // namespace

class TestKeyRules : public QObject {
    Q_OBJECT

private slots:
    void lookupReadsSections();
    void expertKeysNeedExperts();
    void routingKeysThatNeverMatter();
    void optimizerKeysFollowTheOptimizer();
    void taskKindHidesOtherTasksKeys();
    void vocabLimitOnlyWithCountedTokenizers();
    void bpeMergesOnlyWithBpe();
    void imageInputNamesThePatches();
    void unknownValuesMatchNoChoice();
    void unwarnedRulesStillGreyTheForm();
    void warnedKeysInTableOrder();
    void everyRuleNamesKeysAndAReason();
};

void TestKeyRules::lookupReadsSections()
{
    const nlohmann::json document = {{"task", {{"kind", "shapes"}}}, {"name", "x"}};
    const KeyLookup value = sectionsLookup(document);
    QVERIFY(value("task.kind") == nlohmann::json("shapes"));
    QVERIFY(value("task.path").is_null());
    QVERIFY(value("model.experts").is_null());
    QVERIFY(value("name").is_null());       // no section
    QVERIFY(value("name.first").is_null());  // not an object
}

// With one expert every routing key is greyed out, shown, with the reason; with 4 they apply.
void TestKeyRules::expertKeysNeedExperts()
{
    const nlohmann::json dense = {{"model", {{"experts", 1}}}};
    for (const char* key : {"model.top_k", "model.capacity_factor", "model.eval_capacity_factor", "model.router_noise_std",
                            "model.balance_loss_weight", "model.router_z_loss_weight", "model.routing_groups",
                            "model.routing_priority", "model.renormalize_gates", "model.share_router"}) {
        const KeyState state = stateIn(key, dense);
        QVERIFY2(!state.applicable, key);
        QVERIFY2(state.visible, key);
        QCOMPARE(q(state.reason), QStringLiteral("without a mixture of experts (model.experts is 1)"));
    }
    const nlohmann::json moe = {{"model", {{"experts", 4}, {"capacity_factor", 1.25}, {"routing_groups", 6}}}};
    for (const char* key : {"model.top_k", "model.routing_priority", "model.share_router"})
        QVERIFY2(stateIn(key, moe).applicable, key);
    // The experts themselves and keys no rule names always apply.
    QVERIFY(stateIn("model.experts", dense).applicable);
    QVERIFY(stateIn("model.d_model", dense).applicable);
    QVERIFY(stateIn("train.steps", dense).applicable);
}

void TestKeyRules::routingKeysThatNeverMatter()
{
    // Capacity 0 in training and -1 in evaluation: no token is ever dropped, so no order decides.
    const nlohmann::json noDrop = {{"model", {{"experts", 4}, {"capacity_factor", 0}, {"eval_capacity_factor", -1}}}};
    const KeyState priority = stateIn("model.routing_priority", noDrop);
    QVERIFY(!priority.applicable);
    QCOMPARE(q(priority.reason),
             QStringLiteral("when no token is ever dropped (capacity_factor and eval_capacity_factor <= 0)"));
    // Dropping in evaluation only (0.5 > 0) is enough for it to matter.
    QVERIFY(stateIn("model.routing_priority",
                    {{"model", {{"experts", 4}, {"capacity_factor", 0}, {"eval_capacity_factor", 0.5}}}})
                .applicable);

    const KeyState share = stateIn("model.share_router", {{"model", {{"experts", 4}, {"routing_groups", 1}}}});
    QVERIFY(!share.applicable);
    QCOMPARE(q(share.reason), QStringLiteral("with one routing group: only the first block routes"));
    QVERIFY(stateIn("model.share_router", {{"model", {{"experts", 4}, {"routing_groups", 2}}}}).applicable);
}

void TestKeyRules::optimizerKeysFollowTheOptimizer()
{
    const nlohmann::json sgd = {{"train", {{"optimizer", "sgd"}}}};
    for (const char* key : {"train.beta1", "train.beta2", "train.epsilon"}) {
        const KeyState state = stateIn(key, sgd);
        QVERIFY2(!state.applicable && state.visible, key);
        QCOMPARE(q(state.reason), QStringLiteral("with the sgd optimizer"));
    }
    QVERIFY(stateIn("train.momentum", sgd).applicable);

    for (const char* optimizer : {"adamw", "lamb"}) {
        const nlohmann::json adaptive = {{"train", {{"optimizer", optimizer}}}};
        QVERIFY2(stateIn("train.beta1", adaptive).applicable, optimizer);
        const KeyState momentum = stateIn("train.momentum", adaptive);
        QVERIFY2(!momentum.applicable, optimizer);
        QCOMPARE(q(momentum.reason), QStringLiteral("except with the sgd optimizer"));
    }

    const nlohmann::json constant = {{"train", {{"schedule", "constant"}}}};
    QCOMPARE(q(stateIn("train.warmup_steps", constant).reason), QStringLiteral("with the constant schedule"));
    QVERIFY(!stateIn("train.min_learning_rate_ratio", constant).applicable);
    const nlohmann::json cosine = {{"train", {{"schedule", "warmup_cosine"}}}};
    QVERIFY(stateIn("train.warmup_steps", cosine).applicable);
    QVERIFY(stateIn("train.min_learning_rate_ratio", cosine).applicable);
}

void TestKeyRules::taskKindHidesOtherTasksKeys()
{
    const nlohmann::json listops = {{"task", {{"kind", "listops"}}}};
    const KeyState path = stateIn("task.path", listops);
    QVERIFY(!path.applicable);
    QVERIFY(!path.visible);
    QCOMPARE(q(path.reason), QStringLiteral("for ListOps, which is generated with its own fixed vocabulary and split sizes"));
    for (const char* key : {"task.min_length", "task.max_length", "task.train_size", "task.sequence_length"})
        QVERIFY2(stateIn(key, listops).visible && stateIn(key, listops).applicable, key);
    for (const char* key : {"task.crop_padding", "task.flip", "task.skip_bad_inputs", "task.tokenizer"})
        QVERIFY2(!stateIn(key, listops).visible, key);

    const nlohmann::json file = {{"task", {{"kind", "classification"}, {"tokenizer", "word"}}}};
    for (const char* key : {"task.path", "task.tokenizer", "task.vocab_limit", "task.validation_fraction"})
        QVERIFY2(stateIn(key, file).visible && stateIn(key, file).applicable, key);
    for (const char* key : {"task.min_length", "task.train_size", "task.crop_padding"})
        QVERIFY2(!stateIn(key, file).visible, key);

    // Shapes are generated: no file, split by sizes; augmented like every image task.
    const nlohmann::json shapes = {{"task", {{"kind", "shapes"}}}};
    QCOMPARE(q(stateIn("task.path", shapes).reason),
             QStringLiteral("for the generated shapes, sized by train_size, validation_size and test_size"));
    QVERIFY(!stateIn("task.path", shapes).visible);
    for (const char* key : {"task.train_size", "task.crop_padding", "task.flip"})
        QVERIFY2(stateIn(key, shapes).visible && stateIn(key, shapes).applicable, key);
    QVERIFY(!stateIn("task.sequence_length", shapes).visible);

    // CIFAR-10 reads a folder; its test split is fixed, so test_fraction is greyed, not hidden.
    const nlohmann::json cifar = {{"task", {{"kind", "cifar10"}}}};
    QVERIFY(stateIn("task.path", cifar).applicable);
    QVERIFY(!stateIn("task.train_size", cifar).visible);
    const KeyState testFraction = stateIn("task.test_fraction", cifar);
    QVERIFY(!testFraction.applicable);
    QVERIFY(testFraction.visible);
    QCOMPARE(q(testFraction.reason), QStringLiteral("for CIFAR-10 and Fashion-MNIST, whose test split is a file of its own"));
    // Fashion-MNIST is an image task read from a folder (Debian's when empty), its test split a file too.
    const nlohmann::json fashion = {{"task", {{"kind", "fashion_mnist"}}}};
    QVERIFY(stateIn("task.path", fashion).applicable && stateIn("task.crop_padding", fashion).visible);
    QVERIFY(!stateIn("task.tokenizer", fashion).visible && !stateIn("task.train_size", fashion).visible);
    QVERIFY(!stateIn("task.test_fraction", fashion).applicable);
    QVERIFY(stateIn("task.skip_bad_inputs", {{"task", {{"kind", "image_folder"}}}}).visible);
    QVERIFY(!stateIn("task.skip_bad_inputs", cifar).visible);
}

void TestKeyRules::vocabLimitOnlyWithCountedTokenizers()
{
    const KeyState bytes = stateIn("task.vocab_limit", {{"task", {{"kind", "language_model"}, {"tokenizer", "byte"}}}});
    QVERIFY(!bytes.applicable);
    QVERIFY(bytes.visible);
    QCOMPARE(q(bytes.reason), QStringLiteral("with the byte tokenizer, whose vocabulary is fixed"));
    QVERIFY(stateIn("task.vocab_limit", {{"task", {{"kind", "language_model"}, {"tokenizer", "character"}}}}).applicable);
    // For an image task it is hidden, and the first rule that says so gives the reason.
    const KeyState image = stateIn("task.vocab_limit", {{"task", {{"kind", "cifar10"}, {"tokenizer", "byte"}}}});
    QVERIFY(!image.visible);
    QCOMPARE(q(image.reason), QStringLiteral("for an image task (the sequence is the patches)"));
}

void TestKeyRules::bpeMergesOnlyWithBpe()
{
    const nlohmann::json bpe = {{"task", {{"kind", "language_model"}, {"tokenizer", "bpe"}}}};
    QVERIFY(stateIn("task.bpe_merges", bpe).applicable);
    // bpe's size is its merges: vocab_limit says nothing then.
    const KeyState limit = stateIn("task.vocab_limit", bpe);
    QVERIFY(!limit.applicable);
    QVERIFY(limit.visible);
    QCOMPARE(q(limit.reason), QStringLiteral("with the bpe tokenizer, whose size task.bpe_merges sets"));
    for (const char* tokenizer : {"byte", "character", "word"}) {
        const KeyState merges
            = stateIn("task.bpe_merges", {{"task", {{"kind", "classification"}, {"tokenizer", tokenizer}}}});
        QVERIFY2(!merges.applicable && merges.visible, tokenizer);
        QCOMPARE(q(merges.reason), QStringLiteral("unless task.tokenizer is \"bpe\""));
    }
    QVERIFY(!stateIn("task.bpe_merges", {{"task", {{"kind", "listops"}, {"tokenizer", "bpe"}}}}).visible);
    QVERIFY(!stateIn("task.bpe_merges", {{"task", {{"kind", "shapes"}, {"tokenizer", "bpe"}}}}).visible);
}

void TestKeyRules::imageInputNamesThePatches()
{
    // 32 / 4 = 8 patches a side, 64 in all; 224 / 16 = 14, 196.
    const KeyState small = stateIn("model.max_len", {{"model", {{"input", "image"}, {"image_size", 32}, {"patch_size", 4}}}});
    QVERIFY(!small.applicable);
    QCOMPARE(q(small.reason),
             QStringLiteral("with image input: the sequence is the 64 patches (image_size / patch_size squared)"));
    const nlohmann::json large = {{"model", {{"input", "image"}, {"image_size", 224}, {"patch_size", 16}}}};
    QCOMPARE(reasonOf("model", "model.max_len", large),
             QStringLiteral("with image input: the sequence is the 196 patches (image_size / patch_size squared)"));
    QCOMPARE(q(stateIn("model.vocab_size", large).reason), QStringLiteral("with image input (model.input is \"image\")"));
    QVERIFY(stateIn("model.image_size", large).visible);

    const nlohmann::json tokens = {{"model", {{"input", "tokens"}}}};
    QVERIFY(stateIn("model.max_len", tokens).applicable);
    const KeyState channels = stateIn("model.channels", tokens);
    QVERIFY(!channels.applicable);
    QVERIFY(!channels.visible);
    QCOMPARE(q(channels.reason), QStringLiteral("with token input (model.input is \"tokens\")"));
}

// A value the lookup does not know (null, or of another type) makes no comparison true
// and equals no choice: the panel's lookup may not hold every key.
void TestKeyRules::unknownValuesMatchNoChoice()
{
    const nlohmann::json empty = nlohmann::json::object();
    QVERIFY(!stateIn("model.top_k", empty).applicable);           // experts > 1 does not hold
    QVERIFY(!stateIn("model.image_size", empty).visible);         // input is not "image"
    QVERIFY(stateIn("train.beta1", empty).applicable);            // optimizer is not "sgd"
    QVERIFY(!stateIn("train.momentum", empty).applicable);        // nor is it for momentum
    QVERIFY(stateIn("task.path", empty).visible);                 // kind is neither listops nor shapes
    QVERIFY(stateIn("model.routing_priority", {{"model", {{"experts", 4}}}}).applicable);  // capacities unknown
    QVERIFY(!stateIn("model.top_k", {{"model", {{"experts", "4"}}}}).applicable);          // a text is no number
}

void TestKeyRules::unwarnedRulesStillGreyTheForm()
{
    const nlohmann::json cpu = {{"train", {{"device", "cpu"}}}};
    const KeyState bf16 = stateIn("train.bf16", cpu);
    QVERIFY(!bf16.applicable);
    QVERIFY(bf16.visible);
    QCOMPARE(q(bf16.reason), QStringLiteral("on the CPU (train.device is \"cpu\")"));
    // Not warned: with the schedule, the optimizer and the task unknown, only these four are
    // (CUDA graphs on the CPU are: true is the value a document gives it).
    QCOMPARE(unusedIn("train", cpu), (QStringList{"train.bleu_sentences", "train.min_learning_rate_ratio",
                                                  "train.momentum", "train.cuda_graph"}));
    QCOMPARE(reasonOf("train", "train.cuda_graph", cpu),
             QStringLiteral("on the CPU (train.device is \"cpu\"), which has no CUDA graphs"));
    QVERIFY(stateIn("train.bf16", {{"train", {{"device", "cuda:0"}}}}).applicable);

    // Extra path features: greyed below 3 paths, unless on (so that it can be turned off).
    const KeyState features = stateIn("model.path_extra_features", {{"model", {{"paths", 2}, {"path_extra_features", false}}}});
    QVERIFY(!features.applicable);
    QCOMPARE(q(features.reason), QStringLiteral("with fewer than 3 paths (model.paths)"));
    QVERIFY(stateIn("model.path_extra_features", {{"model", {{"paths", 2}, {"path_extra_features", true}}}}).applicable);
    QVERIFY(stateIn("model.path_extra_features", {{"model", {{"paths", 3}, {"path_extra_features", false}}}}).applicable);

    // Segments show only for a pair task, and are not warned (a disagreement is the run's error).
    QVERIFY(!stateIn("model.segments", {{"task", {{"kind", "classification"}}}}).visible);
    QVERIFY(stateIn("model.segments", {{"task", {{"kind", "pair_classification"}}}}).visible);

    // The mixed list shows only with "mixed" attention.
    QVERIFY(!stateIn("model.attention_mix", {{"model", {{"attention", "linear"}}}}).visible);
    QVERIFY(stateIn("model.attention_mix", {{"model", {{"attention", "mixed"}}}}).visible);

    const nlohmann::json model = {{"model", {{"experts", 1}, {"paths", 1}, {"attention", "full"}, {"input", "tokens"},
                                             {"head", "classification"}}}};
    QCOMPARE(unusedIn("model", model),
             (QStringList{"model.top_k", "model.capacity_factor", "model.eval_capacity_factor", "model.router_noise_std",
                          "model.balance_loss_weight", "model.balance_count", "model.router_z_loss_weight",
                          "model.routing_groups", "model.routing_priority", "model.renormalize_gates", "model.share_router",
                          "model.decoder_layers", "model.decoder_paths", "model.path_weight",
                          "model.image_size", "model.patch_size", "model.channels"}));

    // The decoder's depth shows only for an encoder-decoder; the paths' weight with more than a plain path.
    QVERIFY(!stateIn("model.decoder_layers", {{"model", {{"head", "language_model"}}}}).visible);
    QVERIFY(stateIn("model.decoder_layers", {{"model", {{"head", "translation"}}}}).applicable);
    QVERIFY(!stateIn("model.path_weight", {{"model", {{"paths", 1}}}}).applicable);
    QVERIFY(stateIn("model.path_weight", {{"model", {{"paths", 2}}}}).applicable);
    QVERIFY(stateIn("model.path_weight", {{"model", {{"paths", 1}, {"learnable_path_weights", true}}}}).applicable);
}

void TestKeyRules::warnedKeysInTableOrder()
{
    // ListOps: augmentation (a text task), skip_bad_inputs (not an image folder), the translation
    // keys, then the file keys.
    const nlohmann::json listops = {{"task", {{"kind", "listops"}, {"tokenizer", "byte"}}}};
    QCOMPARE(unusedIn("task", listops),
             (QStringList{"task.crop_padding", "task.flip", "task.crop_scale", "task.randaugment",
                          "task.randaugment_magnitude", "task.mixup", "task.skip_bad_inputs", "task.target_path",
                          "task.max_subwords", "task.path", "task.tokenizer", "task.vocab_limit", "task.bpe_merges",
                          "task.validation_fraction", "task.test_fraction"}));
    QCOMPARE(reasonOf("task", "task.flip", listops), QStringLiteral("for a text task (they augment images)"));

    // CIFAR-10: the token keys, the generated sizes, its fixed test split, RandAugment's magnitude without
    // RandAugment, skip_bad_inputs; each key once.
    const nlohmann::json cifar = {{"task", {{"kind", "cifar10"}}}};
    QCOMPARE(unusedIn("task", cifar),
             (QStringList{"task.tokenizer", "task.vocab_limit", "task.bpe_merges", "task.sequence_length",
                          "task.min_length", "task.max_length", "task.train_size", "task.validation_size", "task.test_size",
                          "task.test_fraction", "task.randaugment_magnitude", "task.skip_bad_inputs",
                          "task.target_path", "task.max_subwords"}));
    QCOMPARE(reasonOf("task", "task.randaugment_magnitude", cifar),
             QStringLiteral("without RandAugment (task.randaugment is 0)"));
    const nlohmann::json randAugmented = {{"task", {{"kind", "cifar10"}, {"randaugment", 2}}}};
    QVERIFY(!unusedIn("task", randAugmented).contains(QStringLiteral("task.randaugment_magnitude")));
    QCOMPARE(reasonOf("task", "task.train_size", cifar),
             QStringLiteral("for images read from a folder (they size generated tasks)"));

    // A language model on words: only the ListOps sizes, augmentation and the merges of bpe.
    const nlohmann::json words = {{"task", {{"kind", "language_model"}, {"tokenizer", "word"}}}};
    QCOMPARE(unusedIn("task", words),
             (QStringList{"task.crop_padding", "task.flip", "task.crop_scale", "task.randaugment",
                          "task.randaugment_magnitude", "task.mixup", "task.skip_bad_inputs", "task.target_path",
                          "task.max_subwords", "task.min_length", "task.max_length", "task.train_size",
                          "task.validation_size", "task.test_size", "task.bpe_merges"}));
    QCOMPARE(reasonOf("task", "task.min_length", words),
             QStringLiteral("for a task read from a file (they size generated ListOps)"));

    const nlohmann::json train = {{"train", {{"optimizer", "sgd"}, {"schedule", "constant"}, {"device", "cpu"}}}};
    QCOMPARE(unusedIn("train", train), (QStringList{"train.bleu_sentences", "train.warmup_steps",
                                                    "train.min_learning_rate_ratio", "train.beta1", "train.beta2",
                                                    "train.epsilon", "train.cuda_graph"}));
    // Translation: its BLEU measure counts; images: no token budget.
    QVERIFY(stateIn("train.bleu_sentences", {{"task", {{"kind", "translation"}}}}).applicable);
    QVERIFY(!stateIn("train.batch_tokens", {{"task", {{"kind", "shapes"}}}}).visible);
    QVERIFY(stateIn("task.max_subwords", {{"task", {{"kind", "translation"}}}}).applicable);
    QVERIFY(!stateIn("task.sequence_length", {{"task", {{"kind", "translation"}}}}).visible);
    QVERIFY(stateIn("task.skip_bad_inputs", {{"task", {{"kind", "translation"}}}}).applicable);
    QCOMPARE(reasonOf("train", "train.min_learning_rate_ratio", train),
             QStringLiteral("except with the warmup_cosine and warmup_linear schedules"));
    // A section asks for its own keys only.
    QVERIFY(unusedIn("model", train).contains("model.top_k"));
    QVERIFY(!unusedIn("model", train).contains("train.beta1"));
}

void TestKeyRules::everyRuleNamesKeysAndAReason()
{
    const nlohmann::json empty = nlohmann::json::object();
    for (const KeyRule& rule : keyRules()) {
        QVERIFY(!rule.keys.empty());
        QVERIFY2(!rule.why(sectionsLookup(empty)).empty(), rule.keys.front().c_str());
        for (const std::string& key : rule.keys) {
            const QString k = q(key);
            QVERIFY2(k.startsWith("model.") || k.startsWith("task.") || k.startsWith("train."), key.c_str());
        }
    }
}

QTEST_GUILESS_MAIN(TestKeyRules)
#include "tst_keyrules.moc"
