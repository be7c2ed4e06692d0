// What every registered attention mechanism must do, whatever it computes: the
// map it shows is what it applied to the values, padding never reaches a real
// token, a language model never sees the future, every parameter learns, and
// its accounting counts what it builds. A new mechanism is covered by being
// registered; its numbers are checked against tests/reference/ in tst_reference.
#include "TestSupport.h"
#include "model/Attention.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"
#include "model/attention/AttentionMechanism.h"

#include <QtTest>

using namespace widelab;

namespace {

constexpr std::int64_t kB = 2, kT = 24, kA = 4, kG = 3;

// A classification (or language) model whose only mechanism is `name`, with
// every integer key of the mechanism brought down to at most 4 so that windows,
// blocks, features and projections are smaller than the sequence and matter.
nlohmann::json modelFor(const MechanismSpec& spec, bool languageModel)
{
    nlohmann::json model = {{"vocab_size", 17}, {"max_len", kT}, {"d_model", 12}, {"heads", kG},
                            {"head_dim", kA}, {"dropout", 0.0}, {"attention", spec.name},
                            {"head", languageModel ? "language_model" : "classification"}, {"pooling", "mean"}};
    for (const KeySpec& key : spec.keys)
        if (key.type == KeyType::Integer && key.defaultValue.get<std::int64_t>() > 4)
            model[key.name()] = std::max<std::int64_t>(static_cast<std::int64_t>(key.min), 4);
    return model;
}

ModelConfig configFor(const MechanismSpec& spec, bool languageModel)
{
    return test::modelConfig(modelFor(spec, languageModel).dump());
}

struct Mixed {
    torch::Tensor context, map;
};

Mixed runMechanism(MechanismImpl& mechanism, const MixInput& in)
{
    Mixed out;
    out.context = mechanism.mix(in, &out.map);
    return out;
}

MixInput inputs(const torch::Tensor& keyValid, bool causal)
{
    MixInput in;
    in.q = torch::randn({kB, kG, kT, kA});
    in.k = torch::randn({kB, kG, kT, kA});
    in.v = torch::randn({kB, kG, kT, kA});
    in.keyValid = keyValid;
    in.bias = torch::zeros({kB, 1, 1, kT}).masked_fill(keyValid.logical_not().view({kB, 1, 1, kT}), -1e9);
    if (causal)
        in.bias = in.bias + torch::zeros({1, 1, kT, kT}).masked_fill(torch::ones({kT, kT}, torch::kBool).triu(1), -1e9);
    in.causal = causal;
    return in;
}

// A data row for each registered mechanism `which` takes: as a classifier, and
// as a language model where it can be one.
void mechanismRows(const std::function<bool(const MechanismSpec&)>& which)
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("languageModel");
    for (const MechanismSpec* spec : attentionMechanisms()) {
        if (!which(*spec))
            continue;
        QTest::newRow((spec->name + " classification").c_str()) << QString::fromStdString(spec->name) << false;
        if (spec->causal)
            QTest::newRow((spec->name + " language model").c_str()) << QString::fromStdString(spec->name) << true;
    }
}

}  // namespace

class TestAttention : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void mechanisms_data();
    void mechanisms();
    void sharingPathsAndInspection_data() { mechanisms_data(); }
    void sharingPathsAndInspection();
    void withoutMapTheSameContext_data() { mechanisms_data(); }
    void withoutMapTheSameContext();
    void queriesApartAnswerLeadingQueries_data();
    void queriesApartAnswerLeadingQueries();
    void aLayerAnswersItsLeadingQueries();
    void registryAndSchemaAgree();
    void mixedHeadsFollowTheList();
};

void TestAttention::mechanisms_data()
{
    mechanismRows([](const MechanismSpec&) { return true; });
}

