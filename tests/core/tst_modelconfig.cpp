// Tests core/config's ModelConfig: defaults and derived defaults (docs/model.md), and the
// problems it reports: one at a time, several at once, malformed documents, suggestions,
// document-level keys and ConfigError.
#include "ModelConfigTestSupport.h"

using namespace widelab;
using namespace widelab::modelconfigtest;

namespace {

const ConfigIssue* issueFor(const std::vector<ConfigIssue>& issues, const std::string& key)
{
    for (const auto& issue : issues)
        if (issue.key == key)
            return &issue;
    return nullptr;
}

}  // namespace

class TestModelConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Defaults and derived defaults (docs/model.md, configuration table).
    void defaults();
    void derivedDefaults_data();
    void derivedDefaults();
    void nullIsAnError_data();
    void nullIsAnError();

    // Problems: one at a time, several at once, malformed documents.
    void singleProblem_data();
    void singleProblem();
    void severalCrossKeyProblemsAtOnce();
    void everyProblemReportedAtOnce();
    void unknownKeySuggestion_data();
    void unknownKeySuggestion();
    void badEnumSuggestion_data();
    void badEnumSuggestion();
    void malformedDocument_data();
    void malformedDocument();
    void documentLevelKeys();
    void originPrefixesTheIssues();
    void configErrorJoinsIssues();
};

// ---------------------------------------------------------------- defaults

void TestModelConfig::defaults()
{
    std::vector<ConfigIssue> issues;
    const ModelConfig c = readModel("{}", issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));

    // Every default of the table in docs/model.md.
    QCOMPARE(qint64(c.vocabSize), qint64(256));
    QCOMPARE(qint64(c.maxLen), qint64(512));
    QCOMPARE(qint64(c.dModel), qint64(256));
    QCOMPARE(qint64(c.embeddingDim), qint64(0));
    QCOMPARE(qint64(c.layers), qint64(6));
    QCOMPARE(qint64(c.heads), qint64(8));
    QCOMPARE(qint64(c.headDim), qint64(256 / 8));
    QCOMPARE(qint64(c.ffnDim), qint64(4 * 256));
    QVERIFY(c.activation == Activation::Gelu);
    QCOMPARE(c.dropout, 0.1);
    QVERIFY(c.head == HeadKind::Classification);
    QVERIFY(c.pooling == Pooling::Cls);
    QCOMPARE(c.pooler, false);
    QCOMPARE(qint64(c.numClasses), qint64(10));
    QCOMPARE(qint64(c.experts), qint64(1));
    QCOMPARE(qint64(c.topK), qint64(1));  // "1 when experts is 1"
    QCOMPARE(c.capacityFactor, 1.2);
    QCOMPARE(c.evalCapacityFactor, 2.0);
    QCOMPARE(c.balanceLossWeight, 0.01);
    QCOMPARE(qint64(c.routingGroups), qint64(6));  // = layers
    QVERIFY(c.routingPriority == RoutingPriority::Position);
    QCOMPARE(c.renormalizeGates, false);
    QCOMPARE(c.shareRouter, true);
    QCOMPARE(c.shareAttention, false);
    QCOMPARE(c.shareFfn, false);
    QCOMPARE(c.shareLayerNorm, false);
    QCOMPARE(qint64(c.paths), qint64(1));
    QCOMPARE(c.pathNorm, false);
    QCOMPARE(c.learnablePathWeights, false);
    QCOMPARE(c.pathExtraFeatures, false);

    // Derived quantities of the default model.
    QCOMPARE(c.isMoe(), false);
    QCOMPARE(c.isMultiPath(), false);
    QCOMPARE(c.usesClsToken(), true);
    QCOMPARE(qint64(c.positions()), qint64(512 + 1));
    QCOMPARE(qint64(c.attentionWidth()), qint64(256));
}

