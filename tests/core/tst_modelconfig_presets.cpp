// Tests core/config's size bounds and warnings (absurd models, the largest model within the
// bound, keys without effect, image sequences) and the shipped presets: they load without
// warnings, mean what they say, and are found by name or file.
#include "ModelConfigTestSupport.h"

using namespace widelab;
using namespace widelab::modelconfigtest;

namespace {

ModelDocument preset(const std::string& name) { return loadModelDocument(resolveConfigPath(name)); }

}  // namespace

class TestModelConfigPresets : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Size bounds and warnings.
    void absurdModelRefused_data();
    void absurdModelRefused();
    void largestModelWithinTheBound();
    void keysWithoutEffectWarn_data();
    void keysWithoutEffectWarn();
    void imageSequenceIsThePatches_data();
    void imageSequenceIsThePatches();

    // Presets and lookup.
    void shippedPresetsLoad();
    void shippedPresetsHaveNoWarnings();
    void requiredPresetExists_data();
    void requiredPresetExists();
    void widenetSemantics();
    void vitMoeSemantics();
    void albertSemantics();
    void wideAttentionPresets_data();
    void wideAttentionPresets();
    void multipathPresets_data();
    void multipathPresets();
    void resolveUnknownName();
    void resolveKnownNameAndFile();
    void loadMissingFile();
};

// ---------------------------------------------------------------- sizes and warnings

void TestModelConfigPresets::absurdModelRefused_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("key");

    // 1024 x 4096 experts x 2 x 65536 x 262144: about 1.4e17 parameters, each key within its own range.
    QTest::newRow("1e17 experts") << R"({"layers": 1024, "experts": 4096, "top_k": 2, "d_model": 65536, "heads": 1,
                                         "head_dim": 16, "ffn_dim": 262144})"
                                  << "model.experts";
    QTest::newRow("dense ffn") << R"({"layers": 1024, "d_model": 65536, "heads": 1, "head_dim": 16,
                                      "ffn_dim": 1048576})"
                               << "model.ffn_dim";
    // Attention at its widest per block (4 x D x H x A = 2^34), in 1024 blocks.
    QTest::newRow("attention") << R"({"layers": 1024, "d_model": 65536, "heads": 1, "head_dim": 65536,
                                      "ffn_dim": 16})"
                               << "model.heads";
}

void TestModelConfigPresets::absurdModelRefused()
{
    QFETCH(QString, model);
    QFETCH(QString, key);

    const auto error = documentError("{\"model\": " + model.toStdString() + "}");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().key), key);
    QVERIFY2(q(error->issues().front().reason).contains(QStringLiteral("more than the 1e+12 WideLab builds")),
             qPrintable(q(error->issues().front().reason)));
}

void TestModelConfigPresets::largestModelWithinTheBound()
{
    // Every key at its maximum still counts without overflow: the count is
    // refused for its size, not wrapped around into a small or negative one.
    std::vector<ConfigIssue> issues;
    ModelConfig c;
    c.vocabSize = 10'000'000;
    c.maxLen = 1 << 20;
    c.dModel = 1 << 16;
    c.embeddingDim = 1 << 16;
    c.layers = 1024;
    c.heads = 4;
    c.headDim = 1 << 14;
    c.ffnDim = 1 << 20;
    c.experts = 4096;
    c.topK = 4096;
    c.numClasses = 10'000'000;
    c.pooler = true;
    c.validate(issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));
    const ModelCost cost = modelCost(c);
    const double expected = 1024.0 * 4096.0 * (2.0 * 65536.0 * 1048576.0 + 1048576.0 + 65536.0);
    QVERIFY(cost.part("experts").stored > 0);
    QCOMPARE(double(cost.part("experts").stored), expected);
    QVERIFY(cost.total.stored > cost.part("experts").stored);
    QVERIFY(cost.total.applied > 0 && cost.encoderMatrixParameters > 0);

    // And the document with these keys is refused for its size.
    const auto error = documentError(nlohmann::json{{"model", c.toJson()}}.dump());
    QVERIFY(error.has_value());
    QVERIFY2(QString::fromUtf8(error->what()).contains(QStringLiteral("more than the 1e+12")), error->what());

    // A model just under the bound is accepted.
    const auto fine = documentError(R"({"model": {"layers": 64, "d_model": 8192, "heads": 64, "ffn_dim": 32768,
                                                   "experts": 16}})");
    QVERIFY2(!fine.has_value(), fine ? fine->what() : "");
}

