// Tests core/config: ModelConfig (defaults, derived defaults, checks, JSON round trip),
// JsonSection (typed reading, null, did-you-mean), JsonText (bounded nesting, repeated
// keys), size bounds, warnings, ConfigError, and the shipped presets.
#include "TestSupport.h"
#include "vocab/ConfigError.h"
#include "config/JsonSection.h"
#include "vocab/JsonText.h"
#include "config/ModelConfig.h"
#include "model/ParameterCount.h"
#include "config/Presets.h"

#include <QtTest>

#include <set>

#include <algorithm>
#include <fstream>
#include <optional>

using namespace widelab;

namespace {

QString q(const std::string& text) { return QString::fromStdString(text); }

QString joined(const std::vector<ConfigIssue>& issues)
{
    QStringList lines;
    for (const auto& issue : issues)
        lines << q(issue.text());
    return lines.join(QStringLiteral(" | "));
}

// Reads a bare `model` object.
ModelConfig readModel(const std::string& json, std::vector<ConfigIssue>& issues)
{
    return ModelConfig::fromJson(nlohmann::json::parse(json), issues);
}

const ConfigIssue* issueFor(const std::vector<ConfigIssue>& issues, const std::string& key)
{
    for (const auto& issue : issues)
        if (issue.key == key)
            return &issue;
    return nullptr;
}

// The ConfigError a document raises; nullopt when it parses cleanly. Any other
// exception escapes and fails the test.
std::optional<ConfigError> documentError(const std::string& text, const std::string& origin = "")
{
    try {
        parseModelDocument(text, origin);
    } catch (const ConfigError& error) {
        return error;
    }
    return std::nullopt;
}

bool contains(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

ModelDocument preset(const std::string& name) { return loadModelDocument(resolveConfigPath(name)); }

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

    // The JSON itself: bounded nesting, repeated keys (config/JsonText).
    void deepNestingRefused_data();
    void deepNestingRefused();
    void nestingBoundary();
    void bracketsInStringsAreNotNesting();
    void repeatedKeyRefused_data();
    void repeatedKeyRefused();
    void sameKeyInDifferentObjectsIsFine();
    void tryParseJsonTextReportsInsteadOfThrowing();

    // Size bounds and warnings.
    void absurdModelRefused_data();
    void absurdModelRefused();
    void largestModelWithinTheBound();
    void keysWithoutEffectWarn_data();
    void keysWithoutEffectWarn();
    void imageSequenceIsThePatches_data();
    void imageSequenceIsThePatches();

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
                                              << "\"language_model\" predicts next tokens";
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
    QTest::newRow("head language-model") << "head" << "language-model" << "classification, language_model"
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

// ---------------------------------------------------------------- JsonText

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

void TestModelConfig::deepNestingRefused_data()
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

void TestModelConfig::deepNestingRefused()
{
    QFETCH(QString, document);
    QFETCH(int, line);

    const auto error = documentError(document.toStdString(), "deep.json");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().text()),
             QStringLiteral("deep.json: nesting deeper than 64 levels at line %1").arg(line));
}

void TestModelConfig::nestingBoundary()
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

void TestModelConfig::bracketsInStringsAreNotNesting()
{
    // Brackets inside strings (escaped quotes and backslashes included) are text.
    const std::string brackets(10000, '[');
    const ModelDocument document =
        parseModelDocument("{\"name\": \"" + brackets + "\\\"{{\\\\\", \"description\": \"]]\", \"model\": {}}");
    QCOMPARE(document.name.size(), brackets.size() + 4);
}

void TestModelConfig::repeatedKeyRefused_data()
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

void TestModelConfig::repeatedKeyRefused()
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

void TestModelConfig::sameKeyInDifferentObjectsIsFine()
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

void TestModelConfig::tryParseJsonTextReportsInsteadOfThrowing()
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

// ---------------------------------------------------------------- sizes and warnings

void TestModelConfig::absurdModelRefused_data()
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

void TestModelConfig::absurdModelRefused()
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

void TestModelConfig::largestModelWithinTheBound()
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

void TestModelConfig::keysWithoutEffectWarn_data()
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

void TestModelConfig::imageSequenceIsThePatches_data()
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

void TestModelConfig::imageSequenceIsThePatches()
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

void TestModelConfig::keysWithoutEffectWarn()
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

// ---------------------------------------------------------------- JsonSection

void TestModelConfig::integerReaderBoundaries_data()
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

void TestModelConfig::integerReaderBoundaries()
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

void TestModelConfig::nonObjectSectionReportedOnce()
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

void TestModelConfig::closestMatch_data()
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

void TestModelConfig::closestMatch()
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

