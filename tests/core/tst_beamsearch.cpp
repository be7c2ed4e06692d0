// Tests of beam search (model/Decoding.h): the search on tables of
// log-probabilities worked out by hand (a beam of two finds what greedy misses,
// the length penalty changes the winner, the maximum length), and on a small
// random translation model: a beam of one is greedy decoding, the cache equals
// recomputing the prefix, a batch decodes as each source alone, and reordered
// caches decode as reordered sources.
#include "TranslationTestSupport.h"
#include "model/Decoding.h"

#include <QtTest>

#include <cmath>
#include <map>
#include <set>

using namespace widelab;

namespace {

// The tables' vocabulary: two fillers, DecodeOptions' start and end, and two words.
constexpr std::int64_t X = 0, Start = 2, End = 3, A = 4, B = 5, V = 6;

// The probability of each next token after a prefix (without the start token);
// a token not named has probability 0. Prefixes not in `rows` get `otherwise`.
struct Table {
    std::map<std::vector<std::int64_t>, std::map<std::int64_t, double>> rows;
    std::map<std::int64_t, double> otherwise{{End, 0.9}, {X, 0.1}};

    BeamStep step() const
    {
        return [this](const torch::Tensor& prefixes, const torch::Tensor&) {
            torch::Tensor out = torch::full({prefixes.size(0), V}, -INFINITY, torch::kFloat64);
            for (std::int64_t r = 0; r < prefixes.size(0); ++r) {
                std::vector<std::int64_t> prefix;
                for (std::int64_t i = 1; i < prefixes.size(1); ++i)
                    prefix.push_back(prefixes[r][i].item<std::int64_t>());
                const auto found = rows.find(prefix);
                for (const auto& [token, p] : found == rows.end() ? otherwise : found->second)
                    out[r][token] = std::log(p);
            }
            return out;
        };
    }
};

DecodeOptions searchOptions(std::int64_t beamSize, double alpha = 0.0, std::int64_t maxLength = 5)
{
    DecodeOptions options;
    options.beamSize = beamSize;
    options.lengthPenalty = alpha;
    options.maxLength = maxLength;
    return options;
}

using Tokens = std::vector<std::int64_t>;

// Raises the end token's logit by about `shift` at every step (the decoder's last
// LayerNorm shifted along the end token's embedding, which the head is tied to),
// so that a random model's translations end at different lengths.
void favourTheEnd(WideTransformerImpl& model, std::int64_t endId, double shift)
{
    torch::NoGradGuard noGrad;
    const auto parameters = model.named_parameters();
    const torch::Tensor end = parameters["embed.token.weight"][endId];
    parameters["decoder.final_ln.bias"].add_(end * (shift / end.dot(end)));
}

// The small translation model with `config`, drawn from `seed`, in evaluation
// mode. A random model's end token is no likelier than any other: raised a
// little, its translations end at different steps.
WideTransformer endingTranslator(const QString& config, std::uint64_t seed)
{
    torch::manual_seed(seed);
    WideTransformer model(test::translationConfig(config.toStdString()));
    model->eval();
    favourTheEnd(*model, DecodeOptions().endId, 0.06);
    return model;
}

}  // namespace

class TestBeamSearch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aBeamOfTwoFindsWhatGreedyMisses();
    void theLengthPenaltyChangesTheWinner();
    void aSearchThatNeverEndsStopsAtTheMaximumLength();
    void badOptionsAreErrors();
    void aBeamOfOneIsGreedyDecoding_data();
    void aBeamOfOneIsGreedyDecoding();
    void theCacheEqualsRecomputing_data();
    void theCacheEqualsRecomputing();
    void aBatchDecodesAsEachSourceAlone();
    void reorderedCachesDecodeAsReorderedSources_data();
    void reorderedCachesDecodeAsReorderedSources();
};

void TestBeamSearch::aBeamOfTwoFindsWhatGreedyMisses()
{
    // Greedy takes A (0.6), then A (0.6 x 0.4 = 0.24), then the end (x 0.9): A A, 0.216.
    // A beam of two keeps A and B; its second step's best extensions are
    // B end (0.4 x 0.9 = 0.36), A A (0.24), A B (0.21), A end (0.15): B end
    // finishes at 0.36, more than the best live beam (A A, 0.24) can reach.
    Table table;
    table.rows[{}] = {{A, 0.6}, {B, 0.4}};
    table.rows[{A}] = {{A, 0.4}, {B, 0.35}, {End, 0.25}};
    table.rows[{B}] = {{End, 0.9}, {A, 0.05}, {X, 0.05}};
    const BeamHypothesis greedy = beamSearch(1, table.step(), searchOptions(1)).front();
    QCOMPARE(greedy.tokens, (Tokens{A, A}));
    QCOMPARE(greedy.logProb, std::log(0.6) + std::log(0.4) + std::log(0.9));
    const BeamHypothesis beam = beamSearch(1, table.step(), searchOptions(2)).front();
    QCOMPARE(beam.tokens, (Tokens{B}));
    QCOMPARE(beam.logProb, std::log(0.4) + std::log(0.9));
    QCOMPARE(beam.score, beam.logProb);  // alpha 0: no penalty
    // Every source of a batch gets the same search.
    const std::vector<BeamHypothesis> three = beamSearch(3, table.step(), searchOptions(2));
    QCOMPARE(three.size(), std::size_t{3});
    for (const BeamHypothesis& each : three)
        QCOMPARE(each.tokens, (Tokens{B}));
}

