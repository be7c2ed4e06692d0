// Tests of decoding an encoder-decoder (model/Decoding.h and the model's cached
// steps): a cached step gives what the whole forward pass gives at that position,
// greedy decoding with the cache equals recomputing the prefix, and what cannot
// be decoded is an error.
#include "TranslationTestSupport.h"
#include "model/Decoding.h"

#include <QtTest>

using namespace widelab;

namespace {

ModelConfig parse(const std::string& overrides = "{}") { return test::translationConfig(overrides); }
QString message(const std::function<void()>& call) { return test::thrownMessage(call); }

}  // namespace

class TestDecoding : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cachedStepsEqualTheWholePass_data();
    void cachedStepsEqualTheWholePass();
    void greedyWithTheCacheEqualsRecomputing_data();
    void greedyWithTheCacheEqualsRecomputing();
    void whatCannotBeDecodedIsAnError();
    void noIdPastTheTokenizersVocabularyIsWritten();
};

void TestDecoding::cachedStepsEqualTheWholePass_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("dense") << "{}";
    QTest::newRow("3 paths with PathNorm, learnable weights and extra features")
        << R"({"paths": 3, "path_norm": true, "learnable_path_weights": true, "path_extra_features": true})";
    QTest::newRow("WideNet: shared attention and experts, 2 routing groups")
        << R"({"experts": 4, "share_attention": true, "share_ffn": true, "routing_groups": 2})";
    QTest::newRow("shared LayerNorms, 4 decoder blocks, encoder paths only")
        << R"({"share_layernorm": true, "decoder_layers": 4, "paths": 2, "decoder_paths": 1})";
}

void TestDecoding::cachedStepsEqualTheWholePass()
{
    QFETCH(QString, config);
    torch::manual_seed(21);
    WideTransformer model(parse(config.toStdString()));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = torch::randint(19, {2, 6}, torch::kLong);
    torch::Tensor mask = torch::ones({2, 6}, torch::kBool);
    mask[1].narrow(0, 4, 2).fill_(false);
    const torch::Tensor target = torch::randint(19, {2, 7}, torch::kLong);
    const torch::Tensor whole = model->forward(source, mask, {target, {}}).logits;  // [2, 7, 19]

    DecoderState state = model->beginDecoding(source, mask, 7);
    for (std::int64_t t = 0; t < 7; ++t) {
        const torch::Tensor step = model->decodeStep(state, target.select(1, t));
        // A step's products are shaped otherwise than the whole pass's: rounding differs, a wrong cache by far more.
        QVERIFY2(torch::allclose(step, whole.select(1, t), 1e-4, 1e-5),
                 qPrintable(QString("position %1: %2").arg(t).arg((step - whole.select(1, t)).abs().max().item<double>())));
    }
    QVERIFY(message([&] { model->decodeStep(state, target.select(1, 0)); }).contains("past the 7 positions"));
}

void TestDecoding::greedyWithTheCacheEqualsRecomputing_data()
{
    cachedStepsEqualTheWholePass_data();
}

void TestDecoding::greedyWithTheCacheEqualsRecomputing()
{
    QFETCH(QString, config);
    torch::manual_seed(22);
    WideTransformer model(parse(config.toStdString()));
    model->eval();
    const torch::Tensor source = torch::randint(4, 19, {3, 5}, torch::kLong);
    DecodeOptions options;
    options.maxLength = 9;
    const auto cached = greedyDecode(*model, source, {}, options);
    options.cache = false;
    const auto recomputed = greedyDecode(*model, source, {}, options);
    QCOMPARE(cached, recomputed);
    QCOMPARE(cached.size(), std::size_t{3});
    for (const auto& translation : cached) {
        QVERIFY(translation.size() <= 9);
        for (const std::int64_t id : translation)
            QVERIFY(id != options.endId);
    }
}

void TestDecoding::whatCannotBeDecodedIsAnError()
{
    WideTransformer translator(parse());
    const torch::Tensor source = torch::randint(19, {1, 4}, torch::kLong);
    QVERIFY(message([&] { greedyDecode(*translator, source, {}, {}); }).contains("training mode"));
    translator->eval();
    QVERIFY(message([&] { greedyDecode(*translator, torch::full({1, 4}, 25, torch::kLong), {}, {}); })
                .contains("token id 25 is outside the vocabulary"));
    WideTransformer classifier(parse(R"({"head": "classification"})"));
    classifier->eval();
    QVERIFY(message([&] { greedyDecode(*classifier, source, {}, {}); }).contains("not a translation model"));
    QVERIFY(message([&] { classifier->beginDecoding(source, {}, 4); }).contains("not a translation model"));
}

void TestDecoding::noIdPastTheTokenizersVocabularyIsWritten()
{
    // A tokenizer that learned fewer merges than model.vocab_size allows leaves
    // the output's last rows without a token: neither search writes one. The
    // model's bias towards id 18 makes it the favourite without the limit.
    torch::manual_seed(5);
    WideTransformer model(test::translationConfig());
    model->eval();
    {
        torch::NoGradGuard noGrad;
        model->named_parameters()["embed.token.weight"][18].mul_(40.0);
    }
    const torch::Tensor source = torch::randint(4, 19, {2, 4}, torch::kLong);
    DecodeOptions options;
    options.maxLength = 6;
    options.endId = 3;
    bool wrote18 = false;
    for (const auto& translation : greedyDecode(*model, source, {}, options))
        wrote18 = wrote18 || std::find(translation.begin(), translation.end(), 18) != translation.end();
    QVERIFY2(wrote18, "the test's model must want id 18 for the limit to mean anything");
    options.vocabulary = 15;
    for (const std::int64_t beam : {1, 3}) {
        options.beamSize = beam;
        const auto translations = beam == 1 ? greedyDecode(*model, source, {}, options)
                                            : beamDecode(*model, source, {}, options);
        for (const auto& translation : translations)
            for (const std::int64_t id : translation)
                QVERIFY2(id < 15, qPrintable(QString("beam %1 wrote id %2").arg(beam).arg(id)));
    }
}

QTEST_GUILESS_MAIN(TestDecoding)
#include "tst_decoding.moc"