void TestModelConfig::derivedDefaults_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<qint64>("headDim");
    QTest::addColumn<qint64>("ffnDim");
    QTest::addColumn<qint64>("topK");
    QTest::addColumn<double>("routerNoiseStd");
    QTest::addColumn<qint64>("routingGroups");

    // head_dim = d_model / heads, ffn_dim = 4 * d_model when absent.
    QTest::newRow("d_model 96, 6 heads") << R"({"d_model": 96, "heads": 6})" << qint64(16) << qint64(384)
                                         << qint64(1) << 0.0 << qint64(6);
    QTest::newRow("d_model 512, 1 head") << R"({"d_model": 512, "heads": 1})" << qint64(512) << qint64(2048)
                                         << qint64(1) << 0.0 << qint64(6);
    // An explicit head_dim wins, also when d_model is not divisible by heads.
    QTest::newRow("explicit head_dim") << R"({"d_model": 64, "heads": 4, "head_dim": 8})" << qint64(8)
                                       << qint64(256) << qint64(1) << 0.0 << qint64(6);
    QTest::newRow("explicit head_dim, 100 / 3")
        << R"({"d_model": 100, "heads": 3, "head_dim": 10})" << qint64(10) << qint64(400) << qint64(1) << 0.0
        << qint64(6);
    QTest::newRow("explicit ffn_dim") << R"({"d_model": 128, "ffn_dim": 300})" << qint64(16) << qint64(300)
                                      << qint64(1) << 0.0 << qint64(6);
    // top_k = min(2, experts); router_noise_std = 1 / experts.
    QTest::newRow("2 experts") << R"({"experts": 2})" << qint64(32) << qint64(1024) << qint64(2) << 0.5
                               << qint64(6);
    QTest::newRow("4 experts") << R"({"experts": 4})" << qint64(32) << qint64(1024) << qint64(2) << 0.25
                               << qint64(6);
    QTest::newRow("8 experts, top_k 1") << R"({"experts": 8, "top_k": 1})" << qint64(32) << qint64(1024)
                                        << qint64(1) << 0.125 << qint64(6);
    QTest::newRow("5 experts, noise given") << R"({"experts": 5, "router_noise_std": 0.0})" << qint64(32)
                                            << qint64(1024) << qint64(2) << 0.0 << qint64(6);
    // routing_groups = layers.
    QTest::newRow("12 layers") << R"({"layers": 12, "experts": 4})" << qint64(32) << qint64(1024) << qint64(2)
                               << 0.25 << qint64(12);
    QTest::newRow("routing_groups given") << R"({"layers": 4, "experts": 4, "routing_groups": 2})" << qint64(32)
                                          << qint64(1024) << qint64(2) << 0.25 << qint64(2);
}

void TestModelConfig::derivedDefaults()
{
    QFETCH(QString, json);
    QFETCH(qint64, headDim);
    QFETCH(qint64, ffnDim);
    QFETCH(qint64, topK);
    QFETCH(double, routerNoiseStd);
    QFETCH(qint64, routingGroups);

    std::vector<ConfigIssue> issues;
    const ModelConfig c = readModel(json.toStdString(), issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));
    QCOMPARE(qint64(c.headDim), headDim);
    QCOMPARE(qint64(c.ffnDim), ffnDim);
    QCOMPARE(qint64(c.topK), topK);
    QCOMPARE(c.routerNoiseStd, routerNoiseStd);
    QCOMPARE(qint64(c.routingGroups), routingGroups);
}

void TestModelConfig::nullIsAnError_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("defaultText");  // what the message offers instead

    QTest::newRow("heads") << R"({"model": {"heads": null}})" << "model.heads" << " 8";
    QTest::newRow("layers") << R"({"model": {"layers": null, "d_model": 64}})" << "model.layers" << " 6";
    // A derived default is named as derived from the other keys.
    QTest::newRow("head_dim") << R"({"model": {"d_model": 64, "head_dim": null}})" << "model.head_dim" << " 8";
    QTest::newRow("dropout") << R"({"model": {"dropout": null}})" << "model.dropout" << " 0.1";
    QTest::newRow("pooler") << R"({"model": {"pooler": null}})" << "model.pooler" << " false";
    QTest::newRow("activation") << R"({"model": {"activation": null}})" << "model.activation" << " \"gelu\"";
    QTest::newRow("name") << R"({"name": null, "model": {}})" << "name" << "";
}

void TestModelConfig::nullIsAnError()
{
    QFETCH(QString, document);
    QFETCH(QString, key);
    QFETCH(QString, defaultText);

    // null used to read as "absent"; a document that says null meant something.
    const auto error = documentError(document.toStdString());
    QVERIFY2(error.has_value(), qPrintable(document));
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().key), key);
    QCOMPARE(q(error->issues().front().reason),
             QStringLiteral("null is not allowed; remove the key to use the default") + defaultText);
}

