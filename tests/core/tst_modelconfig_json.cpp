// Tests the JSON under core/config: JsonText (bounded nesting, repeated keys), JsonSection
// (typed reading, a section that is not an object, did-you-mean) and ModelConfig::toJson's
// round trip.
#include "ModelConfigTestSupport.h"

using namespace widelab;
using namespace widelab::modelconfigtest;

namespace {

std::string nested(int depth, char open, char close, const std::string& inner = "1")
{
    std::string text;
    text.reserve(static_cast<std::size_t>(depth) * 8 + inner.size());
    for (int i = 0; i < depth; ++i)
        text += open == '{' ? std::string("{\"k\": ") : std::string(1, open);
    text += inner;
    text.append(static_cast<std::size_t>(depth), close);
    return text;
}

}  // namespace

class TestModelConfigJson : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The JSON itself: bounded nesting, repeated keys (config/JsonText).
    void deepNestingRefused_data();
    void deepNestingRefused();
    void nestingBoundary();
    void bracketsInStringsAreNotNesting();
    void repeatedKeyRefused_data();
    void repeatedKeyRefused();
    void sameKeyInDifferentObjectsIsFine();
    void tryParseJsonTextReportsInsteadOfThrowing();

    // JsonSection and closestMatch directly.
    void integerReaderBoundaries_data();
    void integerReaderBoundaries();
    void nonObjectSectionReportedOnce();
    void closestMatch_data();
    void closestMatch();

    // Writing.
    void toJsonRoundTrip_data();
    void toJsonRoundTrip();
    void toJsonOfDefaultsIsComplete();
};

// ---------------------------------------------------------------- JsonText

void TestModelConfigJson::deepNestingRefused_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<int>("line");

    const std::string arrays = nested(10000, '[', ']');
    const std::string objects = nested(10000, '{', '}');
    QTest::newRow("arrays, whole document") << q(arrays) << 1;
    QTest::newRow("objects, whole document") << q(objects) << 1;
    QTest::newRow("arrays in model.layers") << q("{\"model\": {\"layers\": " + arrays + "}}") << 1;
    QTest::newRow("objects in model.heads") << q("{\"model\":\n {\"heads\": " + objects + "}}") << 2;
    QTest::newRow("arrays in name, line 3") << q("{\n\"model\": {},\n\"name\": " + arrays + "}") << 3;
    QTest::newRow("objects in an unknown key") << q("{\"model\": {}, \"extra\": " + objects + "}") << 1;
    QTest::newRow("arrays in train.probes") << q("{\"model\": {}, \"train\": {\"probes\": " + arrays + "}}") << 1;
    QTest::newRow("mixed, 100000 levels") << q("{\"model\": " + nested(50000, '[', ']', nested(50000, '{', '}')) + "}")
                                          << 1;
    // Malformed as well as deep: refused, whichever is reported.
    QTest::newRow("unclosed") << q(std::string(100000, '[')) << 1;
}

void TestModelConfigJson::deepNestingRefused()
{
    QFETCH(QString, document);
    QFETCH(int, line);

    const auto error = documentError(document.toStdString(), "deep.json");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().text()),
             QStringLiteral("deep.json: nesting deeper than 64 levels at line %1").arg(line));
}

void TestModelConfigJson::nestingBoundary()
{
    QCOMPARE(kMaxJsonDepth, 64);
    // 64 levels parse; 65 do not.
    for (const char open : {'[', '{'}) {
        const char close = open == '[' ? ']' : '}';
        const nlohmann::json json = parseJsonText(nested(64, open, close), "");
        QVERIFY(json.is_structured());
        try {
            parseJsonText(nested(65, open, close), "");
            QFAIL("65 levels were accepted");
        } catch (const ConfigError& error) {
            QCOMPARE(QString::fromUtf8(error.what()), QStringLiteral("nesting deeper than 64 levels at line 1"));
        }
    }
}