void TestModelConfigPresets::keysWithoutEffectWarn_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QStringList>("keys");  // the warnings, by key, in order

    QTest::newRow("dense model, routing keys")
        << R"({"capacity_factor": 2, "routing_priority": "batch", "share_router": false, "renormalize_gates": true})"
        << QStringList{"model.capacity_factor", "model.routing_priority", "model.renormalize_gates",
                       "model.share_router"};
    // A key at its default (derived or not) changes nothing: a resolved document warns of nothing.
    QTest::newRow("dense model, keys at their defaults")
        << R"({"top_k": 1, "router_noise_std": 0, "routing_groups": 6, "share_router": true, "capacity_factor": 1.2})"
        << QStringList{};
    QTest::newRow("resolved dense model") << q(ModelConfig().toJson().dump()) << QStringList{};
    QTest::newRow("resolved language model")
        << q([] {
               ModelConfig c;
               c.head = HeadKind::LanguageModel;
               c.evalCapacityFactor = 0.0;  // a language model's own default
               return c.toJson().dump();
           }())
        << QStringList{};
    QTest::newRow("language model, pooling")
        << R"({"head": "language_model", "pooling": "mean", "num_classes": 4})"
        << QStringList{"model.pooling", "model.num_classes"};
    QTest::newRow("nothing ever dropped") << R"({"experts": 4, "capacity_factor": 0, "eval_capacity_factor": -1,
                                                 "routing_priority": "batch"})"
                                          << QStringList{"model.routing_priority"};
    QTest::newRow("one routing group") << R"({"experts": 4, "routing_groups": 1, "share_router": false})"
                                       << QStringList{"model.share_router"};
    QTest::newRow("mixture of experts, routing keys") << R"({"experts": 4, "capacity_factor": 2, "top_k": 1})"
                                                      << QStringList{};
    QTest::newRow("defaults") << "{}" << QStringList{};
    QTest::newRow("image input, max_len and vocab_size given")
        << R"({"input": "image", "max_len": 100, "vocab_size": 300})"
        << QStringList{"model.max_len", "model.vocab_size"};
    QTest::newRow("image input, max_len equal to the patches") << R"({"input": "image", "max_len": 64})"
                                                               << QStringList{};
    QTest::newRow("token input, image keys") << R"({"image_size": 64, "patch_size": 8, "channels": 1})"
                                             << QStringList{"model.image_size", "model.patch_size", "model.channels"};
    QTest::newRow("resolved image model")
        << q([] { ModelConfig c; c.input = InputKind::Image; c.maxLen = c.patches(); return c.toJson().dump(); }())
        << QStringList{};
}

void TestModelConfigPresets::imageSequenceIsThePatches_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<qint64>("patches");
    QTest::addColumn<qint64>("positions");  // with the CLS token when pooling is cls

    QTest::newRow("32 / 4, cls") << R"({"input": "image"})" << qint64(64) << qint64(65);
    QTest::newRow("32 / 4, mean") << R"({"input": "image", "pooling": "mean"})" << qint64(64) << qint64(64);
    QTest::newRow("224 / 16, cls, max_len ignored") << R"({"input": "image", "image_size": 224, "patch_size": 16,
                                                          "max_len": 7})"
                                                    << qint64(196) << qint64(197);
    QTest::newRow("one patch") << R"({"input": "image", "image_size": 8, "patch_size": 8, "pooling": "mean"})"
                               << qint64(1) << qint64(1);
}

void TestModelConfigPresets::imageSequenceIsThePatches()
{
    QFETCH(QString, json);
    QFETCH(qint64, patches);
    QFETCH(qint64, positions);
    std::vector<ConfigIssue> issues;
    const ModelConfig c = readModel(json.toStdString(), issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));
    QVERIFY(c.imageInput());
    QCOMPARE(qint64(c.patches()), patches);
    QCOMPARE(qint64(c.maxLen), patches);
    QCOMPARE(qint64(c.positions()), positions);
    QCOMPARE(q(c.toJson().at("input").get<std::string>()), QStringLiteral("image"));
}

void TestModelConfigPresets::keysWithoutEffectWarn()
{
    QFETCH(QString, model);
    QFETCH(QStringList, keys);

    const ModelDocument document = parseModelDocument("{\"model\": " + model.toStdString() + "}");
    QStringList got;
    for (const ConfigIssue& warning : document.warnings) {
        got << q(warning.key);
        QVERIFY2(q(warning.reason).startsWith(QStringLiteral("has no effect")), qPrintable(q(warning.text())));
    }
    QCOMPARE(got, keys);
}