void TestModelConfig::toJsonRoundTrip_data()
{
    QTest::addColumn<QString>("json");

    // Every key, with a value other than its default (within what the rules allow).
    const char* const moe = R"({
        "vocab_size": 1000, "max_len": 64, "d_model": 96, "embedding_dim": 32, "layers": 4, "heads": 3,
        "head_dim": 40, "ffn_dim": 200, "activation": "silu", "dropout": 0.25, "head": "classification",
        "pooling": "mean", "pooler": true, "num_classes": 7, "experts": 8, "top_k": 3,
        "capacity_factor": 0.5, "eval_capacity_factor": 1.5, "router_noise_std": 0.3,
        "balance_loss_weight": 0.02, "router_z_loss_weight": 0.001, "routing_groups": 2, "routing_priority": "batch",
        "renormalize_gates": true, "share_router": false, "share_attention": true, "share_ffn": true,
        "share_layernorm": true, "paths": 1, "path_norm": false, "learnable_path_weights": false,
        "path_extra_features": false, "input": "tokens", "image_size": 64, "patch_size": 8, "channels": 1})";
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
        "renormalize_gates": false, "share_router": true, "share_attention": false, "share_ffn": true,
        "share_layernorm": false, "paths": 3, "path_norm": true, "learnable_path_weights": true,
        "path_extra_features": true, "input": "tokens", "image_size": 30, "patch_size": 3, "channels": 3})";
}

void TestModelConfig::toJsonRoundTrip()
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

void TestModelConfig::toJsonOfDefaultsIsComplete()
{
    // The configuration table of docs/model.md has 36 keys besides the attention
    // mechanisms' (docs/attention.md); toJson writes them all, and fromJson reads
    // every one of them back without an unknown key.
    const nlohmann::json written = ModelConfig{}.toJson();
    QCOMPARE(int(written.size()), 36 + 2 + int(ModelConfig::defaultAttentionOptions().size()));
    for (const char* key : {"vocab_size", "max_len", "d_model", "embedding_dim", "layers", "heads", "head_dim",
                            "ffn_dim", "activation", "dropout", "head", "pooling", "pooler", "num_classes",
                            "experts", "top_k", "capacity_factor", "eval_capacity_factor", "router_noise_std",
                            "balance_loss_weight", "router_z_loss_weight", "routing_groups", "routing_priority", "renormalize_gates",
                            "share_router", "share_attention", "share_ffn", "share_layernorm", "paths",
                            "path_norm", "learnable_path_weights", "path_extra_features", "input", "image_size",
                            "patch_size", "channels"})
        QVERIFY2(written.contains(key), key);
    QCOMPARE(q(written.at("activation").get<std::string>()), QStringLiteral("gelu"));
    QCOMPARE(q(written.at("head").get<std::string>()), QStringLiteral("classification"));
    QCOMPARE(q(written.at("pooling").get<std::string>()), QStringLiteral("cls"));
    QCOMPARE(q(written.at("routing_priority").get<std::string>()), QStringLiteral("position"));

    std::vector<ConfigIssue> issues;
    ModelConfig::fromJson(written, issues);
    QVERIFY2(issues.empty(), qPrintable(joined(issues)));
}

// ---------------------------------------------------------------- presets

void TestModelConfig::shippedPresetsLoad()
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

void TestModelConfig::shippedPresetsHaveNoWarnings()
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

void TestModelConfig::requiredPresetExists_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name :
         {"transformer-6x8", "transformer-3x16", "transformer-2x24", "transformer-1x48", "transformer-6x8-paper",
          "transformer-3x16-paper", "transformer-2x24-paper", "transformer-1x48-paper", "widenet", "vit-moe",
          "albert", "multipath-6x2", "multipath-3x4", "multipath-3x4-features"})
        QTest::newRow(name) << name;
}

void TestModelConfig::requiredPresetExists()
{
    QFETCH(QString, name);
    QVERIFY(contains(listPresets(), name.toStdString()));
    const std::filesystem::path path = resolveConfigPath(name.toStdString());
    QCOMPARE(q(path.filename().string()), name + QStringLiteral(".json"));
}

void TestModelConfig::widenetSemantics()
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

void TestModelConfig::vitMoeSemantics()
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

void TestModelConfig::albertSemantics()
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

void TestModelConfig::wideAttentionPresets_data()
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

void TestModelConfig::wideAttentionPresets()
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

void TestModelConfig::multipathPresets_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("layers");
    QTest::addColumn<qint64>("paths");
    QTest::addColumn<bool>("extraFeatures");

    QTest::newRow("multipath-6x2") << "multipath-6x2" << qint64(6) << qint64(2) << false;
    QTest::newRow("multipath-3x4") << "multipath-3x4" << qint64(3) << qint64(4) << false;
    QTest::newRow("multipath-3x4-features") << "multipath-3x4-features" << qint64(3) << qint64(4) << true;
}

void TestModelConfig::multipathPresets()
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

void TestModelConfig::resolveUnknownName()
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

void TestModelConfig::resolveKnownNameAndFile()
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

void TestModelConfig::loadMissingFile()
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

QTEST_GUILESS_MAIN(TestModelConfig)
#include "tst_modelconfig.moc"