// ---------------------------------------------------------------- problems

void TestModelConfig::singleProblem_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("reason");  // a part of the reason, or all of it

    // Cross-key rules.
    QTest::newRow("top_k > experts") << R"({"experts": 2, "top_k": 3})" << "model.top_k"
                                     << "3 exceeds model.experts: 2";
    QTest::newRow("top_k 2 with dense ffn") << R"({"top_k": 2})" << "model.top_k" << "2 exceeds model.experts: 1";
    QTest::newRow("routing_groups > layers") << R"({"layers": 4, "routing_groups": 5})" << "model.routing_groups"
                                             << "5 exceeds model.layers: 4";
    QTest::newRow("head_dim absent, 100 % 8 != 0") << R"({"d_model": 100, "heads": 8})" << "model.head_dim"
                                                   << "is not divisible by model.heads (8)";
    QTest::newRow("extra features with 2 paths") << R"({"paths": 2, "path_extra_features": true})"
                                                 << "model.path_extra_features" << "model.paths >= 3";
    QTest::newRow("extra features with 1 path") << R"({"path_extra_features": true})" << "model.path_extra_features"
                                                << "model.paths >= 3";
    QTest::newRow("paths > 1 with experts > 1") << R"({"paths": 2, "experts": 2})" << "model.paths"
                                                << "are not supported";
    QTest::newRow("batch priority in a language model")
        << R"({"head": "language_model", "experts": 4, "routing_priority": "batch"})" << "model.routing_priority"
        << "later tokens";
    QTest::newRow("renormalised gates with top-1") << R"({"experts": 4, "top_k": 1, "renormalize_gates": true})"
                                                   << "model.renormalize_gates" << "every gate becomes 1";
    QTest::newRow("pooler on a language model") << R"({"head": "language_model", "pooler": true})"
                                                << "model.pooler" << "classification";
    // Images.
    QTest::newRow("image_size not a multiple of patch_size")
        << R"({"input": "image", "image_size": 30, "patch_size": 4})" << "model.image_size"
        << "30 is not a multiple of model.patch_size (4)";
    QTest::newRow("patch larger than the image") << R"({"input": "image", "image_size": 8, "patch_size": 16})"
                                                 << "model.image_size" << "not a multiple of model.patch_size";
    QTest::newRow("language model on images") << R"({"input": "image", "head": "language_model"})" << "model.head"
                                              << "\"language_model\" predicts tokens, which images do not have";
    QTest::newRow("masked language model on images") << R"({"input": "image", "head": "masked_lm"})" << "model.head"
                                                     << "\"masked_lm\" predicts tokens, which images do not have";
    QTest::newRow("two channels") << R"({"input": "image", "channels": 2})" << "model.channels"
                                  << "neither grey (1) nor RGB (3)";
    QTest::newRow("factorised embedding on images") << R"({"input": "image", "embedding_dim": 16})"
                                                    << "model.embedding_dim" << "for tokens";
    QTest::newRow("channels 4") << R"({"input": "image", "channels": 4})" << "model.channels"
                                << "outside the allowed range";
    QTest::newRow("patch_size 0") << R"({"input": "image", "patch_size": 0})" << "model.patch_size"
                                  << "outside the allowed range";
    QTest::newRow("input pixels") << R"({"input": "pixels"})" << "model.input" << "is not one of tokens, image";
    // Ranges.
    QTest::newRow("layers 0") << R"({"layers": 0})" << "model.layers" << "outside the allowed range";
    QTest::newRow("layers -3") << R"({"layers": -3})" << "model.layers" << "outside the allowed range";
    QTest::newRow("dropout 1.5") << R"({"dropout": 1.5})" << "model.dropout" << "outside the allowed range";
    QTest::newRow("dropout -0.1") << R"({"dropout": -0.1})" << "model.dropout" << "outside the allowed range";
    QTest::newRow("negative router_noise_std") << R"({"experts": 4, "router_noise_std": -0.5})"
                                               << "model.router_noise_std" << "outside the allowed range";
    QTest::newRow("vocab_size 1") << R"({"vocab_size": 1})" << "model.vocab_size" << "outside the allowed range";
    QTest::newRow("num_classes 1") << R"({"num_classes": 1})" << "model.num_classes" << "outside the allowed range";
    QTest::newRow("experts 0") << R"({"experts": 0})" << "model.experts" << "outside the allowed range";
    QTest::newRow("top_k 0") << R"({"experts": 4, "top_k": 0})" << "model.top_k" << "outside the allowed range";
    QTest::newRow("paths 0") << R"({"paths": 0})" << "model.paths" << "outside the allowed range";
    QTest::newRow("1e9 layers") << R"({"layers": 1000000000})" << "model.layers" << "outside the allowed range";
    // 2^63 is past int64: it is named as written, not wrapped to -2^63.
    QTest::newRow("2^63 layers") << R"({"layers": 9223372036854775808})" << "model.layers"
                                 << "9223372036854775808 is outside the allowed range";
    QTest::newRow("negative balance_loss_weight") << R"({"balance_loss_weight": -1})"
                                                  << "model.balance_loss_weight" << "outside the allowed range";
    // Types.
    QTest::newRow("layers \"six\"") << R"({"layers": "six"})" << "model.layers" << "expected an integer";
    QTest::newRow("layers 6.5") << R"({"layers": 6.5})" << "model.layers" << "expected an integer";
    QTest::newRow("layers 1e300") << R"({"layers": 1e300})" << "model.layers" << "expected an integer";
    QTest::newRow("dropout \"0.1\"") << R"({"dropout": "0.1"})" << "model.dropout" << "expected a number";
    QTest::newRow("pooler \"yes\"") << R"({"pooler": "yes"})" << "model.pooler" << "expected true or false";
    QTest::newRow("share_ffn 1") << R"({"share_ffn": 1})" << "model.share_ffn" << "expected true or false";
    QTest::newRow("activation 1") << R"({"activation": 1})" << "model.activation" << "expected a string";
    QTest::newRow("pooling max") << R"({"pooling": "max"})" << "model.pooling" << "\"max\" is not one of cls, mean";
    QTest::newRow("unknown key") << R"({"colour": "blue"})" << "model.colour" << "unknown key";
}