void TestAttention::mechanisms()
{
    QFETCH(QString, name);
    QFETCH(bool, languageModel);
    const MechanismSpec& spec = *findMechanism(name.toStdString());
    const ModelConfig config = configFor(spec, languageModel);
    const MechanismShape shape{kG, kA, config.positions(), languageModel};

    torch::manual_seed(3);
    const std::shared_ptr<MechanismImpl> mechanism = spec.make(shape, config);
    mechanism->eval();
    {
        torch::NoGradGuard noGrad;
        for (auto& p : mechanism->parameters())
            p.add_(torch::randn_like(p) * 0.1);
    }

    // Its accounting counts what it builds.
    std::int64_t built = 0;
    for (const auto& p : mechanism->parameters())
        built += p.numel();
    QCOMPARE(qint64(built), qint64(spec.parameters(shape, config)));
    const double flops = spec.flopsPerToken(shape, config, kT);
    QVERIFY(flops > 0.0);
    if (spec.linearCost)  // per token, the cost does not grow with the sequence
        QVERIFY2(spec.flopsPerToken(shape, config, 8 * kT) <= 1.01 * spec.flopsPerToken(shape, config, 4 * kT),
                 "a linear-cost mechanism's FLOPs per token grow with the sequence");

    // Sequence 0 is full; sequence 1 has 15 real tokens, then padding.
    const torch::Tensor keyValid = torch::arange(kT).unsqueeze(0) < torch::tensor({kT, std::int64_t{15}}).unsqueeze(1);
    MixInput in = inputs(keyValid, languageModel);
    in.q.requires_grad_(true);
    in.k.requires_grad_(true);
    in.v.requires_grad_(true);
    const Mixed out = runMechanism(*mechanism, in);
    QCOMPARE(out.context.sizes().vec(), (std::vector<std::int64_t>{kB, kG, kT, kA}));
    QVERIFY(torch::isfinite(out.context).all().item<bool>());

    // The map is what the values were mixed with: context = map v.
    QVERIFY2(out.map.defined(), "the mechanism returns no map for inspection");
    QCOMPARE(out.map.sizes().vec(), (std::vector<std::int64_t>{kB, kG, kT, kT}));
    const torch::Tensor applied = torch::matmul(out.map, in.v);
    QVERIFY2(test::relativeError(out.context, applied) < 1e-4,
             ("context differs from map x v by " + std::to_string(test::relativeError(out.context, applied))).c_str());
    // No weight on a padded key; none on a future key in a language model.
    QCOMPARE(out.map[1].narrow(-1, 15, kT - 15).abs().max().item<float>(), 0.0f);
    if (languageModel)
        QCOMPARE((out.map * torch::ones({kT, kT}).triu(1)).abs().max().item<float>(), 0.0f);
    if (spec.map != MapKind::Implied) {
        const torch::Tensor rows = out.map.sum(-1);
        QVERIFY(torch::allclose(rows, torch::ones_like(rows), 1e-4, 1e-5));
    }

    // Every parameter and the values learn.
    out.context.pow(2).sum().backward();
    QVERIFY(in.v.grad().defined() && in.v.grad().abs().sum().item<float>() > 0.0f);
    for (const auto& item : mechanism->named_parameters())
        QVERIFY2(item.value().grad().defined() && item.value().grad().abs().sum().item<float>() > 0.0f,
                 ("no gradient reaches " + item.key()).c_str());

    // Padding changes nothing at real positions; the future nothing at the past.
    torch::NoGradGuard noGrad;
    MixInput changed = in;
    changed.q = in.q.detach().clone();
    changed.k = in.k.detach().clone();
    changed.v = in.v.detach().clone();
    for (torch::Tensor* t : {&changed.q, &changed.k, &changed.v})
        (*t)[1].narrow(1, 15, kT - 15).normal_();
    if (languageModel)
        for (torch::Tensor* t : {&changed.q, &changed.k, &changed.v})
            (*t)[0].narrow(1, 20, kT - 20).normal_();
    const Mixed again = runMechanism(*mechanism, changed);
    QVERIFY2(torch::allclose(again.context[1].narrow(1, 0, 15), out.context[1].narrow(1, 0, 15), 1e-4, 1e-5),
             "padded tokens change the context of real ones");
    if (languageModel)
        QVERIFY2(torch::allclose(again.context[0].narrow(1, 0, 20), out.context[0].narrow(1, 0, 20), 1e-4, 1e-5),
                 "future tokens change the context of earlier ones");

    // The whole model with this mechanism: a forward, a backward, finite.
    torch::GradMode::set_enabled(true);
    WideTransformer model(config);
    model->train();
    model->beginStep(0);
    const torch::Tensor ids = torch::randint(17, {kB, kT}, torch::kLong);
    const ModelOutput output = model->forward(ids, keyValid);
    QVERIFY(torch::isfinite(output.logits).all().item<bool>());
    torch::GradMode::set_enabled(false);
}