void TestModelConfigJson::bracketsInStringsAreNotNesting()
{
    // Brackets inside strings (escaped quotes and backslashes included) are text.
    const std::string brackets(10000, '[');
    const ModelDocument document =
        parseModelDocument("{\"name\": \"" + brackets + "\\\"{{\\\\\", \"description\": \"]]\", \"model\": {}}");
    QCOMPARE(document.name.size(), brackets.size() + 4);
}

void TestModelConfigJson::repeatedKeyRefused_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("key");

    QTest::newRow("model.heads") << R"({"model": {"heads": 4, "layers": 2, "heads": 8}})" << "model.heads";
    QTest::newRow("same value twice") << R"({"model": {"heads": 8, "heads": 8}})" << "model.heads";
    QTest::newRow("top level") << R"({"name": "a", "model": {}, "name": "b"})" << "name";
    QTest::newRow("a section") << R"({"model": {}, "model": {"layers": 2}})" << "model";
    QTest::newRow("task.kind") << R"({"model": {}, "task": {"kind": "listops", "kind": "classification"}})"
                               << "task.kind";
    QTest::newRow("inside an array") << R"({"model": {}, "train": {"x": [1, {"a": 1, "a": 2}]}})"
                                     << "train.x[1].a";
}

void TestModelConfigJson::repeatedKeyRefused()
{
    QFETCH(QString, document);
    QFETCH(QString, key);

    const auto error = documentError(document.toStdString(), "twice.json");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 2);
    QCOMPARE(q(error->issues()[0].text()), QStringLiteral("twice.json: invalid configuration"));
    QCOMPARE(q(error->issues()[1].key), key);
    QVERIFY2(q(error->issues()[1].reason).startsWith(QStringLiteral("repeated key")),
             qPrintable(q(error->issues()[1].reason)));
}

void TestModelConfigJson::sameKeyInDifferentObjectsIsFine()
{
    const nlohmann::json json = parseJsonText(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}, {"k": 4}]})", "");
    QCOMPARE(json.at("c").at(1).at("k").get<int>(), 4);

    // Every repetition is reported, each by its path.
    try {
        parseJsonText(R"({"a": {"k": 1, "k": 2}, "b": [{"k": 3, "k": 4}], "a": 5})", "");
        QFAIL("repeated keys were accepted");
    } catch (const ConfigError& error) {
        QCOMPARE(int(error.issues().size()), 3);
        QCOMPARE(q(error.issues()[0].key), QStringLiteral("a.k"));
        QCOMPARE(q(error.issues()[1].key), QStringLiteral("b[0].k"));
        QCOMPARE(q(error.issues()[2].key), QStringLiteral("a"));
    }
}

void TestModelConfigJson::tryParseJsonTextReportsInsteadOfThrowing()
{
    std::string reason;
    QVERIFY(!tryParseJsonText(nested(100000, '[', ']'), &reason).has_value());
    QCOMPARE(q(reason), QStringLiteral("nesting deeper than 64 levels at line 1"));
    QVERIFY(!tryParseJsonText("{\"a\": 1, \"a\": 2}", &reason).has_value());
    QVERIFY2(q(reason).startsWith(QStringLiteral("a: repeated key")), qPrintable(q(reason)));
    QVERIFY(!tryParseJsonText("{", &reason).has_value());
    QVERIFY2(q(reason).startsWith(QStringLiteral("not valid JSON")), qPrintable(q(reason)));
    const auto fine = tryParseJsonText("{\"step\": 3}");
    QVERIFY(fine.has_value());
    QCOMPARE(fine->at("step").get<int>(), 3);
}

// ---------------------------------------------------------------- JsonSection

void TestModelConfigJson::integerReaderBoundaries_data()
{
    QTest::addColumn<QString>("value");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<qint64>("result");  // the value read, or the untouched initial 7

    // Range 2..10, inclusive.
    QTest::newRow("min") << "2" << true << qint64(2);
    QTest::newRow("max") << "10" << true << qint64(10);
    QTest::newRow("below") << "1" << false << qint64(7);
    QTest::newRow("above") << "11" << false << qint64(7);
    QTest::newRow("integral float") << "4.0" << true << qint64(4);
    QTest::newRow("fraction") << "4.5" << false << qint64(7);
    QTest::newRow("boolean") << "true" << false << qint64(7);
    QTest::newRow("string") << "\"4\"" << false << qint64(7);
    QTest::newRow("array") << "[4]" << false << qint64(7);
}