// ---------------------------------------------------------------- presets

void TestModelConfigPresets::shippedPresetsLoad()
{
    std::vector<std::pair<std::string, ModelDocument>> presets;
    try {
        presets = test::shippedPresets();
    } catch (const ConfigError& error) {
        QFAIL(error.what());
    }
    // At least the 14 presets the project requires (requiredPresetExists).
    QVERIFY2(presets.size() >= 14, qPrintable(QString::number(presets.size())));
    for (const auto& [name, document] : presets) {
        QVERIFY2(!document.name.empty(), name.c_str());
        QVERIFY2(!document.description.empty(), name.c_str());
        // Re-validating the resolved configuration finds nothing either.
        std::vector<ConfigIssue> issues;
        document.model.validate(issues);
        QVERIFY2(issues.empty(), qPrintable(q(name) + ": " + joined(issues)));
        // And the written form reads back to the same configuration.
        const ModelConfig again = ModelConfig::fromJson(document.model.toJson(), issues);
        QVERIFY2(issues.empty(), qPrintable(q(name) + ": " + joined(issues)));
        QVERIFY2(again.toJson() == document.model.toJson(), name.c_str());
    }
    // Names are unique and sorted.
    const std::vector<std::string> names = listPresets();
    QCOMPARE(int(names.size()), int(presets.size()));
    QVERIFY(std::is_sorted(names.begin(), names.end()));
    QVERIFY(std::adjacent_find(names.begin(), names.end()) == names.end());
}

void TestModelConfigPresets::shippedPresetsHaveNoWarnings()
{
    // `params` and `check` print warnings: a shipped preset gives none, but for
    // one the paper chose. The Wide Attention paper's classifiers read the CLS
    // token with every mechanism but Sinkhorn (its appendix: "used the [CLS]
    // token for classification"), so its local and Longformer models keep a
    // CLS token that sees part of the sequence, and the warning says so.
    const std::set<std::string> clsAsInThePaper = {"attention-local-6x8", "attention-local-1x48",
                                                   "attention-longformer-6x8", "attention-longformer-1x48"};
    for (const auto& [name, document] : test::shippedPresets()) {
        QStringList texts;
        for (const ConfigIssue& warning : document.warnings)
            if (!(clsAsInThePaper.count(name) && warning.key == "model.pooling"))
                texts << q(warning.text());
        QVERIFY2(texts.isEmpty(), qPrintable(q(name) + ": " + texts.join(QStringLiteral("; "))));
    }
}

void TestModelConfigPresets::requiredPresetExists_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name :
         {"transformer-6x8", "transformer-3x16", "transformer-2x24", "transformer-1x48", "transformer-6x8-paper",
          "transformer-3x16-paper", "transformer-2x24-paper", "transformer-1x48-paper", "widenet", "vit-moe",
          "albert", "multipath-6x2", "multipath-3x4", "multipath-3x4-features"})
        QTest::newRow(name) << name;
}

void TestModelConfigPresets::requiredPresetExists()
{
    QFETCH(QString, name);
    QVERIFY(contains(listPresets(), name.toStdString()));
    const std::filesystem::path path = resolveConfigPath(name.toStdString());
    QCOMPARE(q(path.filename().string()), name + QStringLiteral(".json"));
}

void TestModelConfigPresets::widenetSemantics()
{
    // WideNet: one attention and one MoE shared by every block, each block with its
    // own LayerNorms, one shared router.
    const ModelConfig c = preset("widenet").model;
    QVERIFY(c.shareAttention);
    QVERIFY(c.shareFfn);
    QVERIFY(!c.shareLayerNorm);
    QVERIFY(c.shareRouter);
    QVERIFY(c.experts > 1);
    QVERIFY(c.isMoe());
    QCOMPARE(qint64(c.attentionModules()), qint64(1));
    QCOMPARE(qint64(c.ffnModules()), qint64(1));
    QCOMPARE(qint64(c.layerNormSets()), qint64(c.layers));
    QCOMPARE(qint64(c.routerModules()), qint64(1));

    // The paper-scale NLP variants: ALBERT-base dimensions with 4, 8, 16 experts.
    for (const auto& [name, experts] : {std::pair<std::string, int>{"widenet-nlp-4e-paper", 4},
                                        {"widenet-nlp-8e-paper", 8},
                                        {"widenet-nlp-16e-paper", 16}}) {
        if (!contains(listPresets(), name))
            continue;
        const ModelConfig p = preset(name).model;
        QCOMPARE(qint64(p.experts), qint64(experts));
        QVERIFY(p.shareAttention && p.shareFfn && !p.shareLayerNorm);
        QCOMPARE(qint64(p.dModel), qint64(768));
        QCOMPARE(qint64(p.embeddingDim), qint64(128));
        QCOMPARE(qint64(p.layers), qint64(12));
    }
}

