// Checks the C++ model against the independent PyTorch reference in
// tests/reference/reference_model.py: same weights, same inputs; outputs,
// balance loss, loss, every gradient and every routing decision must agree.
#include "TestSupport.h"
#include "model/Router.h"
#include "model/WideTransformer.h"

#include <QtTest>

#include <algorithm>

using namespace widelab;

namespace {

// Relative, fp32 on both sides. A tensor whose fp32 rounding alone exceeds it
// (a gradient through cancellation: the ViT-MoE router's reached 1.3e-5 on an
// AVX-512 machine, the reference's fp32 against its own fp64 as much as against
// the C++) is held instead to the larger of kTolerance and kRoundingFactor times
// the reference's own fp32 error, both measured from the reference computed in fp64.
constexpr double kTolerance = 1e-5;
constexpr double kRoundingFactor = 2.0;

// Small models of every family. Dropout and router noise are off so that the
// comparison is exact; capacity factors are chosen so that K*C*S/E is never
// within rounding of an integer.
const char* kBase = R"({"vocab_size": 23, "max_len": 12, "d_model": 32, "heads": 4, "head_dim": 8,
                        "ffn_dim": 48, "dropout": 0.0, "num_classes": 5, "router_noise_std": 0.0})";

ModelConfig makeConfig(const QString& overrides) { return test::modelConfig(kBase, overrides.toStdString()); }

}  // namespace

class TestReference : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void matchesReference_data();
    void matchesReference();
};

