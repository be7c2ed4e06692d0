// Tests of the encoder-decoder (model.head "translation"): what the decoder may
// see (causal over the target, every source token, no padding), its own blocks and
// sharing, the tied output, the trace, the parameter count, and input errors. The
// numbers themselves are checked against the Python reference in tst_reference.
#include "TranslationTestSupport.h"
#include "measure/Measurements.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"

#include <QtTest>

#include <set>

using namespace widelab;

namespace {

ModelConfig parse(const std::string& overrides = "{}") { return test::translationConfig(overrides); }

torch::Tensor ids(std::int64_t batch, std::int64_t length, std::uint64_t seed)
{
    torch::manual_seed(seed);
    return torch::randint(19, {batch, length}, torch::kLong);
}

// How many distinct modules a parameter name prefix ("decoder.cross.") holds.
std::size_t modulesUnder(const WideTransformer& model, const std::string& prefix)
{
    std::set<std::string> modules;
    for (const auto& item : model->named_parameters())
        if (item.key().rfind(prefix, 0) == 0)
            modules.insert(item.key().substr(0, item.key().find('.', prefix.size())));
    return modules.size();
}

}  // namespace

class TestEncoderDecoder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void logitsHaveOneRowPerTargetPosition();
    void decoderIsCausalOverTheTarget();
    void decoderWithExpertsIsCausalOverTheTarget();
    void everyTargetPositionReadsTheSource();
    void sourcePaddingChangesNothing();
    void targetPaddingDoesNotChangeRealPositions();
    void outputIsTiedToTheTokenEmbedding();
    void eachSideHasItsOwnDepthAndSharing();
    void parameterCountMatchesTheModule_data();
    void parameterCountMatchesTheModule();
    void decoderFlopsCountTheDecodersPaths();
    void everyParameterGetsAGradient_data();
    void everyParameterGetsAGradient();
    void traceHoldsBothSidesAndTheAlignment();
    void pathWeightsOfBothSidesAreMeasured();
    void badInputIsAnErrorNotACrash();
    void configurationRefusesWhatCannotTranslate();
};

void TestEncoderDecoder::logitsHaveOneRowPerTargetPosition()
{
    WideTransformer model(parse());
    model->eval();
    torch::NoGradGuard noGrad;
    const ModelOutput out = model->forward(ids(3, 7, 1), {}, {ids(3, 5, 2), {}});
    QCOMPARE(out.logits.sizes().vec(), (std::vector<std::int64_t>{3, 5, 19}));
}

void TestEncoderDecoder::decoderIsCausalOverTheTarget()
{
    WideTransformer model(parse());
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = ids(1, 6, 3), target = ids(1, 8, 4);
    torch::Tensor changed = target.clone();
    changed[0][5] = (target[0][5].item<std::int64_t>() + 1) % 19;
    const torch::Tensor a = model->forward(source, {}, {target, {}}).logits;
    const torch::Tensor b = model->forward(source, {}, {changed, {}}).logits;
    QVERIFY(torch::allclose(a.narrow(1, 0, 5), b.narrow(1, 0, 5), 1e-6, 1e-7));  // before 5: unchanged
    QVERIFY(!torch::allclose(a.narrow(1, 5, 3), b.narrow(1, 5, 3), 1e-4, 1e-4));  // from 5 on: changed
}

void TestEncoderDecoder::decoderWithExpertsIsCausalOverTheTarget()
{
    // Experts that never drop in evaluation (the default for a decoder): a later
    // token cannot take an earlier one's slot.
    WideTransformer model(parse(R"({"experts": 4, "top_k": 2})"));
    QCOMPARE(model->config().evalCapacityFactor, 0.0);
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = ids(2, 6, 5), target = ids(2, 9, 6);
    torch::Tensor changed = target.clone();
    changed.select(1, 6).fill_(0);
    const torch::Tensor a = model->forward(source, {}, {target, {}}).logits;
    const torch::Tensor b = model->forward(source, {}, {changed, {}}).logits;
    QVERIFY(torch::allclose(a.narrow(1, 0, 6), b.narrow(1, 0, 6), 1e-6, 1e-7));
}

