// Tests of model/ParameterCount: the analytic accounting equals the built
// module's parameters for every preset, and agrees with the papers' own counts.
#include "TestSupport.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"

#include <QtTest>

#include <set>

using namespace widelab;

namespace {

std::int64_t countWithPrefixes(const WideTransformer& model, const std::vector<std::string>& prefixes)
{
    std::int64_t total = 0;
    for (const auto& item : model->named_parameters())
        for (const auto& prefix : prefixes)
            if (item.key().rfind(prefix, 0) == 0)
                total += item.value().numel();
    return total;
}

ModelConfig presetConfig(const std::string& name)
{
    for (const auto& [preset, document] : test::shippedPresets())
        if (preset == name)
            return document.model;
    throw std::runtime_error("no preset " + name);
}

ModelConfig parse(const char* json) { return test::modelConfig(json); }

}  // namespace

class TestParameterCount : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void analyticCountEqualsModule_data();
    void analyticCountEqualsModule();
    void wideAttentionFormula_data();
    void wideAttentionFormula();
    void wideModelsAreSmallerAsInThePaper();
    void wideNetAndAlbertMatchThePaper_data();
    void wideNetAndAlbertMatchThePaper();
    void multiPathTranslationMatchesThePaper_data();
    void multiPathTranslationMatchesThePaper();
    void sharingCountsAModuleOnce();
    void flopsPerTokenByHand();
};

void TestParameterCount::analyticCountEqualsModule_data()
{
    QTest::addColumn<QString>("preset");
    for (const auto& [name, document] : test::shippedPresets())
        QTest::newRow(name.c_str()) << QString::fromStdString(name);
}

void TestParameterCount::analyticCountEqualsModule()
{
    QFETCH(QString, preset);
    const ModelConfig c = presetConfig(preset.toStdString());
    const ModelCost cost = modelCost(c);
    const WideTransformer model(c);

    // Every parameter exists once: shared modules are not registered twice.
    std::set<const void*> storage;
    std::int64_t total = 0;
    for (const auto& p : model->parameters()) {
        storage.insert(p.data_ptr());
        total += p.numel();
    }
    QCOMPARE(storage.size(), model->parameters().size());
    QCOMPARE(cost.total.stored, total);

    // Part by part, by parameter name (docs/model.md); a translation model's
    // decoder (decoder.*, with its cross-attention) counts in the same parts.
    const auto named = [&](std::vector<std::string> prefixes, std::vector<std::string> decoderOnly = {}) {
        if (c.isTranslation()) {
            const std::size_t encoder = prefixes.size();
            for (std::size_t i = 0; i < encoder; ++i)
                prefixes.push_back("decoder." + prefixes[i]);
            for (const std::string& prefix : decoderOnly)
                prefixes.push_back("decoder." + prefix);
        }
        return countWithPrefixes(model, prefixes);
    };
    QCOMPARE(cost.part("embeddings").stored, countWithPrefixes(model, {"embed."}));
    QCOMPARE(cost.part("attention").stored, named({"attention."}, {"cross."}));
    QCOMPARE(cost.part(c.isMoe() ? "experts" : "ffn").stored, named({"ffn."}));
    QCOMPARE(cost.part("router").stored, named({"router."}));
    QCOMPARE(cost.part("layernorms").stored, named({"ln_att.", "ln_ffn.", "final_ln."}, {"ln_cross."}));
    QCOMPARE(cost.part("path weights").stored, named({"path_att.", "path_ffn."}, {"path_cross."}));
    QCOMPARE(cost.part("head").stored, countWithPrefixes(model, {"pooler.", "classifier.", "lm_head."}));

    // Active: only top_k of the E experts of each stored MoE count.
    const std::int64_t ffn = named({"ffn."});
    const std::int64_t activeFfn = c.isMoe() ? ffn / c.experts * c.topK : ffn;
    QCOMPARE(cost.total.active, total - ffn + activeFfn);
}