void TestReference::matchesReference_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("mode");
    QTest::addColumn<bool>("expectDrops");

    QTest::newRow("deep 3x4") << R"({"layers": 3, "heads": 4})" << "train" << false;
    QTest::newRow("wide 1x12, attention wider than d_model")
        << R"({"layers": 1, "heads": 12, "activation": "relu"})" << "eval" << false;
    QTest::newRow("WideNet: shared attention and MoE, own LayerNorms, drops")
        << R"({"layers": 4, "experts": 4, "top_k": 2, "capacity_factor": 0.8, "pooling": "mean",
              "share_attention": true, "share_ffn": true, "share_router": true})"
        << "train" << true;
    QTest::newRow("WideNet, the balance loss counting both choices (Eq. 4's 2-hot h)")
        << R"({"layers": 3, "experts": 4, "top_k": 2, "capacity_factor": 1.0, "balance_count": "topk",
              "balance_loss_weight": 0.5, "pooling": "mean", "share_attention": true, "share_ffn": true})"
        << "train" << true;
    QTest::newRow("WideNet with 2 routing groups, eval capacity")
        << R"({"layers": 4, "experts": 4, "top_k": 2, "eval_capacity_factor": 0.9, "routing_groups": 2,
              "pooling": "mean", "share_attention": true, "share_ffn": true})"
        << "eval" << true;
    QTest::newRow("ViT-MoE: unshared, router per block, batch priority, renormalised")
        << R"({"layers": 2, "experts": 3, "top_k": 2, "capacity_factor": 0.7, "share_router": false,
              "routing_priority": "batch", "renormalize_gates": true})"
        << "train" << true;
    QTest::newRow("ALBERT: everything shared, factorised embedding, pooler")
        << R"({"layers": 3, "embedding_dim": 16, "pooler": true, "share_attention": true,
              "share_ffn": true, "share_layernorm": true})"
        << "train" << false;
    QTest::newRow("multi-path 2 paths, PathNorm, learnable weights")
        << R"({"layers": 2, "paths": 2, "path_norm": true, "learnable_path_weights": true})" << "train" << false;
    QTest::newRow("multi-path 3 paths, extra features, fixed weights")
        << R"({"layers": 2, "paths": 3, "path_norm": true, "path_extra_features": true, "activation": "silu"})"
        << "train" << false;
    QTest::newRow("multi-path 4 paths, extra features, learnable, shared attention")
        << R"({"layers": 2, "paths": 4, "path_norm": true, "learnable_path_weights": true,
              "path_extra_features": true, "share_attention": true})"
        << "train" << false;
    QTest::newRow("language model, MoE top-1, PathNorm on one path")
        << R"({"layers": 2, "head": "language_model", "experts": 4, "top_k": 1, "capacity_factor": 0.9,
              "path_norm": true, "learnable_path_weights": true})"
        << "train" << true;
    QTest::newRow("language model, MoE top-2, token-major slots, drops")
        << R"({"layers": 2, "head": "language_model", "experts": 3, "top_k": 2, "capacity_factor": 0.55,
              "share_ffn": true})"
        << "train" << true;
    QTest::newRow("masked language model (both sides), MoE top-2, batch priority")
        << R"({"layers": 2, "head": "masked_lm", "experts": 4, "top_k": 2, "capacity_factor": 0.8,
              "routing_priority": "batch"})"
        << "train" << true;
    QTest::newRow("text pairs: segments, CLS, MoE top-2")
        << R"({"layers": 2, "segments": 2, "experts": 4, "top_k": 2, "capacity_factor": 0.9})" << "train" << true;
    QTest::newRow("text pairs: segments, mean pooling, shared blocks")
        << R"({"layers": 2, "segments": 2, "pooling": "mean", "share_attention": true, "share_ffn": true})"
        << "eval" << false;
    QTest::newRow("language model, 2 paths, shared LayerNorms")
        << R"({"layers": 2, "head": "language_model", "paths": 2, "learnable_path_weights": true,
              "share_layernorm": true})"
        << "train" << false;

    // Images (WideNet's ViT setting): 12 x 12 pixels in 4 x 4 patches (9 tokens),
    // or 8 x 8 grey pixels in 2 x 2 patches (16 tokens).
    QTest::newRow("image WideNet: mean pooling, shared attention and MoE, drops")
        << R"({"input": "image", "image_size": 12, "patch_size": 4, "layers": 3, "experts": 4, "top_k": 2,
              "capacity_factor": 0.8, "pooling": "mean", "share_attention": true, "share_ffn": true})"
        << "train" << true;
    QTest::newRow("image ViT with CLS, grey, 2 x 2 patches")
        << R"({"input": "image", "image_size": 8, "patch_size": 2, "channels": 1, "layers": 2})" << "eval" << false;
    QTest::newRow("image ViT-MoE: CLS, router per block, drops")
        << R"({"input": "image", "image_size": 12, "patch_size": 4, "layers": 2, "experts": 3, "top_k": 2,
              "capacity_factor": 0.7, "share_router": false})"
        << "train" << true;
    QTest::newRow("image multi-path: 3 paths, PathNorm, extra features, learnable weights")
        << R"({"input": "image", "image_size": 8, "patch_size": 4, "channels": 1, "layers": 2, "paths": 3,
              "path_norm": true, "learnable_path_weights": true, "path_extra_features": true})"
        << "train" << false;
    // Kernel mechanisms (linear, performer): few features so that they differ from softmax.
    QTest::newRow("linear attention, classification")
        << R"({"layers": 2, "heads": 3, "attention": "linear"})" << "train" << false;
    QTest::newRow("linear attention, language model")
        << R"({"layers": 2, "head": "language_model", "attention": "linear"})" << "train" << false;
    QTest::newRow("performer, 12 orthogonal features (1.5 blocks), classification")
        << R"({"layers": 2, "heads": 3, "attention": "performer", "performer_features": 12})" << "train" << false;
    QTest::newRow("performer, language model, shared attention")
        << R"({"layers": 2, "head": "language_model", "attention": "performer", "performer_features": 5,
              "share_attention": true})"
        << "train" << false;
    QTest::newRow("mixed: performer and linear heads beside full ones, 2 paths")
        << R"({"layers": 2, "heads": 4, "paths": 2, "attention": "mixed",
              "attention_mix": ["performer", "full", "linear", "full"], "performer_features": 3})"
        << "train" << false;
    // Low-rank and learned-pattern attention (issue 17): keys small enough that
    // projections, ranks and blocks are shorter than the 10 (or 11) positions.
    QTest::newRow("linformer k=4, mean pooling, padding")
        << R"({"layers": 2, "attention": "linformer", "linformer_k": 4, "pooling": "mean"})" << "train" << false;
    QTest::newRow("linformer k=5 with CLS, shared attention, eval")
        << R"({"layers": 3, "attention": "linformer", "linformer_k": 5, "share_attention": true})" << "eval" << false;
    QTest::newRow("synthesizer dense")
        << R"({"layers": 2, "attention": "synthesizer", "synthesizer_variant": "dense"})" << "train" << false;
    QTest::newRow("synthesizer random, language model")
        << R"({"layers": 2, "head": "language_model", "attention": "synthesizer", "synthesizer_variant": "random"})"
        << "train" << false;
    QTest::newRow("synthesizer factorized random rank 3, language model")
        << R"({"layers": 2, "head": "language_model", "attention": "synthesizer", "synthesizer_rank": 3})"
        << "train" << false;
    QTest::newRow("sinkhorn blocks of 3 (last one short), 2 Sinkhorn rounds, temperature 0.7")
        << R"({"layers": 2, "attention": "sinkhorn", "sinkhorn_block_size": 3, "sinkhorn_iterations": 2,
              "sinkhorn_temperature": 0.7, "pooling": "mean"})"
        << "train" << false;
    QTest::newRow("sinkhorn blocks of 4 with CLS, softmax sorting, 2 paths")
        << R"({"layers": 2, "attention": "sinkhorn", "sinkhorn_block_size": 4, "paths": 2, "path_norm": true})"
        << "train" << false;
    QTest::newRow("mixed full, linformer, sinkhorn, synthesizer dense")
        << R"({"layers": 2, "attention": "mixed", "attention_mix": ["full", "linformer", "sinkhorn", "synthesizer"],
              "linformer_k": 3, "sinkhorn_block_size": 4, "synthesizer_variant": "dense", "pooling": "mean"})"
        << "train" << false;
    QTest::newRow("mixed synthesizer and full, language model, 2 paths")
        << R"({"layers": 2, "head": "language_model", "attention": "mixed", "attention_mix": ["synthesizer", "full"],
              "synthesizer_rank": 2, "paths": 2})"
        << "train" << false;
    // Windowed mechanisms: windows and blocks smaller than the 11 positions (CLS and 10 tokens).
    QTest::newRow("local blocks of 3")
        << R"({"layers": 2, "attention": "local", "local_block_size": 3})" << "train" << false;
    QTest::newRow("local, language model")
        << R"({"layers": 2, "attention": "local", "local_block_size": 4, "head": "language_model"})" << "train" << false;
    QTest::newRow("longformer window 3, CLS global")
        << R"({"layers": 2, "attention": "longformer", "longformer_window": 3, "longformer_global_tokens": 1})"
        << "train" << false;
    QTest::newRow("longformer window 4, no global, mean pooling, 2 paths")
        << R"({"layers": 2, "attention": "longformer", "longformer_window": 4, "pooling": "mean", "paths": 2})"
        << "train" << false;
    QTest::newRow("longformer, language model, 2 global")
        << R"({"layers": 2, "attention": "longformer", "longformer_window": 4, "longformer_global_tokens": 2,
              "head": "language_model"})"
        << "train" << false;
    QTest::newRow("bigbird blocks of 2, 1 random")
        << R"({"layers": 2, "attention": "bigbird", "bigbird_block_size": 2, "bigbird_random_blocks": 1})"
        << "train" << false;
    QTest::newRow("bigbird, language model, 2 random, shared attention")
        << R"({"layers": 2, "attention": "bigbird", "bigbird_block_size": 2, "bigbird_random_blocks": 2,
              "head": "language_model", "share_attention": true})"
        << "train" << false;
    QTest::newRow("sparse strided 3")
        << R"({"layers": 2, "attention": "sparse", "sparse_pattern": "strided", "sparse_block_size": 3})"
        << "train" << false;
    QTest::newRow("sparse fixed l=4 c=1, language model")
        << R"({"layers": 2, "attention": "sparse", "sparse_block_size": 4, "sparse_summary": 1,
              "head": "language_model"})"
        << "train" << false;
    QTest::newRow("sparse fixed l=3 c=2, eval")
        << R"({"layers": 2, "attention": "sparse", "sparse_block_size": 3, "sparse_summary": 2})" << "eval" << false;
    QTest::newRow("mixed: full, local, longformer, bigbird")
        << R"({"layers": 2, "attention": "mixed", "attention_mix": ["full", "local", "longformer", "bigbird"],
              "local_block_size": 3, "longformer_window": 3, "bigbird_block_size": 3, "bigbird_random_blocks": 1})"
        << "train" << false;
    // Fixed path weights of an encoder (issue 35): the buffers' values are checked
    // against model.path_weight ("initial.*").
    QTest::newRow("multi-path 4 paths, fixed weights 1 over sqrt(n)")
        << R"({"layers": 2, "paths": 4, "path_norm": true, "path_weight": "inverse_sqrt_n"})" << "train" << false;

    // Encoder-decoders (issue 35): padded sources of lengths 10, 7, 4 and padded
    // targets of lengths 8, 5, 6; expectDrops: drops on both sides.
    QTest::newRow("translation dense: 2-layer encoder, 3-layer decoder")
        << R"({"head": "translation", "layers": 2, "decoder_layers": 3})" << "train" << false;
    QTest::newRow("translation multi-path: 3 paths, PathNorm, learnable weights from 1/n, extra features")
        << R"({"head": "translation", "layers": 2, "decoder_layers": 2, "paths": 3, "path_norm": true,
              "learnable_path_weights": true, "path_extra_features": true, "path_weight": "inverse_n"})"
        << "train" << false;
    QTest::newRow("translation WideNet: shared attention and MoE, drops on both sides, z-loss")
        << R"({"head": "translation", "layers": 3, "decoder_layers": 2, "experts": 4, "top_k": 2,
              "capacity_factor": 0.8, "share_attention": true, "share_ffn": true, "router_z_loss_weight": 0.05})"
        << "train" << true;
    QTest::newRow("translation shared LayerNorms: path combiners shared too, 3-layer encoder, 1-layer decoder, eval")
        << R"({"head": "translation", "layers": 3, "decoder_layers": 1, "share_layernorm": true, "paths": 2,
              "path_norm": true})"
        << "eval" << false;
    QTest::newRow("translation MoE top-1: router per block, 2 groups, eval capacity drops")
        << R"({"head": "translation", "layers": 2, "decoder_layers": 3, "experts": 3, "top_k": 1,
              "share_router": false, "routing_groups": 2, "eval_capacity_factor": 0.7})"
        << "eval" << true;
    QTest::newRow("translation linformer: linformer encoder, full decoder, shared attention")
        << R"({"head": "translation", "layers": 2, "decoder_layers": 2, "attention": "linformer", "linformer_k": 4,
              "share_attention": true})"
        << "train" << false;
}