void TestAttention::sharingPathsAndInspection()
{
    // WideNet's shared attention with two paths, inspected: one attention module
    // serves every block, every head of both paths has a map, and the maps are
    // those a forward pass uses (the same logits with and without inspection).
    QFETCH(QString, name);
    QFETCH(bool, languageModel);
    const MechanismSpec& spec = *findMechanism(name.toStdString());
    nlohmann::json model = modelFor(spec, languageModel);
    model["layers"] = 3;
    model["share_attention"] = true;
    model["paths"] = 2;
    model["learnable_path_weights"] = true;
    const ModelConfig c = test::modelConfig(model.dump());
    torch::manual_seed(4);
    WideTransformer net(c);
    net->eval();
    torch::NoGradGuard noGrad;
    std::int64_t attentionModules = 0;
    for (const auto& item : net->named_parameters())
        attentionModules += item.key().rfind("attention.", 0) == 0 && item.key().find(".qkv.weight") != std::string::npos;
    QCOMPARE(attentionModules, std::int64_t{1});

    const torch::Tensor ids = torch::randint(17, {kB, kT}, torch::kLong);
    const torch::Tensor mask = torch::arange(kT).unsqueeze(0) < torch::tensor({kT, std::int64_t{15}}).unsqueeze(1);
    ForwardTrace trace;
    const ModelOutput inspected = net->inspect(ids, mask, trace);
    const ModelOutput plain = net->forward(ids, mask);
    QVERIFY(torch::allclose(inspected.logits, plain.logits, 1e-5, 1e-6));
    QCOMPARE(qint64(trace.blocks.size()), qint64(3));
    for (const BlockTrace& block : trace.blocks)
        QCOMPARE(block.attention.sizes().vec(), (std::vector<std::int64_t>{kB, 2 * kG, kT, kT}));
}

void TestAttention::withoutMapTheSameContext()
{
    // Training asks for no map, and may then take another path (LibTorch 2.x's
    // fused kernel; for a language model without padding, its own causal rule
    // instead of the mask): the same context and gradients as the inspected
    // path, with padding and without.
    QFETCH(QString, name);
    QFETCH(bool, languageModel);
    const MechanismSpec& spec = *findMechanism(name.toStdString());
    const ModelConfig config = configFor(spec, languageModel);
    const MechanismShape shape{kG, kA, config.positions(), languageModel};
    torch::manual_seed(6);
    const std::shared_ptr<MechanismImpl> mechanism = spec.make(shape, config);
    mechanism->eval();

    const torch::Tensor padded = torch::arange(kT).unsqueeze(0) < torch::tensor({kT, std::int64_t{15}}).unsqueeze(1);
    for (const bool padding : {true, false}) {
        MixInput in = inputs(padded, languageModel);
        if (!padding) {
            in.keyValid = torch::Tensor();
            in.bias = languageModel ? in.bias.narrow(0, 0, 1).contiguous() : torch::Tensor();
        }
        auto contextAndGradients = [&](bool inspected) {
            MixInput leaf = in;
            for (torch::Tensor* t : {&leaf.q, &leaf.k, &leaf.v})
                *t = t->detach().clone().requires_grad_(true);
            torch::Tensor map;
            const torch::Tensor context = mechanism->mix(leaf, inspected ? &map : nullptr);
            (context * torch::linspace(-1.0, 1.0, context.numel()).view(context.sizes())).sum().backward();
            // A mechanism may not read q or k (the synthesizer's scores are learned): no gradient is zero.
            auto gradient = [](const torch::Tensor& t) { return t.grad().defined() ? t.grad() : torch::zeros_like(t); };
            return std::vector<torch::Tensor>{context.detach(), gradient(leaf.q), gradient(leaf.k), gradient(leaf.v)};
        };
        const std::vector<torch::Tensor> plain = contextAndGradients(false), inspected = contextAndGradients(true);
        const char* what[] = {"context", "q gradient", "k gradient", "v gradient"};
        for (std::size_t i = 0; i < plain.size(); ++i) {
            const double error = test::relativeError(plain[i], inspected[i]);
            QVERIFY2(error < 1e-5, (std::string(what[i]) + (padding ? " (padded)" : " (no padding)")
                                    + " differs without a map by " + std::to_string(error)).c_str());
        }
    }
}