void TestModelConfigPresets::vitMoeSemantics()
{
    // ViT-MoE: nothing shared, an MoE in every block.
    const ModelConfig c = preset("vit-moe").model;
    QVERIFY(!c.shareAttention);
    QVERIFY(!c.shareFfn);
    QVERIFY(!c.shareLayerNorm);
    QVERIFY(!c.shareRouter);
    QVERIFY(c.experts > 1);
    QCOMPARE(qint64(c.attentionModules()), qint64(c.layers));
    QCOMPARE(qint64(c.ffnModules()), qint64(c.layers));
    QCOMPARE(qint64(c.routerModules()), qint64(c.layers));
    // WideNet section 4.1: its MoE models (ViT-MoE and WideNet) classify with a
    // global average pooling head instead of the CLS token.
    for (const char* name : {"vit-moe", "vit-moe-image", "vit-moe-b-paper", "widenet", "widenet-vit-b-4e-paper"})
        QVERIFY2(preset(name).model.pooling == Pooling::Mean, name);
}

void TestModelConfigPresets::albertSemantics()
{
    // ALBERT: attention, FFN and LayerNorms all shared; dense FFN; factorised embedding.
    for (const char* name : {"albert", "albert-base-paper"}) {
        if (!contains(listPresets(), name))
            continue;
        const ModelConfig c = preset(name).model;
        QVERIFY2(c.shareAttention && c.shareFfn && c.shareLayerNorm, name);
        QVERIFY2(!c.isMoe(), name);
        QVERIFY2(c.factorisedEmbedding(), name);
        QVERIFY2(c.embeddingDim < c.dModel, name);
    }
}

void TestModelConfigPresets::wideAttentionPresets_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("layers");
    QTest::addColumn<qint64>("heads");

    for (const QString& suffix : {QString(), QStringLiteral("-paper")}) {
        for (const auto& [l, h] : {std::pair<int, int>{6, 8}, {3, 16}, {2, 24}, {1, 48}}) {
            const QString name = QStringLiteral("transformer-%1x%2%3").arg(l).arg(h).arg(suffix);
            QTest::newRow(qPrintable(name)) << name << qint64(l) << qint64(h);
        }
    }
}

void TestModelConfigPresets::wideAttentionPresets()
{
    QFETCH(QString, name);
    QFETCH(qint64, layers);
    QFETCH(qint64, heads);

    // Wide Attention: L x H = 48 at a fixed head width A; the same A, d_model and
    // FFN width across the family (16 at laptop scale, 64 in the paper).
    const bool paper = name.endsWith(QStringLiteral("-paper"));
    const ModelConfig c = preset(name.toStdString()).model;
    QCOMPARE(qint64(c.layers), layers);
    QCOMPARE(qint64(c.heads), heads);
    QCOMPARE(qint64(c.layers * c.heads), qint64(48));
    const ModelConfig reference = preset(paper ? "transformer-6x8-paper" : "transformer-6x8").model;
    QCOMPARE(qint64(c.headDim), qint64(reference.headDim));
    QCOMPARE(qint64(c.headDim), qint64(paper ? 64 : 16));
    QCOMPARE(qint64(c.dModel), qint64(reference.dModel));
    QCOMPARE(qint64(c.ffnDim), qint64(reference.ffnDim));
    QVERIFY(!c.isMoe());
    QVERIFY(!c.isMultiPath());
    QVERIFY(!c.shareAttention && !c.shareFfn && !c.shareLayerNorm);
    if (paper) {
        // The paper: E 512, M 2048, ListOps sequences of 2000.
        QCOMPARE(qint64(c.dModel), qint64(512));
        QCOMPARE(qint64(c.ffnDim), qint64(2048));
        QCOMPARE(qint64(c.maxLen), qint64(2000));
    }
}

void TestModelConfigPresets::multipathPresets_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("layers");
    QTest::addColumn<qint64>("paths");
    QTest::addColumn<bool>("extraFeatures");

    QTest::newRow("multipath-6x2") << "multipath-6x2" << qint64(6) << qint64(2) << false;
    QTest::newRow("multipath-3x4") << "multipath-3x4" << qint64(3) << qint64(4) << false;
    QTest::newRow("multipath-3x4-features") << "multipath-3x4-features" << qint64(3) << qint64(4) << true;
}