void TestParameterCount::wideAttentionFormula_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<qint64>("expected");
    // 2 L E (2 A H + M) with E = 512, A = 64, M = 2048:
    QTest::newRow("6x8") << "transformer-6x8-paper" << qint64(2LL * 6 * 512 * (2 * 64 * 8 + 2048));    // 18,874,368
    QTest::newRow("3x16") << "transformer-3x16-paper" << qint64(2LL * 3 * 512 * (2 * 64 * 16 + 2048)); // 12,582,912
    QTest::newRow("2x24") << "transformer-2x24-paper" << qint64(2LL * 2 * 512 * (2 * 64 * 24 + 2048)); // 10,485,760
    QTest::newRow("1x48") << "transformer-1x48-paper" << qint64(2LL * 1 * 512 * (2 * 64 * 48 + 2048)); //  8,388,608
}

void TestParameterCount::wideAttentionFormula()
{
    QFETCH(QString, preset);
    QFETCH(qint64, expected);
    const ModelConfig c = presetConfig(preset.toStdString());
    QCOMPARE(modelCost(c).encoderMatrixParameters, expected);

    // The same from the module: its attention and FFN matrices, biases left out.
    const WideTransformer model(c);
    std::int64_t matrices = 0;
    for (const auto& item : model->named_parameters()) {
        const std::string& name = item.key();
        if (name.find("qkv.weight") != std::string::npos || name.find("out_weight") != std::string::npos
            || name.find("w_in") != std::string::npos || name.find("w_out") != std::string::npos)
            matrices += item.value().numel();
    }
    QCOMPARE(matrices, expected);
}

void TestParameterCount::wideModelsAreSmallerAsInThePaper()
{
    // Wide Attention paper, Table 8 (ListOps, Transformer): deep 229 MiB, wide
    // 109 MiB, a ratio of 0.476. Parameters fall monotonically with depth.
    std::vector<std::int64_t> sizes;
    for (const char* preset : {"transformer-6x8-paper", "transformer-3x16-paper", "transformer-2x24-paper",
                               "transformer-1x48-paper"})
        sizes.push_back(modelCost(presetConfig(preset)).total.stored);
    for (std::size_t i = 1; i < sizes.size(); ++i)
        QVERIFY(sizes[i] < sizes[i - 1]);
    const double ratio = static_cast<double>(sizes.back()) / static_cast<double>(sizes.front());
    QVERIFY2(std::abs(ratio - 109.0 / 229.0) < 0.02, qPrintable(QString("wide/deep = %1").arg(ratio)));
}

void TestParameterCount::wideNetAndAlbertMatchThePaper_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<double>("paperMillions");
    // WideNet, Table 2 (parameters rounded to whole millions by the paper).
    QTest::newRow("ALBERT") << "albert-base-paper" << 12.0;
    QTest::newRow("WideNet 4 experts") << "widenet-nlp-4e-paper" << 26.0;
    QTest::newRow("WideNet 8 experts") << "widenet-nlp-8e-paper" << 45.0;
    QTest::newRow("WideNet 16 experts") << "widenet-nlp-16e-paper" << 83.0;
}

void TestParameterCount::wideNetAndAlbertMatchThePaper()
{
    QFETCH(QString, preset);
    QFETCH(double, paperMillions);
    const double millions = static_cast<double>(modelCost(presetConfig(preset.toStdString())).total.stored) / 1e6;
    // Within the paper's rounding to whole millions.
    QVERIFY2(std::abs(millions - paperMillions) <= 0.5, qPrintable(QString("%1M").arg(millions)));
}