void TestModelConfigJson::integerReaderBoundaries()
{
    QFETCH(QString, value);
    QFETCH(bool, accepted);
    QFETCH(qint64, result);

    const nlohmann::json object = nlohmann::json::parse("{\"n\": " + value.toStdString() + "}");
    std::vector<ConfigIssue> issues;
    JsonSection section(object, "sec", issues);
    std::int64_t out = 7;
    section.read("n", out, 2, 10);
    QCOMPARE(issues.empty(), accepted);
    QCOMPARE(qint64(out), result);
    if (!accepted)
        QCOMPARE(q(issues.front().key), QStringLiteral("sec.n"));
    // The key was read, so it is not unknown.
    const std::size_t before = issues.size();
    section.rejectUnknownKeys();
    QCOMPARE(int(issues.size()), int(before));
}

void TestModelConfigJson::nonObjectSectionReportedOnce()
{
    const nlohmann::json value = 5;
    std::vector<ConfigIssue> issues;
    JsonSection section(value, "model", issues);
    std::int64_t layers = 6;
    double dropout = 0.1;
    bool flag = true;
    std::string text = "keep";
    section.read("layers", layers, 1, 10);
    section.read("dropout", dropout, 0.0, 1.0);
    section.read("flag", flag);
    section.read("text", text);
    section.rejectUnknownKeys();
    QCOMPARE(int(issues.size()), 1);
    QCOMPARE(q(issues.front().text()), QStringLiteral("model: expected an object, got 5"));
    QCOMPARE(qint64(layers), qint64(6));
    QCOMPARE(dropout, 0.1);
    QCOMPARE(flag, true);
    QCOMPARE(q(text), QStringLiteral("keep"));
    QCOMPARE(section.has("layers"), false);

    // keyPath with and without a prefix.
    QCOMPARE(q(section.keyPath("layers")), QStringLiteral("model.layers"));
    const nlohmann::json object = nlohmann::json::object();
    JsonSection top(object, "", issues);
    QCOMPARE(q(top.keyPath("name")), QStringLiteral("name"));
}

void TestModelConfigJson::closestMatch_data()
{
    QTest::addColumn<QString>("word");
    QTest::addColumn<QStringList>("candidates");
    QTest::addColumn<QString>("expected");

    const QStringList poolings{"cls", "mean"};
    const QStringList activations{"gelu", "relu", "silu"};
    QTest::newRow("transposition") << "mena" << poolings << "mean";
    QTest::newRow("exact") << "relu" << activations << "relu";
    QTest::newRow("one substitution") << "silo" << activations << "silu";
    QTest::newRow("widenett") << "widenett" << QStringList{"albert", "vit-moe", "widenet", "multipath-6x2"}
                                   << "widenet";
    QTest::newRow("nothing close") << "xyz" << activations << "";
    QTest::newRow("max, 2 edits from mean") << "max" << poolings << "mean";
    QTest::newRow("token is not close") << "token" << poolings << "";
    QTest::newRow("long and unrelated") << "completely_unrelated_key" << QStringList{"layers", "heads", "d_model"}
                                       << "";
    QTest::newRow("no candidates") << "layers" << QStringList{} << "";
}

void TestModelConfigJson::closestMatch()
{
    QFETCH(QString, word);
    QFETCH(QStringList, candidates);
    QFETCH(QString, expected);

    std::vector<std::string> list;
    for (const auto& candidate : candidates)
        list.push_back(candidate.toStdString());
    QCOMPARE(q(widelab::closestMatch(word.toStdString(), list)), expected);
}

// ---------------------------------------------------------------- writing