void TestModelConfigPresets::multipathPresets()
{
    QFETCH(QString, name);
    QFETCH(qint64, layers);
    QFETCH(qint64, paths);
    QFETCH(bool, extraFeatures);

    const ModelConfig c = preset(name.toStdString()).model;
    QCOMPARE(qint64(c.layers), layers);
    QCOMPARE(qint64(c.paths), paths);
    QCOMPARE(c.pathExtraFeatures, extraFeatures);
    QVERIFY(c.isMultiPath());
    QVERIFY(!c.isMoe());
    QCOMPARE(qint64(c.pathFeatures()), extraFeatures ? 2 * paths : paths);
}

void TestModelConfigPresets::resolveUnknownName()
{
    try {
        // A letter missing (widenett would abbreviate widenet-vit-b-4e-paper, which
        // closestMatch prefers to a nearer name it does not abbreviate).
        resolveConfigPath("widnet");
        QFAIL("resolveConfigPath(\"widnet\") did not throw");
    } catch (const ConfigError& error) {
        const QString what = QString::fromUtf8(error.what());
        QVERIFY2(what.startsWith(QStringLiteral("widnet: ")), qPrintable(what));
        QVERIFY2(what.contains(QStringLiteral("did you mean \"widenet\"")), qPrintable(what));
        QVERIFY2(what.contains(QStringLiteral("presets: ")), qPrintable(what));
        for (const auto& name : listPresets())
            QVERIFY2(what.contains(q(name)), name.c_str());
    }

    try {
        resolveConfigPath("qqqqqqqqqqqqqqqqqqqq");
        QFAIL("resolveConfigPath(\"qqqqqqqqqqqqqqqqqqqq\") did not throw");
    } catch (const ConfigError& error) {
        const QString what = QString::fromUtf8(error.what());
        QVERIFY2(!what.contains(QStringLiteral("did you mean")), qPrintable(what));
        QVERIFY2(what.contains(QStringLiteral("vit-moe")), qPrintable(what));
    }
}

void TestModelConfigPresets::resolveKnownNameAndFile()
{
    const std::filesystem::path widenet = resolveConfigPath("widenet");
    QVERIFY(std::filesystem::is_regular_file(widenet));
    QCOMPARE(q(widenet.filename().string()), QStringLiteral("widenet.json"));

    // An existing file is returned as given, and loads.
    QTemporaryDir directory;
    QVERIFY(directory.isValid());
    const std::string file = directory.filePath(QStringLiteral("mine.json")).toStdString();
    std::ofstream(file) << R"({"name": "mine", "model": {"layers": 3, "heads": 2}})";
    QCOMPARE(q(resolveConfigPath(file).string()), q(file));
    const ModelDocument document = loadModelDocument(resolveConfigPath(file));
    QCOMPARE(q(document.name), QStringLiteral("mine"));
    QCOMPARE(qint64(document.model.layers), qint64(3));
    QCOMPARE(qint64(document.model.headDim), qint64(256 / 2));
}

void TestModelConfigPresets::loadMissingFile()
{
    QTemporaryDir directory;
    QVERIFY(directory.isValid());
    const std::string file = directory.filePath(QStringLiteral("absent.json")).toStdString();
    try {
        loadModelDocument(file);
        QFAIL("loadModelDocument on a missing file did not throw");
    } catch (const ConfigError& error) {
        const QString what = QString::fromUtf8(error.what());
        QVERIFY2(what.contains(q(file)), qPrintable(what));
        QVERIFY2(what.contains(QStringLiteral("cannot open")), qPrintable(what));
    }

    // A file with problems names the file first.
    const std::string bad = directory.filePath(QStringLiteral("bad.json")).toStdString();
    std::ofstream(bad) << R"({"model": {"layers": "six"}})";
    try {
        loadModelDocument(bad);
        QFAIL("loadModelDocument on an invalid file did not throw");
    } catch (const ConfigError& error) {
        QCOMPARE(int(error.issues().size()), 2);
        QCOMPARE(q(error.issues()[0].text()), q(bad) + QStringLiteral(": invalid configuration"));
        QCOMPARE(q(error.issues()[1].key), QStringLiteral("model.layers"));
    }
}

QTEST_GUILESS_MAIN(TestModelConfigPresets)
#include "tst_modelconfig_presets.moc"