void TestAttention::queriesApartAnswerLeadingQueries_data()
{
    mechanismRows([](const MechanismSpec& spec) { return spec.queriesApart; });
}

void TestAttention::queriesApartAnswerLeadingQueries()
{
    // A mechanism that says its queries are apart (MechanismSpec::queriesApart)
    // gives the first Q queries, asked alone with every key and value, the rows
    // it gives them among all T: what a classifier's last block relies on to
    // compute its CLS token's row alone. With padding, and causal where it can be.
    QFETCH(QString, name);
    QFETCH(bool, languageModel);
    const MechanismSpec& spec = *findMechanism(name.toStdString());
    const ModelConfig config = configFor(spec, languageModel);
    torch::manual_seed(8);
    const std::shared_ptr<MechanismImpl> mechanism = spec.make({kG, kA, config.positions(), languageModel}, config);
    mechanism->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor padded = torch::arange(kT).unsqueeze(0) < torch::tensor({kT, std::int64_t{15}}).unsqueeze(1);
    const MixInput all = inputs(padded, languageModel);
    const torch::Tensor every = mechanism->mix(all, nullptr);
    for (const std::int64_t queries : {std::int64_t{1}, std::int64_t{5}}) {
        MixInput leading = all;
        leading.q = all.q.narrow(2, 0, queries);
        leading.bias = all.bias.size(2) > 1 ? all.bias.narrow(2, 0, queries) : all.bias;
        const torch::Tensor context = mechanism->mix(leading, nullptr);
        QCOMPARE(context.sizes().vec(), (std::vector<std::int64_t>{kB, kG, queries, kA}));
        const double error = test::relativeError(context, every.narrow(2, 0, queries));
        QVERIFY2(error < 1e-5, (std::to_string(queries) + " leading queries differ by " + std::to_string(error)).c_str());
    }
}

void TestAttention::aLayerAnswersItsLeadingQueries()
{
    // The layer around it: two paths' projections, the first rows of its
    // output from the queries of those rows alone, padding masked; a layer of
    // two mechanisms, one of which does not answer queries apart, refuses.
    const ModelConfig c = test::modelConfig(
        R"({"d_model": 12, "heads": 3, "head_dim": 4, "paths": 2, "max_len": 16, "dropout": 0.0})");
    torch::manual_seed(9);
    Attention layer(c);
    layer->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor x = torch::randn({2, 9, 12});
    const torch::Tensor valid = torch::arange(9).unsqueeze(0) < torch::tensor({9, 4}).unsqueeze(1);
    const torch::Tensor bias = torch::zeros({2, 1, 1, 9}).masked_fill(valid.logical_not().view({2, 1, 1, 9}), -1e9);
    QVERIFY(layer->answersLeading());
    const torch::Tensor every = layer->forward(x, bias, valid);  // [n, B, T, D]
    for (const std::int64_t queries : {std::int64_t{1}, std::int64_t{3}}) {
        const torch::Tensor leading = layer->forwardLeading(x, queries, bias, valid);
        QCOMPARE(leading.sizes().vec(), (std::vector<std::int64_t>{2, 2, queries, 12}));
        const double error = test::relativeError(leading, every.narrow(2, 0, queries));
        QVERIFY2(error < 1e-5, (std::to_string(queries) + " leading rows differ by " + std::to_string(error)).c_str());
    }
    // A key the queries see changes them: the keys are every token's, not the leading ones'.
    torch::Tensor moved = x.clone();
    moved.select(1, 3).add_(1.0);
    QVERIFY(!torch::allclose(layer->forwardLeading(moved, 1, bias, valid), layer->forwardLeading(x, 1, bias, valid)));

    const ModelConfig mixed = test::modelConfig(
        R"({"d_model": 16, "heads": 4, "head_dim": 4, "attention": "mixed", "attention_mix": ["full", "linformer"],
            "max_len": 16})");
    Attention twoMechanisms(mixed);
    QVERIFY(!twoMechanisms->answersLeading());
    QVERIFY_EXCEPTION_THROWN(twoMechanisms->forwardLeading(torch::randn({1, 9, 16}), 1, {}, {}), std::logic_error);
}