void TestModelConfigJson::toJsonRoundTrip_data()
{
    QTest::addColumn<QString>("json");

    // Every key, with a value other than its default (within what the rules allow).
    const char* const moe = R"({
        "vocab_size": 1000, "max_len": 64, "d_model": 96, "embedding_dim": 32, "layers": 4, "heads": 3,
        "head_dim": 40, "ffn_dim": 200, "activation": "silu", "dropout": 0.25, "head": "classification",
        "pooling": "mean", "pooler": true, "num_classes": 7, "experts": 8, "top_k": 3,
        "capacity_factor": 0.5, "eval_capacity_factor": 1.5, "router_noise_std": 0.3,
        "balance_loss_weight": 0.02, "router_z_loss_weight": 0.001, "routing_groups": 2, "routing_priority": "batch",
        "balance_count": "topk", "renormalize_gates": true, "share_router": false, "share_attention": true, "share_ffn": true,
        "share_layernorm": true, "paths": 1, "path_norm": false, "learnable_path_weights": false,
        "path_extra_features": false, "input": "tokens", "image_size": 64, "patch_size": 8, "channels": 1,
        "decoder_layers": 3, "decoder_paths": 1, "segments": 0, "path_weight": "inverse_n"})";
    QTest::newRow("mixture of experts, everything shared") << moe;
    // The same model reading grey 48 x 48 pictures in 8 x 8 patches (36 positions).
    nlohmann::json image = nlohmann::json::parse(moe);
    image.update(nlohmann::json::parse(R"({"input": "image", "image_size": 48, "max_len": 36, "embedding_dim": 0})"));
    QTest::newRow("image WideNet, grey 48 x 48 in 8 x 8 patches") << QString::fromStdString(image.dump());
    QTest::newRow("multi-path language model") << R"({
        "vocab_size": 300, "max_len": 33, "d_model": 48, "embedding_dim": 0, "layers": 5, "heads": 2,
        "head_dim": 12, "ffn_dim": 77, "activation": "relu", "dropout": 0.0, "head": "language_model",
        "pooling": "cls", "pooler": false, "num_classes": 3, "experts": 1, "top_k": 1,
        "capacity_factor": -1.0, "eval_capacity_factor": 0.0, "router_noise_std": 0.0,
        "balance_loss_weight": 0.0, "router_z_loss_weight": 0.0, "routing_groups": 5, "routing_priority": "position",
        "balance_count": "top1", "renormalize_gates": false, "share_router": true, "share_attention": false, "share_ffn": true,
        "share_layernorm": false, "paths": 3, "path_norm": true, "learnable_path_weights": true,
        "path_extra_features": true, "input": "tokens", "image_size": 30, "patch_size": 3, "channels": 3,
        "decoder_layers": 2, "decoder_paths": 4, "segments": 0, "path_weight": "inverse_sqrt_n"})";
}

