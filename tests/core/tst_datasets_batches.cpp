// Tests of data/Batch: padded batches and their masks, counts, language-model and translation batches,
// errors, and the resumable batch order (the sampler, by examples or by a token budget). Expected values are worked out by hand in the comments.
#include "DatasetsTestSupport.h"

using namespace widelab;
using namespace widelab::datasetstest;

class TestDatasetsBatches : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void batchPadsAndMasks();
    void modelMaskOnlyForPaddedBatches();
    void correctCountsClassesAndRealTokens();
    void languageModelBatch();
    void batchErrors();
    void samplerIsDeterministic();
    void samplerCoversEachEpoch();
    void samplerSeekReproducesBatches();
    void translationBatchShiftsTheTargetRight();
    void translationBatchMasksOnlyWhenPadded();
    void translationBatchErrors();
    void tokenBudgetFillsBatchesInTheSameOrder();
    void tokenBudgetResumesFromItsPosition();
};

// ---- Batch ----

void TestDatasetsBatches::batchPadsAndMasks()
{
    std::vector<Example> examples(3);
    examples[0].ids = {5, 6, 7};
    examples[0].label = 1;
    examples[1].ids = {8};
    examples[1].label = 0;
    examples[2].ids = {9, 10};
    examples[2].label = 2;
    const Batch batch = makeBatch(examples, false);
    QCOMPARE(batch.ids.sizes().vec(), (std::vector<std::int64_t>{3, 3}));
    QVERIFY(batch.ids.scalar_type() == torch::kInt64);
    QVERIFY(batch.mask.scalar_type() == torch::kBool);
    QVERIFY(batch.targets.scalar_type() == torch::kInt64);
    QVERIFY(torch::equal(batch.ids, torch::tensor({5, 6, 7, 8, 0, 0, 9, 10, 0}, torch::kInt64).view({3, 3})));
    QVERIFY(torch::equal(batch.mask,
                         torch::tensor({1, 1, 1, 1, 0, 0, 1, 1, 0}, torch::kInt64).view({3, 3}).to(torch::kBool)));
    QVERIFY(torch::equal(batch.targets, torch::tensor({1, 0, 2}, torch::kInt64)));
    QCOMPARE(batch.tokens, 6);
}

void TestDatasetsBatches::modelMaskOnlyForPaddedBatches()
{
    std::vector<Example> full(2);
    full[0].ids = {5, 6};
    full[0].label = 0;
    full[1].ids = {7, 8};
    full[1].label = 1;
    QVERIFY(!modelMask(makeBatch(full, false)).defined());  // every token real: the model needs no mask
    full[1].ids = {7};
    const Batch padded = makeBatch(full, false);
    QVERIFY(modelMask(padded).defined());
    QVERIFY(torch::equal(modelMask(padded), torch::tensor({1, 1, 1, 0}, torch::kInt64).view({2, 2}).to(torch::kBool)));
}

void TestDatasetsBatches::correctCountsClassesAndRealTokens()
{
    // Classification: 3 examples, labels 1, 0, 2; predicted 1, 1, 2 -> 2 of 3.
    std::vector<Example> examples(3);
    for (std::size_t i = 0; i < examples.size(); ++i)
        examples[i].ids = {5};
    examples[0].label = 1;
    examples[1].label = 0;
    examples[2].label = 2;
    const torch::Tensor logits = torch::tensor({0.0, 2.0, 1.0, /**/ 0.5, 0.9, 0.1, /**/ 0.0, 0.0, 3.0}).view({3, 3});
    const torch::Tensor classes = correctCounts(logits, makeBatch(examples, false), false);
    QCOMPARE(classes.scalar_type(), torch::kFloat64);
    QCOMPARE(classes[0].item<double>(), 2.0);
    QCOMPARE(classes[1].item<double>(), 3.0);

    // Language model: example 0 has 2 real positions, example 1 has 1 (one padded);
    // targets 4 5 / 7 (pad). Predictions: 4 (right), 3 (wrong) / 7 (right), and a
    // "right" guess of 0 at the padded position that must not count -> 2 of 3.
    std::vector<Example> texts(2);
    texts[0].ids = {3, 4};
    texts[0].targets = {4, 5};
    texts[1].ids = {6};
    texts[1].targets = {7};
    torch::Tensor lm = torch::zeros({2, 2, 8});
    lm[0][0][4] = 1.0;
    lm[0][1][3] = 1.0;
    lm[1][0][7] = 1.0;
    lm[1][1][0] = 1.0;
    const torch::Tensor tokens = correctCounts(lm, makeBatch(texts, true), true);
    QCOMPARE(tokens[0].item<double>(), 2.0);
    QCOMPARE(tokens[1].item<double>(), 3.0);
}