void TestEncoderDecoder::everyTargetPositionReadsTheSource()
{
    WideTransformer model(parse());
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = ids(1, 6, 7), target = ids(1, 5, 8);
    torch::Tensor changed = source.clone();
    changed[0][5] = (source[0][5].item<std::int64_t>() + 3) % 19;  // the last source token
    const torch::Tensor a = model->forward(source, {}, {target, {}}).logits;
    const torch::Tensor b = model->forward(changed, {}, {target, {}}).logits;
    for (std::int64_t t = 0; t < 5; ++t)  // the first target position too: cross-attention is not causal
        QVERIFY2(!torch::allclose(a.select(1, t), b.select(1, t), 1e-4, 1e-4), qPrintable(QString::number(t)));
}

void TestEncoderDecoder::sourcePaddingChangesNothing()
{
    WideTransformer model(parse(R"({"paths": 2, "path_norm": true})"));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = ids(1, 5, 9), target = ids(1, 4, 10);
    // The same source padded with 3 more positions of any id, masked out.
    const torch::Tensor padded = torch::cat({source, torch::full({1, 3}, 7, torch::kLong)}, 1);
    torch::Tensor mask = torch::ones({1, 8}, torch::kBool);
    mask.narrow(1, 5, 3).fill_(false);
    const torch::Tensor a = model->forward(source, {}, {target, {}}).logits;
    const torch::Tensor b = model->forward(padded, mask, {target, {}}).logits;
    QVERIFY(torch::allclose(a, b, 1e-4, 1e-5));
}

void TestEncoderDecoder::targetPaddingDoesNotChangeRealPositions()
{
    WideTransformer model(parse(R"({"experts": 2, "top_k": 1})"));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = ids(1, 5, 11), target = ids(1, 4, 12);
    const torch::Tensor padded = torch::cat({target, torch::zeros({1, 2}, torch::kLong)}, 1);
    torch::Tensor mask = torch::ones({1, 6}, torch::kBool);
    mask.narrow(1, 4, 2).fill_(false);
    const torch::Tensor a = model->forward(source, {}, {target, {}}).logits;
    const torch::Tensor b = model->forward(source, {}, {padded, mask}).logits.narrow(1, 0, 4);
    QVERIFY(torch::allclose(a, b, 1e-4, 1e-5));
}

void TestEncoderDecoder::outputIsTiedToTheTokenEmbedding()
{
    WideTransformer model(parse());
    for (const auto& item : model->named_parameters())
        QVERIFY2(item.key().find("lm_head") == std::string::npos && item.key().find("classifier") == std::string::npos,
                 item.key().c_str());
    model->eval();
    torch::NoGradGuard noGrad;
    // Token 4's embedding zeroed: its logit is the final state times zero at every position.
    // (Source and target avoid token 4, whose zero embedding would change the states.)
    model->named_parameters()["embed.token.weight"][4].zero_();
    const torch::Tensor source = torch::tensor({{1, 2, 3, 5}}, torch::kLong);
    const torch::Tensor target = torch::tensor({{6, 7, 8}}, torch::kLong);
    const torch::Tensor logits = model->forward(source, {}, {target, {}}).logits;
    QVERIFY(torch::equal(logits.select(2, 4), torch::zeros({1, 3})));
    QVERIFY(logits.select(2, 5).abs().min().item<float>() > 0.0f);
}