void TestModelConfig::singleProblem()
{
    QFETCH(QString, json);
    QFETCH(QString, key);
    QFETCH(QString, reason);

    std::vector<ConfigIssue> issues;
    readModel(json.toStdString(), issues);
    QVERIFY2(issues.size() == 1, qPrintable(QStringLiteral("expected one issue, got: ") + joined(issues)));
    QCOMPARE(q(issues.front().key), key);
    QVERIFY2(q(issues.front().reason).contains(reason), qPrintable(q(issues.front().reason)));
    QVERIFY(q(issues.front().text()).startsWith(key + QStringLiteral(": ")));
}

void TestModelConfig::severalCrossKeyProblemsAtOnce()
{
    const auto error = documentError(
        R"({"model": {"experts": 2, "top_k": 3, "layers": 2, "routing_groups": 3, "paths": 2}})");
    QVERIFY(error.has_value());
    const auto& issues = error->issues();
    QCOMPARE(int(issues.size()), 3);
    QVERIFY(issueFor(issues, "model.top_k"));
    QCOMPARE(q(issueFor(issues, "model.top_k")->text()), QStringLiteral("model.top_k: 3 exceeds model.experts: 2"));
    QVERIFY(issueFor(issues, "model.routing_groups"));
    QCOMPARE(q(issueFor(issues, "model.routing_groups")->text()),
             QStringLiteral("model.routing_groups: 3 exceeds model.layers: 2"));
    QVERIFY(issueFor(issues, "model.paths"));
    // what() carries every issue.
    const QString what = QString::fromUtf8(error->what());
    QVERIFY(what.contains(QStringLiteral("model.top_k: 3 exceeds model.experts: 2")));
    QVERIFY(what.contains(QStringLiteral("model.routing_groups")));
    QVERIFY(what.contains(QStringLiteral("model.paths")));
}