void TestParameterCount::multiPathTranslationMatchesThePaper_data()
{
    QTest::addColumn<int>("layers");  // the encoder's; the decoder is always 6 plain blocks
    QTest::addColumn<int>("paths");
    QTest::addColumn<bool>("ours");   // PathNorm and learnable weights ("+ Ours")
    QTest::addColumn<bool>("extra");  // "+ More Features"
    QTest::addColumn<double>("paperMillions");
    // The Multi-Path Transformer's Table 2 (WMT14 En-De), every system of its Params column.
    QTest::newRow("Transformer-base") << 6 << 1 << false << false << 62.0;
    QTest::newRow("Deep12") << 12 << 1 << false << false << 80.0;
    QTest::newRow("Multi-Path2 6x2") << 6 << 2 << false << false << 80.0;
    QTest::newRow("+ Ours 6x2") << 6 << 2 << true << false << 80.0;
    QTest::newRow("Deep24") << 24 << 1 << false << false << 118.0;
    QTest::newRow("Multi-Path2 12x2") << 12 << 2 << false << false << 118.0;
    QTest::newRow("+ Ours 12x2") << 12 << 2 << true << false << 118.0;
    QTest::newRow("Multi-Path4 6x4") << 6 << 4 << false << false << 118.0;
    QTest::newRow("+ Ours 6x4") << 6 << 4 << true << false << 118.0;
    QTest::newRow("+ More Features 6x4") << 6 << 4 << true << true << 118.0;
    QTest::newRow("Deep36") << 36 << 1 << false << false << 156.0;
    QTest::newRow("Multi-Path3 12x3") << 12 << 3 << false << false << 156.0;
    QTest::newRow("+ More Features 12x3") << 12 << 3 << true << true << 156.0;
    QTest::newRow("Multi-Path6 6x6") << 6 << 6 << false << false << 156.0;
    QTest::newRow("+ More Features 6x6") << 6 << 6 << true << true << 156.0;
    QTest::newRow("Deep48") << 48 << 1 << false << false << 193.0;
    QTest::newRow("Multi-Path2 24x2") << 24 << 2 << false << false << 193.0;
}

void TestParameterCount::multiPathTranslationMatchesThePaper()
{
    QFETCH(int, layers);
    QFETCH(int, paths);
    QFETCH(bool, ours);
    QFETCH(bool, extra);
    QFETCH(double, paperMillions);
    // Transformer-base (D 512, 8 heads, FFN 2048, a 6-block decoder), paths in the
    // encoder only ("we only experiment on the Transformer encoder", section 3.2),
    // one vocabulary tied to the output. The paper gives 32K BPE merges but not the
    // vocabulary; 33,850 symbols fits the column best, with learned positions
    // for 256 tokens where the paper's are sinusoidal (131,072 parameters).
    const nlohmann::json model = {{"head", "translation"}, {"vocab_size", 33850}, {"max_len", 256}, {"d_model", 512},
                                  {"heads", 8}, {"ffn_dim", 2048}, {"layers", layers}, {"decoder_layers", 6},
                                  {"paths", paths}, {"decoder_paths", 1}, {"path_norm", ours},
                                  {"learnable_path_weights", ours}, {"path_extra_features", extra}};
    const double millions = static_cast<double>(modelCost(test::modelConfig(model.dump())).total.stored) / 1e6;
    QVERIFY2(std::abs(millions / paperMillions - 1.0) <= 0.01, qPrintable(QString("%1M").arg(millions)));
}

void TestParameterCount::sharingCountsAModuleOnce()
{
    // d 16, heads 2 (A 8), FFN 32, 3 blocks; vocabulary 10, max_len 6, mean pooling, 2 classes.
    const char* unshared = R"({"vocab_size": 10, "max_len": 6, "d_model": 16, "heads": 2, "ffn_dim": 32,
        "layers": 3, "pooling": "mean", "num_classes": 2})";
    const char* shared = R"({"vocab_size": 10, "max_len": 6, "d_model": 16, "heads": 2, "ffn_dim": 32,
        "layers": 3, "pooling": "mean", "num_classes": 2, "share_attention": true, "share_ffn": true})";
    const std::int64_t attention = 3 * 16 * 16 + 3 * 16 + 16 * 16 + 16;  // qkv + out: 1,088
    const std::int64_t ffn = 2 * 16 * 32 + 32 + 16;                      // 1,072
    const std::int64_t rest = 10 * 16 + 6 * 16                           // token and position embeddings
                              + 3 * 4 * 16 + 2 * 16                      // LayerNorms: 3 blocks x 2, final
                              + 16 * 2 + 2;                              // classifier
    QCOMPARE(modelCost(parse(unshared)).total.stored, rest + 3 * (attention + ffn));
    const ModelCost sharedCost = modelCost(parse(shared));
    QCOMPARE(sharedCost.total.stored, rest + attention + ffn);
    QCOMPARE(sharedCost.total.applied, rest + 3 * (attention + ffn));
}