void TestEncoderDecoder::eachSideHasItsOwnDepthAndSharing()
{
    const WideTransformer plain(parse());
    QCOMPARE(modulesUnder(plain, "attention."), std::size_t{2});
    QCOMPARE(modulesUnder(plain, "decoder.attention."), std::size_t{3});
    QCOMPARE(modulesUnder(plain, "decoder.cross."), std::size_t{3});
    QCOMPARE(modulesUnder(plain, "decoder.ln_cross."), std::size_t{3});
    QCOMPARE(modulesUnder(plain, "decoder.ffn."), std::size_t{3});
    // WideNet's sharing on both sides, each side its own: one attention, cross-attention
    // and mixture per side; LayerNorms per block.
    const WideTransformer wide(parse(R"({"experts": 4, "share_attention": true, "share_ffn": true})"));
    QCOMPARE(modulesUnder(wide, "attention."), std::size_t{1});
    QCOMPARE(modulesUnder(wide, "decoder.attention."), std::size_t{1});
    QCOMPARE(modulesUnder(wide, "decoder.cross."), std::size_t{1});
    QCOMPARE(modulesUnder(wide, "decoder.ffn."), std::size_t{1});
    QCOMPARE(modulesUnder(wide, "decoder.router."), std::size_t{1});
    QCOMPARE(modulesUnder(wide, "decoder.ln_att."), std::size_t{3});
    // Multi-path on both sides: three combiners per decoder block.
    const WideTransformer paths(parse(R"({"paths": 3, "path_norm": true, "learnable_path_weights": true})"));
    QCOMPARE(modulesUnder(paths, "path_att."), std::size_t{2});
    QCOMPARE(modulesUnder(paths, "decoder.path_cross."), std::size_t{3});
    QCOMPARE(modulesUnder(paths, "decoder.path_ffn."), std::size_t{3});
    QVERIFY(paths->decoder() != nullptr);
    // The paper's systems: paths in the encoder only, a plain decoder.
    const WideTransformer encoderPaths(
        parse(R"({"paths": 3, "path_norm": true, "learnable_path_weights": true, "decoder_paths": 1})"));
    QCOMPARE(modulesUnder(encoderPaths, "path_att."), std::size_t{2});
    QCOMPARE(modulesUnder(encoderPaths, "decoder.path_att."), std::size_t{0});
    QCOMPARE(modulesUnder(encoderPaths, "decoder.path_cross."), std::size_t{0});
    QCOMPARE(encoderPaths->named_parameters()["decoder.ffn.0.w_in"].size(0), std::int64_t{1});
    QCOMPARE(paths->decoder()->depth(), std::int64_t{3});
    QCOMPARE(paths->encoder().depth(), std::int64_t{2});
}

void TestEncoderDecoder::pathWeightsOfBothSidesAreMeasured()
{
    // 2 encoder blocks of 3 paths, then 3 decoder blocks of 3 paths, numbered on from
    // the encoder's: two sublayers an encoder block, three a decoder block.
    WideTransformer model(parse(R"({"paths": 3, "path_norm": true, "learnable_path_weights": true})"));
    {
        torch::NoGradGuard noGrad;
        model->named_parameters()["decoder.path_cross.1.alpha"].fill_(0.25f);
    }
    const std::vector<PathWeights> weights = pathWeights(*model);
    std::vector<std::pair<std::int64_t, std::string>> where;
    for (const PathWeights& p : weights)
        where.emplace_back(p.block, p.sublayer);
    const std::vector<std::pair<std::int64_t, std::string>> expected = {
        {0, "attention"}, {0, "ffn"}, {1, "attention"}, {1, "ffn"},
        {2, "attention"}, {2, "cross_attention"}, {2, "ffn"}, {3, "attention"}, {3, "cross_attention"}, {3, "ffn"},
        {4, "attention"}, {4, "cross_attention"}, {4, "ffn"}};
    QCOMPARE(where, expected);
    QCOMPARE(weights[8].alpha, std::vector<float>(3, 0.25f));  // decoder block 2's cross-attention
    QCOMPARE(weights[8].paths, std::int64_t{3});
    QVERIFY(weights[5].alpha != weights[8].alpha);

    // The paper's plain decoder has no path weights.
    WideTransformer encoderPaths(parse(R"({"paths": 3, "path_norm": true, "learnable_path_weights": true, "decoder_paths": 1})"));
    QCOMPARE(pathWeights(*encoderPaths).size(), std::size_t{4});
}