void TestModelConfigJson::toJsonRoundTrip()
{
    QFETCH(QString, json);
    const nlohmann::json input = nlohmann::json::parse(json.toStdString());

    std::vector<ConfigIssue> issues;
    const ModelConfig c = ModelConfig::fromJson(input, issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));

    // toJson writes exactly the keys and values read, and the attention keys
    // (absent here) at their defaults.
    const nlohmann::json written = c.toJson();
    nlohmann::json expected = input;
    expected["attention"] = "full";
    expected["attention_mix"] = nlohmann::json::array();
    const nlohmann::json defaults = ModelConfig::defaultAttentionOptions();
    for (const auto& [name, value] : defaults.items())
        expected[name] = value;
    QVERIFY2(written == expected, qPrintable(q(written.dump())));

    // Through text, as a document, and back.
    const ModelDocument document = parseModelDocument(nlohmann::json{{"model", written}}.dump());
    const ModelConfig& r = document.model;
    QCOMPARE(qint64(r.vocabSize), qint64(c.vocabSize));
    QCOMPARE(qint64(r.maxLen), qint64(c.maxLen));
    QCOMPARE(qint64(r.dModel), qint64(c.dModel));
    QCOMPARE(qint64(r.embeddingDim), qint64(c.embeddingDim));
    QCOMPARE(qint64(r.layers), qint64(c.layers));
    QCOMPARE(qint64(r.heads), qint64(c.heads));
    QCOMPARE(qint64(r.headDim), qint64(c.headDim));
    QCOMPARE(qint64(r.ffnDim), qint64(c.ffnDim));
    QVERIFY(r.activation == c.activation);
    QCOMPARE(r.dropout, c.dropout);
    QVERIFY(r.head == c.head);
    QVERIFY(r.pooling == c.pooling);
    QCOMPARE(r.pooler, c.pooler);
    QCOMPARE(qint64(r.numClasses), qint64(c.numClasses));
    QCOMPARE(qint64(r.experts), qint64(c.experts));
    QCOMPARE(qint64(r.topK), qint64(c.topK));
    QCOMPARE(r.capacityFactor, c.capacityFactor);
    QCOMPARE(r.evalCapacityFactor, c.evalCapacityFactor);
    QCOMPARE(r.routerNoiseStd, c.routerNoiseStd);
    QCOMPARE(r.balanceLossWeight, c.balanceLossWeight);
    QCOMPARE(qint64(r.routingGroups), qint64(c.routingGroups));
    QVERIFY(r.routingPriority == c.routingPriority);
    QCOMPARE(r.renormalizeGates, c.renormalizeGates);
    QCOMPARE(r.shareRouter, c.shareRouter);
    QCOMPARE(r.shareAttention, c.shareAttention);
    QCOMPARE(r.shareFfn, c.shareFfn);
    QCOMPARE(r.shareLayerNorm, c.shareLayerNorm);
    QCOMPARE(qint64(r.paths), qint64(c.paths));
    QCOMPARE(r.pathNorm, c.pathNorm);
    QCOMPARE(r.learnablePathWeights, c.learnablePathWeights);
    QCOMPARE(r.pathExtraFeatures, c.pathExtraFeatures);
    QVERIFY(r.toJson() == written);
}

void TestModelConfigJson::toJsonOfDefaultsIsComplete()
{
    // The configuration table of docs/model.md has 41 keys besides the attention
    // mechanisms' (docs/attention.md); toJson writes them all, and fromJson reads
    // every one of them back without an unknown key.
    const nlohmann::json written = ModelConfig{}.toJson();
    QCOMPARE(int(written.size()), 41 + 2 + int(ModelConfig::defaultAttentionOptions().size()));
    for (const char* key : {"vocab_size", "max_len", "d_model", "embedding_dim", "layers", "heads", "head_dim",
                            "ffn_dim", "activation", "dropout", "head", "pooling", "pooler", "num_classes", "segments",
                            "experts", "top_k", "capacity_factor", "eval_capacity_factor", "router_noise_std",
                            "balance_loss_weight", "router_z_loss_weight", "routing_groups", "routing_priority", "balance_count",
                            "renormalize_gates", "share_router", "share_attention", "share_ffn", "share_layernorm", "paths",
                            "path_norm", "learnable_path_weights", "path_extra_features", "input", "image_size",
                            "patch_size", "channels", "decoder_layers", "decoder_paths", "path_weight"})
        QVERIFY2(written.contains(key), key);
    QCOMPARE(q(written.at("activation").get<std::string>()), QStringLiteral("gelu"));
    QCOMPARE(q(written.at("head").get<std::string>()), QStringLiteral("classification"));
    QCOMPARE(q(written.at("pooling").get<std::string>()), QStringLiteral("cls"));
    QCOMPARE(q(written.at("routing_priority").get<std::string>()), QStringLiteral("position"));
    QCOMPARE(q(written.at("balance_count").get<std::string>()), QStringLiteral("top1"));

    std::vector<ConfigIssue> issues;
    ModelConfig::fromJson(written, issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));
}

QTEST_GUILESS_MAIN(TestModelConfigJson)
#include "tst_modelconfig_json.moc"