void TestAttention::registryAndSchemaAgree()
{
    // Every mechanism's keys are in the schema under model., and model.attention
    // offers every mechanism and "mixed".
    const KeySpec& attention = keySpec("model.attention");
    QCOMPARE(attention.choices.size(), attentionMechanisms().size() + 1);
    QCOMPARE(attention.choices.back(), std::string("mixed"));
    for (const MechanismSpec* spec : attentionMechanisms()) {
        QVERIFY(std::find(attention.choices.begin(), attention.choices.end(), spec->name) != attention.choices.end());
        QVERIFY(!spec->title.empty());
        for (const KeySpec& key : spec->keys) {
            QCOMPARE(key.section(), std::string("model"));
            QCOMPARE(&keySpec(key.key), &keySpec(key.key));  // present (throws otherwise)
            QVERIFY2(key.name().rfind(spec->name + "_", 0) == 0,
                     ("a mechanism's keys start with its name: " + key.key).c_str());
        }
    }
}

void TestAttention::mixedHeadsFollowTheList()
{
    // Two mechanisms over 4 heads: two consecutive heads each, in list order.
    std::vector<std::string> names;
    for (const MechanismSpec* spec : attentionMechanisms())
        names.push_back(spec->name);
    const std::string second = names.size() > 1 ? names[1] : names[0];
    const ModelConfig c = test::modelConfig(
        R"({"d_model": 16, "heads": 4, "head_dim": 4, "attention": "mixed", "max_len": 16})",
        nlohmann::json{{"attention_mix", {"full", second}}}.dump());
    QCOMPARE(headMechanisms(c), (std::vector<std::string>{"full", "full", second, second}));

    // A list that does not divide the heads, or names no mechanism, is an error naming the key.
    for (const char* bad : {R"({"heads": 4, "head_dim": 4, "attention": "mixed", "attention_mix": ["full", "full", "full"]})",
                            R"({"heads": 4, "head_dim": 4, "attention": "mixed", "attention_mix": ["ful"]})",
                            R"({"heads": 4, "head_dim": 4, "attention": "mixed"})"}) {
        std::vector<ConfigIssue> issues;
        ModelConfig::fromJson(nlohmann::json::parse(bad), issues);
        QVERIFY2(!issues.empty() && issues.front().key == "model.attention_mix", bad);
    }
    // A mixed model's heads: the output of the layer equals mixing each share with its own mechanism.
    torch::manual_seed(5);
    Attention layer(c);
    layer->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor x = torch::randn({2, 9, 16});
    torch::Tensor maps;
    layer->forward(x, {}, {}, &maps);
    QCOMPARE(maps.sizes().vec(), (std::vector<std::int64_t>{2, 4, 9, 9}));
    QCOMPARE(qint64(layer->groups.size()), qint64(second == "full" ? 1 : 2));
}

QTEST_GUILESS_MAIN(TestAttention)
#include "tst_attention.moc"