void TestEncoderDecoder::parameterCountMatchesTheModule_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("dense") << "{}";
    QTest::newRow("multi-path with extra features, learnable")
        << R"({"paths": 3, "path_norm": true, "learnable_path_weights": true, "path_extra_features": true})";
    QTest::newRow("WideNet on both sides, 2 routing groups")
        << R"({"experts": 4, "share_attention": true, "share_ffn": true, "routing_groups": 2})";
    QTest::newRow("shared LayerNorms, deeper decoder") << R"({"share_layernorm": true, "decoder_layers": 5})";
    QTest::newRow("4 paths in the encoder, a plain decoder")
        << R"({"paths": 4, "path_norm": true, "learnable_path_weights": true, "decoder_paths": 1})";
    QTest::newRow("2 paths in the encoder, 3 with extra features in the decoder")
        << R"({"paths": 3, "path_extra_features": true, "path_norm": true, "decoder_paths": 3, "layers": 1})";
}

void TestEncoderDecoder::parameterCountMatchesTheModule()
{
    QFETCH(QString, config);
    const ModelConfig c = parse(config.toStdString());
    const WideTransformer model(c);
    std::int64_t trainable = 0;
    for (const torch::Tensor& p : model->parameters())
        trainable += p.numel();
    QCOMPARE(modelCost(c).total.stored, trainable);
    QCOMPARE(modelCost(c).part("head").stored, std::int64_t{0});  // tied
}

void TestEncoderDecoder::decoderFlopsCountTheDecodersPaths()
{
    // D 16, M 24: one FFN path is 2 products of 16 x 24 per token, 2 x 2 x 16 x 24 = 1,536 FLOPs.
    // Encoder: 2 blocks x 3 paths; decoder: 3 blocks x 1 path: (6 + 3) x 1,536 = 13,824.
    const ModelCost cost = modelCost(parse(R"({"paths": 3, "decoder_paths": 1})"));
    QCOMPARE(cost.part("ffn").flopsPerToken, 13824.0);
    QCOMPARE(cost.flopsPerTokenAtCapacity, cost.flopsPerToken);  // dense: every path runs
}

void TestEncoderDecoder::everyParameterGetsAGradient_data()
{
    parameterCountMatchesTheModule_data();
}

void TestEncoderDecoder::everyParameterGetsAGradient()
{
    QFETCH(QString, config);
    const ModelConfig c = parse(config.toStdString());
    torch::manual_seed(13);
    WideTransformer model(c);
    model->train();
    const torch::Tensor target = ids(4, 6, 14);
    torch::Tensor mask = torch::ones({4, 6}, torch::kBool);
    mask[1].narrow(0, 4, 2).fill_(false);
    const ModelOutput out = model->forward(ids(4, 7, 15), {}, {target, mask});
    const torch::Tensor next = torch::roll(target, -1, 1);
    trainingLoss(c, taskLoss(c, out.logits, next, mask), out).backward();
    for (const auto& item : model->named_parameters()) {
        QVERIFY2(item.value().grad().defined(), item.key().c_str());
        QVERIFY2(item.value().grad().abs().sum().item<double>() > 0.0, item.key().c_str());
    }
}