void TestModelConfig::everyProblemReportedAtOnce()
{
    // Four independent problems in one document: a cross-key rule, an unknown
    // key, a wrong type and a bad enum value. One ConfigError must name them all.
    const auto error = documentError(R"({"name": "broken", "model": {
        "experts": 2, "top_k": 3, "share_attn": true, "layers": "six", "pooling": "max"}})");
    QVERIFY(error.has_value());
    const auto& issues = error->issues();
    const QString all = joined(issues);

    const ConfigIssue* layers = issueFor(issues, "model.layers");
    QVERIFY2(layers, qPrintable(all));
    QVERIFY(q(layers->reason).contains(QStringLiteral("expected an integer")));
    QVERIFY(q(layers->reason).contains(QStringLiteral("\"six\"")));

    const ConfigIssue* pooling = issueFor(issues, "model.pooling");
    QVERIFY2(pooling, qPrintable(all));
    QVERIFY(q(pooling->reason).contains(QStringLiteral("\"max\" is not one of cls, mean")));

    const ConfigIssue* unknown = issueFor(issues, "model.share_attn");
    QVERIFY2(unknown, qPrintable(all));
    QVERIFY(q(unknown->reason).startsWith(QStringLiteral("unknown key")));

    // The suggestion for the abbreviated key must be the key it abbreviates.
    QVERIFY2(q(unknown->reason).contains(QStringLiteral("did you mean \"share_attention\"")),
             qPrintable(q(unknown->reason)));

    // top_k 3 with experts 2 is a problem as well, whatever else is wrong.
    QVERIFY2(issueFor(issues, "model.top_k"), qPrintable(all));
    if (const ConfigIssue* topK = issueFor(issues, "model.top_k"))
        QCOMPARE(q(topK->text()), QStringLiteral("model.top_k: 3 exceeds model.experts: 2"));

    // Every issue names its full key and gives a reason.
    for (const auto& issue : issues) {
        QVERIFY2(q(issue.key).startsWith(QStringLiteral("model.")), qPrintable(q(issue.text())));
        QVERIFY(!issue.reason.empty());
    }
}

void TestModelConfig::unknownKeySuggestion_data()
{
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("suggestion");  // empty: no did-you-mean

    QTest::newRow("layer") << "layer" << "layers";
    QTest::newRow("dropuot") << "dropuot" << "dropout";
    QTest::newRow("num_class") << "num_class" << "num_classes";
    QTest::newRow("share_layer_norm") << "share_layer_norm" << "share_layernorm";
    QTest::newRow("expert") << "expert" << "experts";
    QTest::newRow("nothing close") << "colour_scheme_of_the_plots" << "";
    QTest::newRow("share_attn") << "share_attn" << "share_attention";
    // head_dim is a documented key even when the document leaves it out.
    QTest::newRow("head_dm") << "head_dm" << "head_dim";
}

void TestModelConfig::unknownKeySuggestion()
{
    QFETCH(QString, key);
    QFETCH(QString, suggestion);

    std::vector<ConfigIssue> issues;
    readModel("{\"" + key.toStdString() + "\": 16}", issues);
    QVERIFY2(issues.size() == 1, qPrintable(joined(issues)));
    QCOMPARE(q(issues.front().key), QStringLiteral("model.") + key);
    const QString reason = q(issues.front().reason);
    QVERIFY2(reason.startsWith(QStringLiteral("unknown key")), qPrintable(reason));
    if (suggestion.isEmpty())
        QVERIFY2(!reason.contains(QStringLiteral("did you mean")), qPrintable(reason));
    else
        QCOMPARE(reason, QStringLiteral("unknown key (did you mean \"%1\"?)").arg(suggestion));
}

void TestModelConfig::badEnumSuggestion_data()
{
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("allowed");
    QTest::addColumn<QString>("suggestion");

    QTest::newRow("pooling mena") << "pooling" << "mena" << "cls, mean" << "mean";
    QTest::newRow("pooling max") << "pooling" << "max" << "cls, mean" << "mean";  // 2 edits
    QTest::newRow("pooling token") << "pooling" << "token" << "cls, mean" << "";
    QTest::newRow("activation Gelu") << "activation" << "Gelu" << "gelu, relu, silu" << "gelu";
    QTest::newRow("activation tanh") << "activation" << "tanh" << "gelu, relu, silu" << "";
    QTest::newRow("head language-model") << "head" << "language-model" << "classification, language_model, translation, masked_lm"
                                         << "language_model";
    QTest::newRow("routing_priority batches") << "routing_priority" << "batches" << "position, batch" << "batch";
}