void TestDatasetsBatches::languageModelBatch()
{
    std::vector<Example> examples(2);
    examples[0].ids = {3, 4};
    examples[0].targets = {4, 5};
    examples[1].ids = {6, 7, 8, 9};
    examples[1].targets = {7, 8, 9, 10};
    const Batch batch = makeBatch(examples, true);
    QVERIFY(torch::equal(batch.ids, torch::tensor({3, 4, 0, 0, 6, 7, 8, 9}, torch::kInt64).view({2, 4})));
    QVERIFY(torch::equal(batch.targets, torch::tensor({4, 5, 0, 0, 7, 8, 9, 10}, torch::kInt64).view({2, 4})));
    QVERIFY(torch::equal(batch.mask,
                         torch::tensor({1, 1, 0, 0, 1, 1, 1, 1}, torch::kInt64).view({2, 4}).to(torch::kBool)));
    QCOMPARE(batch.tokens, 6);
}

void TestDatasetsBatches::batchErrors()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch({}, false));
    std::vector<Example> noToken(2);
    noToken[0].ids = {3};
    noToken[0].label = 0;
    noToken[1].label = 1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(noToken, false));
    std::vector<Example> noLabel(1);
    noLabel[0].ids = {3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(noLabel, false));
    std::vector<Example> mismatched(1);
    mismatched[0].ids = {3, 4};
    mismatched[0].targets = {4};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeBatch(mismatched, true));
}

void TestDatasetsBatches::samplerIsDeterministic()
{
    BatchSampler a(37, 8, 123), b(37, 8, 123), c(37, 8, 124);
    bool differs = false;
    for (int i = 0; i < 30; ++i) {
        const auto batch = a.next();
        QCOMPARE(batch.size(), std::size_t(8));
        QVERIFY(batch == b.next());
        differs = differs || batch != c.next();
    }
    QVERIFY(differs);
    QCOMPARE(a.position(), 240);
    // The order is shuffled, not 0, 1, 2, ...
    BatchSampler shuffled(100, 100, 1);
    const auto order = shuffled.next();
    std::vector<std::int64_t> identity(100);
    std::iota(identity.begin(), identity.end(), 0);
    QVERIFY(order != identity);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(0, 4, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(4, 0, 0));
}

void TestDatasetsBatches::samplerCoversEachEpoch()
{
    // Size 10, batch 4: batches run across epoch ends; indices 0-9 of the stream are epoch 0, 10-19 epoch 1, ...
    BatchSampler sampler(10, 4, 7);
    std::vector<std::int64_t> stream;
    for (int i = 0; i < 10; ++i) {
        const auto batch = sampler.next();
        stream.insert(stream.end(), batch.begin(), batch.end());
    }
    QCOMPARE(stream.size(), std::size_t(40));
    std::vector<std::vector<std::int64_t>> epochs;
    for (int e = 0; e < 4; ++e) {
        std::vector<std::int64_t> epoch(stream.begin() + e * 10, stream.begin() + (e + 1) * 10);
        epochs.push_back(epoch);
        std::sort(epoch.begin(), epoch.end());
        for (std::int64_t i = 0; i < 10; ++i)
            QCOMPARE(epoch[static_cast<std::size_t>(i)], i);  // every index once
    }
    // Each epoch has its own order.
    QVERIFY(epochs[0] != epochs[1] || epochs[1] != epochs[2]);
    QCOMPARE(sampler.epoch(), 4);
    // A batch larger than the dataset spans epochs.
    BatchSampler big(3, 7, 0);
    const auto batch = big.next();
    QCOMPARE(batch.size(), std::size_t(7));
    QCOMPARE(std::set<std::int64_t>(batch.begin(), batch.begin() + 3).size(), std::size_t(3));
}