void TestEncoderDecoder::traceHoldsBothSidesAndTheAlignment()
{
    WideTransformer model(parse(R"({"paths": 2})"));
    model->eval();
    torch::NoGradGuard noGrad;
    torch::Tensor sourceMask = torch::ones({2, 6}, torch::kBool);
    sourceMask[1].narrow(0, 4, 2).fill_(false);
    ForwardTrace trace;
    const torch::Tensor source = ids(2, 6, 16), target = ids(2, 5, 17);
    const ModelOutput out = model->inspect(source, sourceMask, trace, {target, {}});
    // The inspecting pass forms every map; the plain one may take a fused kernel (LibTorch 2.x): rounding differs.
    QVERIFY(torch::allclose(out.logits, model->forward(source, sourceMask, {target, {}}).logits, 1e-4, 1e-5));
    QCOMPARE(trace.blocks.size(), std::size_t{5});  // 2 encoder blocks, then 3 decoder blocks
    QVERIFY(!trace.blocks[1].crossAttention.defined());
    const torch::Tensor cross = trace.blocks[2].crossAttention;  // [B, n*H, T, S]
    QCOMPARE(cross.sizes().vec(), (std::vector<std::int64_t>{2, 4, 5, 6}));
    QVERIFY(torch::allclose(cross.sum(-1), torch::ones({2, 4, 5}), 1e-5, 1e-6));   // each row a distribution
    QCOMPARE(cross[1].narrow(-1, 4, 2).abs().max().item<float>(), 0.0f);           // padded source: never read
    // The decoder's self-attention is causal: nothing above the diagonal.
    QCOMPARE(trace.blocks[3].attention.triu(1).abs().max().item<float>(), 0.0f);
}

void TestEncoderDecoder::badInputIsAnErrorNotACrash()
{
    WideTransformer translator(parse());
    WideTransformer classifier(parse(R"({"head": "classification"})"));
    auto message = [](const std::function<void()>& call) { return test::thrownMessage(call); };
    QVERIFY(message([&] { translator->forward(ids(1, 4, 1)); }).contains("target ids are missing"));
    QVERIFY(message([&] { classifier->forward(ids(1, 4, 1), {}, {ids(1, 3, 2), {}}); })
                .contains("only a translation model takes target ids"));
    QVERIFY(message([&] { translator->forward(ids(1, 4, 1), {}, {torch::full({1, 3}, 19, torch::kLong), {}}); })
                .contains("translation target: token id 19 is outside the vocabulary"));
    QVERIFY(message([&] { translator->forward(ids(2, 4, 1), {}, {ids(3, 3, 2), {}}); })
                .contains("3 targets for 2 sources"));
    QVERIFY(message([&] { translator->forward(ids(1, 4, 1), {}, {ids(1, 13, 2), {}}); })
                .contains("13 tokens exceed model.max_len"));
}

void TestEncoderDecoder::configurationRefusesWhatCannotTranslate()
{
    auto issuesOf = [](const std::string& overrides) {
        std::vector<ConfigIssue> issues;
        nlohmann::json model = {{"head", "translation"}, {"vocab_size", 19}};
        model.update(nlohmann::json::parse(overrides));
        ModelConfig::fromJson(model, issues);
        QStringList keys;
        for (const ConfigIssue& issue : issues)
            keys << QString::fromStdString(issue.key + ": " + issue.reason);
        return keys.join("\n");
    };
    QVERIFY(issuesOf(R"({"embedding_dim": 8})").contains("model.embedding_dim: a translation model ties its output"));
    QVERIFY(issuesOf(R"({"input": "image"})").contains("model.head: \"translation\" reads and writes tokens"));
    QVERIFY(issuesOf(R"({"experts": 2, "routing_priority": "batch"})")
                .contains("model.routing_priority: \"batch\" lets later tokens take earlier tokens' expert slots, "
                          "which a decoder must not see"));
    // The encoder may use any mechanism, even one that cannot be causal: the decoder's attention is full.
    QCOMPARE(issuesOf(R"({"attention": "linformer", "max_len": 16})"), QString());
    // The decoder's routing groups are capped at its depth.
    const ModelConfig c = parse(R"({"layers": 4, "routing_groups": 4, "decoder_layers": 2, "experts": 2})");
    QCOMPARE(c.decoderSide().routingGroups, std::int64_t{2});
    QCOMPARE(c.decoderSide().layers, std::int64_t{2});
}

QTEST_GUILESS_MAIN(TestEncoderDecoder)
#include "tst_encoderdecoder.moc"