void TestReference::matchesReference()
{
    QFETCH(QString, config);
    QFETCH(QString, mode);
    QFETCH(bool, expectDrops);
    const ModelConfig c = makeConfig(config);

    torch::manual_seed(7);
    WideTransformer model(c);
    // Path weights (alpha, beta) as initialised, before the perturbation below.
    std::map<std::string, torch::Tensor> initialPathWeights;
    auto isPathWeight = [](const std::string& name) {
        const std::string leaf = name.substr(name.rfind('.') + 1);
        return (leaf == "alpha" || leaf == "beta") && name.find("path_") != std::string::npos;
    };
    for (const auto& item : model->named_parameters())
        if (isPathWeight(item.key()))
            initialPathWeights[item.key()] = item.value().detach().clone();
    for (const auto& item : model->named_buffers())
        if (isPathWeight(item.key()))
            initialPathWeights[item.key()] = item.value().detach().clone();
    {
        // Move every parameter off its initial value so that LayerNorms, path
        // weights and the CLS token differ per block, and make the router decisive.
        torch::NoGradGuard noGrad;
        for (auto& p : model->parameters())
            p.add_(torch::randn_like(p) * 0.1);
        for (const auto& item : model->named_parameters())
            if (item.key().rfind("router.", 0) == 0 || item.key().rfind("decoder.router.", 0) == 0)
                item.value().normal_(0.0, 1.0);
    }
    mode == "train" ? model->train() : model->eval();

    // B = 3 sequences of T = 10 tokens, right-padded to lengths 10, 7 and 4;
    // images: 3 images of random (normalised) pixels, no mask.
    const std::int64_t B = 3, T = 10;
    const bool image = c.imageInput();
    torch::Tensor ids = image ? torch::randn({B, c.channels, c.imageSize, c.imageSize})
                              : torch::randint(c.vocabSize, {B, T}, torch::kLong);
    if (c.segments > 0) {
        // Text pairs: the separator (the last id) where each real sequence's first text ends, the rest of the
        // ids kept off it but for chance's other separators, which the random ids may hold too.
        ids.index_put_({0, 2}, c.vocabSize - 1);
        ids.index_put_({1, 3}, c.vocabSize - 1);
        ids.index_put_({1, 5}, c.vocabSize - 1);
        ids.index_put_({2, 1}, c.vocabSize - 1);
    }
    const torch::Tensor lengths = torch::tensor({10, 7, 4}, torch::kLong);
    const torch::Tensor mask = image ? torch::Tensor() : torch::arange(T).unsqueeze(0) < lengths.unsqueeze(1);
    // Translation: the decoder reads T' = 8 target tokens, right-padded to lengths
    // 8, 5 and 6, and predicts the next one at each.
    const bool translation = c.isTranslation();
    const std::int64_t targetLength = translation ? 8 : T;
    TargetInput target;
    if (translation) {
        target.ids = torch::randint(c.vocabSize, {B, targetLength}, torch::kLong);
        target.mask = torch::arange(targetLength).unsqueeze(0) < torch::tensor({8, 5, 6}, torch::kLong).unsqueeze(1);
    }
    const torch::Tensor lossMask = translation ? target.mask : mask;
    const torch::Tensor targets = c.head == HeadKind::Classification
                                      ? torch::randint(c.numClasses, {B}, torch::kLong)
                                      : torch::randint(c.vocabSize, {B, targetLength}, torch::kLong);

    const ModelOutput output = model->forward(ids, mask, target);
    // The z-loss is computed only when training with a weight above zero.
    const bool zLoss = mode == "train" && c.routerZLossWeight > 0.0 && c.isMoe();
    torch::Tensor loss = taskLoss(c, output.logits, targets, lossMask) + c.balanceLossWeight * output.balanceLoss;
    if (zLoss) {
        QVERIFY2(output.routerZLoss.defined(), "no router z-loss while training with a z-loss weight");
        loss = loss + c.routerZLossWeight * output.routerZLoss;
    }
    loss.backward();

    std::map<std::string, torch::Tensor> tensors{{"input.targets", targets}};
    if (image) {
        tensors["input.pixels"] = ids;
    } else {
        tensors["input.ids"] = ids;
        tensors["input.mask"] = mask;
    }
    if (translation) {
        tensors["input.target_ids"] = target.ids;
        tensors["input.target_mask"] = target.mask;
    }
    for (const auto& item : model->named_parameters())
        tensors["param." + item.key()] = item.value();
    for (const auto& item : model->named_buffers())
        tensors["param." + item.key()] = item.value();

    const std::string caseName = QString(QTest::currentDataTag()).split(':').first().replace(' ', '_').toStdString();
    std::map<std::string, torch::Tensor> expected;
    try {
        expected = test::runReference(c, mode.toStdString(), tensors, caseName);
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }

    // The reference in fp64, computed when a tensor first misses kTolerance.
    std::map<std::string, torch::Tensor> exact;
    auto exactValue = [&](const std::string& what) -> torch::Tensor {
        if (exact.empty())
            exact = test::runReference(c, mode.toStdString(), tensors, caseName, "float64");
        return exact.count(what) ? exact[what] : torch::Tensor();
    };
    // Empty when `actual` matches `reference`, else what differs.
    auto mismatch = [&](const std::string& what, const torch::Tensor& actual, const torch::Tensor& reference) {
        if (!reference.defined())
            return "the reference did not return " + what;
        if (actual.sizes() != reference.sizes())
            return what + ": shapes differ";
        const double error = test::relativeError(actual, reference);
        if (error <= kTolerance)
            return std::string();
        const torch::Tensor truth = exactValue(what);
        if (!truth.defined())
            return what + ": relative error " + std::to_string(error) + ", and no fp64 reference";
        const double ours = test::relativeError(actual, truth), rounding = test::relativeError(reference, truth);
        if (ours <= std::max(kTolerance, kRoundingFactor * rounding))
            return std::string();
        return what + ": relative error " + std::to_string(error) + " (" + std::to_string(ours)
               + " from the fp64 reference, whose own fp32 rounding is " + std::to_string(rounding) + ")";
    };
#define CHECK_CLOSE(what, actual, reference)                                   \
    do {                                                                       \
        const std::string problem = mismatch(what, actual, reference);         \
        QVERIFY2(problem.empty(), problem.c_str());                            \
    } while (false)

    CHECK_CLOSE("logits", output.logits, expected["logits"]);
    if (mode == "eval") {
        // Inference keeps no gradient, and the CPU may then take other kernels: full
        // attention's blocked one from 16 tokens (the grey ViT's 17 here, on LibTorch
        // 1.13). They must give the reference's logits too.
        torch::NoGradGuard noGrad;
        const std::string problem = mismatch("logits", model->forward(ids, mask, target).logits, expected["logits"]);
        QVERIFY2(problem.empty(), ("in inference, " + problem).c_str());
    }
    CHECK_CLOSE("balance_loss", output.balanceLoss, expected["balance_loss"]);
    if (zLoss)
        CHECK_CLOSE("router_z_loss", output.routerZLoss, expected["router_z_loss"]);
    CHECK_CLOSE("loss", loss, expected["loss"]);
    for (const auto& [name, value] : initialPathWeights)
        CHECK_CLOSE("initial." + name, value, expected["initial." + name]);
    for (const auto& [name, value] : expected)
        if (name.rfind("initial.", 0) == 0)
            QVERIFY2(initialPathWeights.count(name.substr(8)), ("the model has no path weight " + name.substr(8)).c_str());
    int gradients = 0;
    for (const auto& item : model->named_parameters()) {
        const torch::Tensor grad = item.value().grad().defined() ? item.value().grad() : torch::zeros_like(item.value());
        CHECK_CLOSE("grad." + item.key(), grad, expected["grad." + item.key()]);
        ++gradients;
    }
    QCOMPARE(gradients, static_cast<int>(model->parameters().size()));

    // Routing decisions, call by call.
    ForwardTrace trace;
    trace.captureAttention = false;
    {
        torch::NoGradGuard noGrad;
        model->inspect(ids, mask, trace, target);
    }
    // The trace's blocks: the encoder's, then (translation) the decoder's.
    const std::int64_t decoderBlocks = translation ? c.decoderLayers : 0;
    QCOMPARE(static_cast<std::int64_t>(trace.blocks.size()), c.layers + decoderBlocks);
    int call = 0;
    bool dropped = false, droppedInDecoder = false;
    for (std::size_t b = 0; b < trace.blocks.size(); ++b) {
        const auto& block = trace.blocks[b];
        if (!block.routed)
            continue;
        const std::string prefix = "route." + std::to_string(call++) + ".";
        QVERIFY2(expected.count(prefix + "expert"), ("the reference made fewer routing calls than " + prefix).c_str());
        QVERIFY2(torch::equal(block.expert, expected[prefix + "expert"]), (prefix + "expert differs").c_str());
        QVERIFY2(torch::equal(block.kept, expected[prefix + "kept"]), (prefix + "kept differs").c_str());
        CHECK_CLOSE(prefix + "gates", block.gates, expected[prefix + "gates"]);
        const bool drops = !block.kept.all().item<bool>();
        (static_cast<std::int64_t>(b) < c.layers ? dropped : droppedInDecoder) |= drops;
    }
    // Routing calls: G in the encoder, min(G, decoder_layers) in the decoder.
    const std::int64_t calls = c.isMoe() ? c.routingGroups + std::min(c.routingGroups, decoderBlocks) : 0;
    QCOMPARE(call, static_cast<int>(calls));
    if (translation)
        QCOMPARE(droppedInDecoder, expectDrops);
    QVERIFY2(!expected.count("route." + std::to_string(call) + ".expert"), "the reference made more routing calls");
    QCOMPARE(dropped, expectDrops);
}

QTEST_GUILESS_MAIN(TestReference)
#include "tst_reference.moc"