void TestModelConfig::badEnumSuggestion()
{
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, allowed);
    QFETCH(QString, suggestion);

    std::vector<ConfigIssue> issues;
    readModel("{\"" + key.toStdString() + "\": \"" + value.toStdString() + "\"}", issues);
    QVERIFY2(issues.size() == 1, qPrintable(joined(issues)));
    QCOMPARE(q(issues.front().key), QStringLiteral("model.") + key);
    QString expected = QStringLiteral("\"%1\" is not one of %2").arg(value, allowed);
    if (!suggestion.isEmpty())
        expected += QStringLiteral(" (did you mean \"%1\"?)").arg(suggestion);
    QCOMPARE(q(issues.front().reason), expected);
}

void TestModelConfig::malformedDocument_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");

    QTest::newRow("missing closing brace") << R"({"model": {"layers": 6})" << "not valid JSON";
    QTest::newRow("empty string") << "" << "not valid JSON";
    QTest::newRow("only whitespace") << "  \n " << "not valid JSON";
    QTest::newRow("trailing comma") << R"({"model": {"layers": 6,}})" << "not valid JSON";
    QTest::newRow("single quotes") << R"({'model': {}})" << "not valid JSON";
    QTest::newRow("two documents") << R"({"model": {}} {"model": {}})" << "not valid JSON";
    QTest::newRow("top-level array") << R"([{"model": {}}])" << "expected an object";
    QTest::newRow("top-level number") << "42" << "expected an object";
    QTest::newRow("top-level null") << "null" << "expected an object";
    QTest::newRow("model is an array") << R"({"model": [1, 2]})" << "model: expected an object";
    QTest::newRow("model is a string") << R"({"model": "widenet"})" << "model: expected an object";
    QTest::newRow("no model") << R"({"name": "x"})" << "model: missing";
    QTest::newRow("model null") << R"({"model": null})" << "model: expected an object, got null";
}

void TestModelConfig::malformedDocument()
{
    QFETCH(QString, text);
    QFETCH(QString, message);

    const auto error = documentError(text.toStdString());
    QVERIFY(error.has_value());
    QVERIFY(!error->issues().empty());
    const QString what = QString::fromUtf8(error->what());
    QVERIFY2(what.contains(message), qPrintable(what));
}

void TestModelConfig::documentLevelKeys()
{
    // name and description are read; task and train are tolerated.
    const ModelDocument document = parseModelDocument(
        R"({"name": "N", "description": "D", "task": {"x": 1}, "train": {}, "model": {"layers": 2}})");
    QCOMPARE(q(document.name), QStringLiteral("N"));
    QCOMPARE(q(document.description), QStringLiteral("D"));
    QCOMPARE(qint64(document.model.layers), qint64(2));

    // A misspelt top-level key has an empty path prefix and a suggestion.
    const auto error = documentError(R"({"nmae": "N", "model": {}})");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().text()), QStringLiteral("nmae: unknown key (did you mean \"name\"?)"));

    const auto wrongType = documentError(R"({"name": 3, "model": {}})");
    QVERIFY(wrongType.has_value());
    QCOMPARE(q(wrongType->issues().front().key), QStringLiteral("name"));
    QVERIFY(q(wrongType->issues().front().reason).contains(QStringLiteral("expected a string")));
}

void TestModelConfig::originPrefixesTheIssues()
{
    const auto parseError = documentError("{", "my.json");
    QVERIFY(parseError.has_value());
    QVERIFY(QString::fromUtf8(parseError->what()).startsWith(QStringLiteral("my.json: not valid JSON")));

    const auto error = documentError(R"({"model": {"layers": 0}})", "my.json");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 2);
    QCOMPARE(q(error->issues()[0].text()), QStringLiteral("my.json: invalid configuration"));
    QCOMPARE(q(error->issues()[1].key), QStringLiteral("model.layers"));
}

void TestModelConfig::configErrorJoinsIssues()
{
    const ConfigIssue keyed{"model.layers", "too many"};
    const ConfigIssue bare{"", "whole document"};
    QCOMPARE(q(keyed.text()), QStringLiteral("model.layers: too many"));
    QCOMPARE(q(bare.text()), QStringLiteral("whole document"));

    const ConfigError error({keyed, bare});
    QCOMPARE(QString::fromUtf8(error.what()), QStringLiteral("model.layers: too many\nwhole document"));
    QCOMPARE(int(error.issues().size()), 2);
    QCOMPARE(q(error.issues()[1].reason), QStringLiteral("whole document"));
}

QTEST_GUILESS_MAIN(TestModelConfig)
#include "tst_modelconfig.moc"