void TestBeamSearch::theLengthPenaltyChangesTheWinner()
{
    // Beam 2, at most 5 tokens. Step 1 keeps B (0.5) and A (0.4). Step 2's best
    // extensions: B end 0.35, A A 0.32, B A 0.075, B B 0.05; B end finishes
    // (2 tokens with the end), A A and B A live on.
    //   alpha 0: B scores ln 0.35 = -1.0498; A A can reach at most ln 0.32 = -1.1394: B wins.
    //   alpha 1: lp(2) = 7/6, B scores -1.0498 / (7/6) = -0.8998; A A could reach
    //     ln 0.32 / lp(5) = -1.1394 / (10/6) = -0.6837, so the search goes on.
    //     Step 3: A A end = 0.32 x 0.95 = 0.304 finishes with
    //     ln 0.304 / lp(3) = -1.1907 / (8/6) = -0.8930 > -0.8998: A A wins; the
    //     best live beam, A A X (0.016), could reach only ln 0.016 / (10/6) = -2.48.
    Table table;
    table.rows[{}] = {{B, 0.5}, {A, 0.4}, {End, 0.05}, {X, 0.05}};
    table.rows[{B}] = {{End, 0.7}, {A, 0.15}, {B, 0.1}, {X, 0.05}};
    table.rows[{A}] = {{A, 0.8}, {End, 0.1}, {B, 0.05}, {X, 0.05}};
    table.rows[{A, A}] = {{End, 0.95}, {X, 0.05}};
    const BeamHypothesis plain = beamSearch(1, table.step(), searchOptions(2, 0.0)).front();
    QCOMPARE(plain.tokens, (Tokens{B}));
    QCOMPARE(plain.score, std::log(0.5) + std::log(0.7));
    const BeamHypothesis penalised = beamSearch(1, table.step(), searchOptions(2, 1.0)).front();
    QCOMPARE(penalised.tokens, (Tokens{A, A}));
    const double logProb = std::log(0.4) + std::log(0.8) + std::log(0.95);
    QCOMPARE(penalised.logProb, logProb);
    QCOMPARE(penalised.score, logProb / (8.0 / 6.0));
    QVERIFY(penalised.score > (std::log(0.5) + std::log(0.7)) / (7.0 / 6.0));
    QCOMPARE(lengthPenalty(3, 1.0), 8.0 / 6.0);
    QCOMPARE(lengthPenalty(7, 0.6), std::pow(2.0, 0.6));
    QCOMPARE(lengthPenalty(40, 0.0), 1.0);
}

void TestBeamSearch::aSearchThatNeverEndsStopsAtTheMaximumLength()
{
    Table table;
    table.otherwise = {{A, 0.7}, {B, 0.3}};
    for (const std::int64_t beam : {1, 3}) {
        const BeamHypothesis found = beamSearch(1, table.step(), searchOptions(beam, 0.6, 4)).front();
        QCOMPARE(found.tokens, (Tokens{A, A, A, A}));
        QCOMPARE(found.logProb, 4 * std::log(0.7));
        QCOMPARE(found.score, 4 * std::log(0.7) / lengthPenalty(4, 0.6));
    }
}

void TestBeamSearch::badOptionsAreErrors()
{
    const Table table;
    QVERIFY(test::thrownMessage([&] { beamSearch(1, table.step(), searchOptions(0)); })
                .contains("the beam size is 0; it must be at least 1"));
    QVERIFY(test::thrownMessage([&] { beamSearch(1, table.step(), searchOptions(2, -0.5)); })
                .contains("the length penalty's alpha is -0.5"));
    QVERIFY(test::thrownMessage([&] { beamSearch(1, table.step(), searchOptions(2, 0.0, 0)); })
                .contains("no maximum length"));
    WideTransformer model(test::translationConfig());
    model->eval();
    QVERIFY(test::thrownMessage([&] { beamDecode(*model, torch::full({1, 3}, 5, torch::kLong), {}, searchOptions(0)); })
                .contains("the beam size is 0"));
}

void TestBeamSearch::aBeamOfOneIsGreedyDecoding_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("dense") << "{}";
    QTest::newRow("WideNet: shared attention and experts")
        << R"({"experts": 4, "share_attention": true, "share_ffn": true})";
    QTest::newRow("3 paths with PathNorm and learnable weights")
        << R"({"paths": 3, "path_norm": true, "learnable_path_weights": true})";
}