void TestDatasetsBatches::samplerSeekReproducesBatches()
{
    BatchSampler original(23, 5, 99);
    for (int i = 0; i < 7; ++i)
        original.next();
    const std::int64_t position = original.position();
    QCOMPARE(position, 35);
    std::vector<std::vector<std::int64_t>> future;
    for (int i = 0; i < 6; ++i)
        future.push_back(original.next());

    BatchSampler resumed(23, 5, 99);
    resumed.seek(position);
    QCOMPARE(resumed.position(), position);
    for (const auto& batch : future)
        QVERIFY(resumed.next() == batch);
    // Seeking back on the same sampler replays too.
    original.seek(position);
    QVERIFY(original.next() == future[0]);
    // And from the start.
    BatchSampler fresh(23, 5, 99), rewound(23, 5, 99);
    rewound.next();
    rewound.next();
    rewound.seek(0);
    QVERIFY(rewound.next() == fresh.next());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rewound.seek(-1));
}


void TestDatasetsBatches::translationBatchShiftsTheTargetRight()
{
    // Pair 0: source [5 6 7], target [8 9] then </s> (3); pair 1: source [5], target [4] then </s>.
    std::vector<Example> pairs(2);
    pairs[0].ids = {5, 6, 7};
    pairs[0].targets = {8, 9, 3};
    pairs[1].ids = {5};
    pairs[1].targets = {4, 3};
    const Batch batch = makeTranslationBatch(pairs, /*startId=*/2);
    // Sources padded to 3 with 0; the decoder reads <s> (2) and the target, padded to U = 3.
    QVERIFY(torch::equal(batch.ids, torch::tensor({5, 6, 7, 5, 0, 0}, torch::kInt64).view({2, 3})));
    QVERIFY(torch::equal(batch.mask, torch::tensor({1, 1, 1, 1, 0, 0}, torch::kBool).view({2, 3})));
    QVERIFY(torch::equal(batch.targetIds, torch::tensor({2, 8, 9, 2, 4, 0}, torch::kInt64).view({2, 3})));
    QVERIFY(torch::equal(batch.targets, torch::tensor({8, 9, 3, 4, 3, 0}, torch::kInt64).view({2, 3})));
    QVERIFY(torch::equal(batch.targetMask, torch::tensor({1, 1, 1, 1, 1, 0}, torch::kBool).view({2, 3})));
    QCOMPARE(batch.tokens, 3 + 1 + 3 + 2);  // sources and targets with </s>
    QCOMPARE(batch.targetTokens, 3 + 2);
    QVERIFY(torch::equal(targetPositions(batch), batch.targetMask));
    // Counted where the target is real: logits predicting [8 9 3 | 4 0 .] hit 4 of the 5 real positions.
    torch::Tensor logits = torch::zeros({2, 3, 10});
    const std::vector<std::vector<int>> predicted = {{8, 9, 3}, {4, 0, 7}};
    for (int b = 0; b < 2; ++b)
        for (int u = 0; u < 3; ++u)
            logits[b][u][predicted[b][u]] = 1.0;
    const torch::Tensor counts = correctCounts(logits, batch, true);
    QCOMPARE(counts[0].item<double>(), 4.0);
    QCOMPARE(counts[1].item<double>(), 5.0);
}