void TestParameterCount::flopsPerTokenByHand()
{
    // V 10, T = max_len 4 (mean pooling, no CLS), D 8, L 2, H 2, A 4, M 16, 3 classes.
    const ModelConfig dense = parse(R"({"vocab_size": 10, "max_len": 4, "d_model": 8, "layers": 2, "heads": 2,
        "ffn_dim": 16, "pooling": "mean", "num_classes": 3})");
    const double attention = 2.0 * 4 * 8 * 8 + 2.0 * 2 * 4 * 8;  // projections 4 D W, scores and mixing 2 T W
    const double ffn = 2.0 * 2 * 8 * 16;                          // two D x M products
    const double head = 2.0 * 8 * 3 / 4;                          // the classifier, once per sequence of 4
    QCOMPARE(modelCost(dense).flopsPerToken, 2 * (attention + ffn) + head);
    // The same FLOPs by part: what the app's breakdown and `params` show.
    QCOMPARE(modelCost(dense).part("attention").flopsPerToken, 2 * attention);
    QCOMPARE(modelCost(dense).part("ffn").flopsPerToken, 2 * ffn);
    QCOMPARE(modelCost(dense).part("head").flopsPerToken, head);
    QCOMPARE(modelCost(dense).part("embeddings").flopsPerToken, 0.0);
    QCOMPARE(modelCost(dense).part("layernorms").flopsPerToken, 0.0);

    // The same with 4 experts, top-2, capacity 1.5, every block routing.
    const ModelConfig moe = parse(R"({"vocab_size": 10, "max_len": 4, "d_model": 8, "layers": 2, "heads": 2,
        "ffn_dim": 16, "pooling": "mean", "num_classes": 3, "experts": 4, "top_k": 2, "capacity_factor": 1.5})");
    const double router = 2.0 * 8 * 4;
    QCOMPARE(modelCost(moe).flopsPerToken, 2 * (attention + 2 * ffn + router) + head);
    QCOMPARE(modelCost(moe).flopsPerTokenAtCapacity, 2 * (attention + 1.5 * 2 * ffn + router) + head);
    QCOMPARE(modelCost(moe).part("experts").flopsPerToken, 2 * 2 * ffn);
    QCOMPARE(modelCost(moe).part("router").flopsPerToken, 2 * router);

    // No dropping (C = 0): every expert has S slots, E slots per token. And a
    // capacity above S is clamped: 2 experts, K*C = 2.4 -> 2 slots per token.
    const ModelConfig unbounded = parse(R"({"vocab_size": 10, "max_len": 4, "d_model": 8, "layers": 2, "heads": 2,
        "ffn_dim": 16, "pooling": "mean", "num_classes": 3, "experts": 4, "top_k": 2, "capacity_factor": 0})");
    QCOMPARE(modelCost(unbounded).flopsPerTokenAtCapacity, 2 * (attention + 4 * ffn + router) + head);
    const ModelConfig two = parse(R"({"vocab_size": 10, "max_len": 4, "d_model": 8, "layers": 2, "heads": 2,
        "ffn_dim": 16, "pooling": "mean", "num_classes": 3, "experts": 2, "top_k": 2, "capacity_factor": 1.2})");
    QCOMPARE(modelCost(two).flopsPerTokenAtCapacity, 2 * (attention + 2 * ffn + 2.0 * 8 * 2) + head);

    // Read at its CLS token (max_len 3 and CLS: T = 4): in inference 3 of the
    // last block's 4 rows skip their query and output projections (2 D W each),
    // mixing and FFN; keys and values stay. Training, and mean pooling, count all.
    const ModelConfig cls = parse(R"({"vocab_size": 10, "max_len": 3, "d_model": 8, "layers": 2, "heads": 2,
        "ffn_dim": 16, "num_classes": 3})");
    const double queryAndOutput = 2.0 * 2 * 8 * 8;
    QCOMPARE(modelCost(cls).flopsPerToken, 2 * (attention + ffn) + head);
    QCOMPARE(modelCost(cls).inferenceFlopsPerToken,
             2 * (attention + ffn) + head - 3.0 / 4.0 * (attention - queryAndOutput + ffn));
    QCOMPARE(modelCost(dense).inferenceFlopsPerToken, modelCost(dense).flopsPerToken);
}

QTEST_GUILESS_MAIN(TestParameterCount)
#include "tst_parametercount.moc"