void TestBeamSearch::aBeamOfOneIsGreedyDecoding()
{
    QFETCH(QString, config);
    WideTransformer model = endingTranslator(config, 31);
    const torch::Tensor source = torch::randint(4, 19, {4, 6}, torch::kLong);
    torch::Tensor mask = torch::ones({4, 6}, torch::kBool);
    mask[2].narrow(0, 3, 3).fill_(false);
    DecodeOptions options = searchOptions(1, 0.0, 9);
    const auto beam = beamDecode(*model, source, mask, options);
    QCOMPARE(beam, greedyDecode(*model, source, mask, options));
    options.cache = false;
    QCOMPARE(beamDecode(*model, source, mask, options), beam);
}

void TestBeamSearch::theCacheEqualsRecomputing_data()
{
    aBeamOfOneIsGreedyDecoding_data();
}

void TestBeamSearch::theCacheEqualsRecomputing()
{
    QFETCH(QString, config);
    WideTransformer model = endingTranslator(config, 32);
    const torch::Tensor source = torch::randint(4, 19, {3, 5}, torch::kLong);
    DecodeOptions options = searchOptions(3, 0.6, 10);
    const auto cached = beamDecode(*model, source, {}, options);
    options.cache = false;
    QCOMPARE(beamDecode(*model, source, {}, options), cached);
    QCOMPARE(cached.size(), std::size_t{3});
    std::set<std::size_t> lengths;  // more than one: a source finished, its rows left the caches, others went on
    for (const auto& translation : cached) {
        QVERIFY(translation.size() <= 10);
        lengths.insert(translation.size());
        for (const std::int64_t id : translation)
            QVERIFY(id != options.endId);
    }
    QVERIFY2(lengths.size() > 1, "every translation has the same length");
}

void TestBeamSearch::aBatchDecodesAsEachSourceAlone()
{
    WideTransformer model = endingTranslator("{}", 33);
    // Sources of 6 and 3 tokens, the second padded.
    const torch::Tensor source = torch::randint(4, 19, {2, 6}, torch::kLong);
    torch::Tensor mask = torch::ones({2, 6}, torch::kBool);
    mask[1].narrow(0, 3, 3).fill_(false);
    const DecodeOptions options = searchOptions(3, 0.6, 10);
    const auto together = beamDecode(*model, source, mask, options);
    QCOMPARE(together.size(), std::size_t{2});
    QCOMPARE(beamDecode(*model, source.narrow(0, 0, 1), {}, options).front(), together[0]);
    QCOMPARE(beamDecode(*model, source.narrow(0, 1, 1).narrow(1, 0, 3), {}, options).front(), together[1]);
}

void TestBeamSearch::reorderedCachesDecodeAsReorderedSources_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("dense") << "{}";
    QTest::newRow("shared attention: one tensor of the source's keys and values") << R"({"share_attention": true})";
}

void TestBeamSearch::reorderedCachesDecodeAsReorderedSources()
{
    QFETCH(QString, config);
    torch::manual_seed(34);
    WideTransformer model(test::translationConfig(config.toStdString()));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor source = torch::randint(4, 19, {3, 5}, torch::kLong);
    torch::Tensor mask = torch::ones({3, 5}, torch::kBool);
    mask[0].narrow(0, 2, 3).fill_(false);
    const torch::Tensor tokens = torch::randint(4, 19, {3, 2}, torch::kLong);
    // Two steps on the three sources, then the caches' rows 2, 0, 0, 1...
    DecoderState state = model->beginDecoding(source, mask, 4);
    model->decodeStep(state, tokens.select(1, 0));
    model->decodeStep(state, tokens.select(1, 1));
    const torch::Tensor rows = torch::tensor({2, 0, 0, 1}, torch::kLong);
    state.reorder(rows);
    QCOMPARE(state.length, std::int64_t{2});
    if (config.contains("share"))
        QVERIFY(state.sourceKeysValues[0].is_same(state.sourceKeysValues[1]));
    // ... decode as those rows of the sources would have.
    DecoderState picked = model->beginDecoding(source.index_select(0, rows), mask.index_select(0, rows), 4);
    model->decodeStep(picked, tokens.index_select(0, rows).select(1, 0));
    model->decodeStep(picked, tokens.index_select(0, rows).select(1, 1));
    const torch::Tensor next = torch::randint(4, 19, {4}, torch::kLong);
    const torch::Tensor reordered = model->decodeStep(state, next), direct = model->decodeStep(picked, next);
    QVERIFY2(torch::allclose(reordered, direct, 1e-5, 1e-6),
             qPrintable(QString::number((reordered - direct).abs().max().item<double>())));
}

QTEST_GUILESS_MAIN(TestBeamSearch)
#include "tst_beamsearch.moc"