void TestDatasetsBatches::translationBatchMasksOnlyWhenPadded()
{
    std::vector<Example> pairs(2);
    pairs[0].ids = {5, 6};
    pairs[0].targets = {8, 3};
    pairs[1].ids = {7, 8};
    pairs[1].targets = {9, 3};
    const Batch full = makeTranslationBatch(pairs, 2);
    QVERIFY(!modelMask(full).defined());
    QVERIFY(!modelTargetMask(full).defined());
    pairs[1].targets = {3};  // a shorter target: only the decoder needs a mask
    const Batch shortTarget = makeTranslationBatch(pairs, 2);
    QVERIFY(!modelMask(shortTarget).defined());
    QVERIFY(modelTargetMask(shortTarget).defined());
    pairs[1].ids = {7};  // and a shorter source: the encoder too
    const Batch shortSource = makeTranslationBatch(pairs, 2);
    QVERIFY(modelMask(shortSource).defined());
    // Other batches have no target mask.
    std::vector<Example> texts(1);
    texts[0].ids = {4, 5};
    texts[0].label = 1;
    QVERIFY(!modelTargetMask(makeBatch(texts, false)).defined());
}

void TestDatasetsBatches::translationBatchErrors()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeTranslationBatch({}, 2));
    std::vector<Example> noSource(1);
    noSource[0].targets = {3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeTranslationBatch(noSource, 2));
    std::vector<Example> noTarget(1);
    noTarget[0].ids = {5};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeTranslationBatch(noTarget, 2));
}

void TestDatasetsBatches::tokenBudgetFillsBatchesInTheSameOrder()
{
    // Costs 3, 4, 5, 6, 7 by index and a budget of 10: the batches follow the order of
    // the sampler by examples with the same seed, cut where the next would pass 10.
    const std::vector<std::int64_t> costs = {3, 4, 5, 6, 7};
    BatchSampler byTokens(costs, 10, 42), byExamples(5, 5, 42);
    const std::vector<std::int64_t> order = byExamples.next();  // epoch 0's permutation
    std::vector<std::vector<std::int64_t>> expected;
    std::vector<std::int64_t> current;
    std::int64_t spent = 0;
    for (const std::int64_t index : order) {
        const std::int64_t cost = costs[static_cast<std::size_t>(index)];
        if (!current.empty() && spent + cost > 10) {
            expected.push_back(current);
            current.clear();
            spent = 0;
        }
        current.push_back(index);
        spent += cost;
    }
    std::int64_t handed = 0;
    for (const auto& batch : expected) {
        QVERIFY(byTokens.next() == batch);
        handed += static_cast<std::int64_t>(batch.size());
        QCOMPARE(byTokens.position(), handed);
    }
    QCOMPARE(byTokens.batchSize(), 0);
    // Every batch holds at least one example, even one that costs more than the budget.
    BatchSampler tight({3, 40, 5}, 10, 1);
    for (int i = 0; i < 6; ++i) {
        const auto batch = tight.next();
        QVERIFY(!batch.empty());
        std::int64_t sum = 0;
        for (const std::int64_t index : batch)
            sum += std::vector<std::int64_t>{3, 40, 5}[static_cast<std::size_t>(index)];
        QVERIFY(sum <= 10 || batch.size() == 1);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(std::vector<std::int64_t>{}, 10, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(std::vector<std::int64_t>{1, 2}, 0, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchSampler(std::vector<std::int64_t>{1, -2}, 5, 0));
}

void TestDatasetsBatches::tokenBudgetResumesFromItsPosition()
{
    std::vector<std::int64_t> costs;
    for (std::int64_t i = 0; i < 17; ++i)
        costs.push_back(1 + (i * 7) % 9);
    BatchSampler original(costs, 12, 5);
    for (int i = 0; i < 9; ++i)
        original.next();
    const std::int64_t position = original.position();
    std::vector<std::vector<std::int64_t>> future;
    for (int i = 0; i < 8; ++i)
        future.push_back(original.next());
    BatchSampler resumed(costs, 12, 5);
    resumed.seek(position);
    for (const auto& batch : future)
        QVERIFY(resumed.next() == batch);
}

QTEST_GUILESS_MAIN(TestDatasetsBatches)
#include "tst_datasets_batches.moc"
