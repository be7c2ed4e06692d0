// WideLab's own batched products on the CPU (model/BatchedProduct), plain and
// with attention's softmax taken as they are made: against the same formulas
// in double precision for the shapes where its tiles' edges fall (rows that are
// not a whole tile, columns that are not a whole panel or vector, more rows
// than a task takes), operands laid out as attention leaves them (transposed,
// views of one projection), the masks the model makes, and, through
// batchedMatmul and batchedSoftmax in training, their gradients against those
// of the double-precision formulas.
#include "KernelBuilds.h"
#include "TestSupport.h"
#include "model/BatchedMatmul.h"
#include "model/BatchedProduct.h"
#include "runtime/OperatorCount.h"
#include "runtime/Runtime.h"

#include <QtTest>

using namespace widelab;

namespace {

// fp32 sums of up to 300 products against a double reference: under 4e-7
// measured for every shape below.
constexpr double kTolerance = 2e-6;

torch::Tensor reference(const torch::Tensor& a, const torch::Tensor& b)
{
    return torch::matmul(a.to(torch::kDouble), b.to(torch::kDouble));
}

// A [batch..., rows, columns] operand laid out as `layout` says: "rows" (each
// row contiguous), "columns" (a transposed one), or "projection" (one third of
// a [B, T, 3, G, A] product permuted to [B, G, T, A], rows 3GA apart).
torch::Tensor operand(const std::vector<std::int64_t>& batch, std::int64_t rows, std::int64_t columns,
                      const QString& layout)
{
    std::vector<std::int64_t> shape = batch;
    if (layout == "columns") {
        shape.insert(shape.end(), {columns, rows});
        return torch::randn(shape).transpose(-2, -1);
    }
    if (layout == "projection") {
        const std::int64_t B = batch.front(), G = batch.back();
        return torch::randn({B, rows, 3, G, columns}).select(2, 1).permute({0, 2, 1, 3});
    }
    shape.insert(shape.end(), {rows, columns});
    return torch::randn(shape);
}

}  // namespace

class TestBatchedProduct : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void multipliesAsByHand();
    void equalsTheDoublePrecisionProduct_data();
    void equalsTheDoublePrecisionProduct();
    void softmaxEqualsTheDoublePrecisionFormula_data();
    void softmaxEqualsTheDoublePrecisionFormula();
    void takesOnlyWhatItCanCompute();
    void trainingTakesThemWithTheirGradients();
    void aFewLargeProductsGoToTheBlas();
};

void TestBatchedProduct::multipliesAsByHand()
{
    // [[1, 2], [3, 4]] [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; the second of
    // the batch doubled: [[2, 4], [6, 8]] by the same.
    const torch::Tensor a = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f, 2.0f, 4.0f, 6.0f, 8.0f}).view({2, 2, 2});
    const torch::Tensor b = torch::tensor({5.0f, 6.0f, 7.0f, 8.0f}).view({1, 2, 2}).expand({2, 2, 2});
    for (const InstructionSet set : test::kernelBuilds()) {
        const torch::Tensor got = batchedProduct(a, b, set);
        const torch::Tensor expected = torch::tensor({19.0f, 22.0f, 43.0f, 50.0f, 38.0f, 44.0f, 86.0f, 100.0f}).view({2, 2, 2});
        QVERIFY2(torch::equal(got, expected), instructionSetName(set));
    }
}

// Each shape for every build this CPU runs.
void TestBatchedProduct::equalsTheDoublePrecisionProduct_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("inner");
    QTest::addColumn<int>("columns");
    QTest::addColumn<QString>("layoutA");
    QTest::addColumn<QString>("layoutB");
    QTest::addColumn<InstructionSet>("set");

    test::forEachKernelBuild([](InstructionSet set, auto row) {
        // Attention's four shapes: scores (q k^T), context (p v), and their gradients.
        row("scores: 64 x 32 by 32 x 64, k transposed") << 64 << 32 << 64 << "projection" << "columns" << set;
        row("context: 64 x 64 by 64 x 32") << 64 << 64 << 32 << "rows" << "projection" << set;
        row("value gradient: p transposed") << 64 << 64 << 32 << "columns" << "rows" << set;
        // 13 rows: two whole tiles of 6 and one row; 37 columns: a panel and a part of one.
        row("13 x 5 by 5 x 37") << 13 << 5 << 37 << "rows" << "rows" << set;
        // 200 rows: tasks of 96, 96 and 8; both operands transposed.
        row("200 x 40 by 40 x 3, both transposed") << 200 << 40 << 3 << "columns" << "columns" << set;
        row("1 x 1 by 1 x 1") << 1 << 1 << 1 << "rows" << "rows" << set;
        row("7 x 300 by 300 x 17") << 7 << 300 << 17 << "rows" << "columns" << set;
    });
}

void TestBatchedProduct::equalsTheDoublePrecisionProduct()
{
    QFETCH(int, rows);
    QFETCH(int, inner);
    QFETCH(int, columns);
    QFETCH(QString, layoutA);
    QFETCH(QString, layoutB);
    QFETCH(InstructionSet, set);
    torch::manual_seed(rows * 31 + inner * 7 + columns);
    const torch::Tensor a = operand({2, 3}, rows, inner, layoutA);
    const torch::Tensor b = operand({2, 3}, inner, columns, layoutB);
    QVERIFY(batchedProductApplies(a, b));
    const torch::Tensor got = batchedProduct(a, b, set);
    QCOMPARE(got.sizes().vec(), (std::vector<std::int64_t>{2, 3, rows, columns}));
    QVERIFY(got.is_contiguous());
    const double error = test::relativeError(got, reference(a, b));
    QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));

    // The same products as a batch of three dimensions.
    const torch::Tensor flat = batchedProduct(a.reshape({6, rows, inner}), b.reshape({6, inner, columns}), set);
    QVERIFY(torch::equal(flat, got.view({6, rows, columns})));
}

void TestBatchedProduct::softmaxEqualsTheDoublePrecisionFormula_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("columns");
    QTest::addColumn<QString>("mask");  // none, padding ([B, 1, 1, M]), causal ([1, 1, N, M])
    QTest::addColumn<InstructionSet>("set");

    test::forEachKernelBuild([](InstructionSet set, auto row) {
        row("64 tokens, padding") << 64 << 64 << "padding" << set;
        row("64 tokens, causal") << 64 << 64 << "causal" << set;
        // 37 keys: a row of two whole vectors (AVX-512) and a part of one.
        row("13 queries, 37 keys, no mask") << 13 << 37 << "none" << set;
        row("100 tokens, padding") << 100 << 100 << "padding" << set;
        row("3 queries, 1 key, no mask") << 3 << 1 << "none" << set;
    });
}

void TestBatchedProduct::softmaxEqualsTheDoublePrecisionFormula()
{
    QFETCH(int, rows);
    QFETCH(int, columns);
    QFETCH(QString, mask);
    QFETCH(InstructionSet, set);
    torch::manual_seed(rows * 5 + columns);
    const std::int64_t A = 24;
    const torch::Tensor q = operand({2, 3}, rows, A, "projection") * 0.3;
    const torch::Tensor kT = operand({2, 3}, A, columns, "columns");
    torch::Tensor bias;
    if (mask == "padding") {
        // The first entry whole, the second with its last third of keys masked
        // (-1e9, as the model masks padding).
        bias = torch::zeros({2, 1, 1, columns});
        bias[1].narrow(-1, columns - columns / 3, columns / 3).fill_(-1e9);
    } else if (mask == "causal") {
        bias = torch::zeros({rows, columns}).masked_fill(torch::ones({rows, columns}, torch::kBool).triu(1), -1e9).view({1, 1, rows, columns});
    }
    QVERIFY(batchedSoftmaxProductApplies(q, kT, bias));
    const torch::Tensor got = batchedSoftmaxProduct(q, kT, bias, set);
    torch::Tensor scores = reference(q, kT);
    if (bias.defined())
        scores = scores + bias.to(torch::kDouble);
    const torch::Tensor expected = torch::softmax(scores, -1);
    const double error = test::relativeError(got, expected);
    QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));
    if (mask != "none")  // masked keys weigh nothing
        QCOMPARE(got.masked_select(bias.expand(got.sizes()) < -1.0).abs().max().item<float>(), 0.0f);
}

void TestBatchedProduct::takesOnlyWhatItCanCompute()
{
    const torch::Tensor a = torch::randn({2, 4, 5}), b = torch::randn({2, 5, 3});
    QVERIFY(batchedProductApplies(a, b));
    QVERIFY(!batchedProductApplies(a.to(torch::kDouble), b.to(torch::kDouble)));
    QVERIFY(!batchedProductApplies(a.to(torch::kBFloat16), b.to(torch::kBFloat16)));
    QVERIFY(!batchedProductApplies(a[0], b[0]));                       // no batch
    QVERIFY(!batchedProductApplies(a, b.narrow(1, 0, 4)));             // inner sizes differ
    QVERIFY(!batchedProductApplies(a, b.narrow(0, 0, 1)));             // a batch that would broadcast
    QVERIFY(!batchedProductApplies(a.narrow(1, 0, 0), b));             // nothing to multiply
    QVERIFY(!batchedProductApplies(a.unsqueeze(0).unsqueeze(0), b.unsqueeze(0).unsqueeze(0)));  // five dimensions
    // A softmax's bias must broadcast to the product, [2, 4, 3].
    QVERIFY(batchedSoftmaxProductApplies(a, b, torch::zeros({3})));
    QVERIFY(batchedSoftmaxProductApplies(a, b, torch::zeros({2, 1, 3})));
    QVERIFY(!batchedSoftmaxProductApplies(a, b, torch::zeros({4})));
    QVERIFY(!batchedSoftmaxProductApplies(a, b, torch::zeros({1, 2, 4, 3})));
    QVERIFY(!batchedSoftmaxProductApplies(a, b, torch::zeros({2, 4, 3}, torch::kDouble)));
}

void TestBatchedProduct::trainingTakesThemWithTheirGradients()
{
    // Attention's probabilities and context as the training step makes them,
    // with a padding mask: the gradients of q, k and v equal those of the same
    // formula in double precision, and neither a LibTorch product (bmm would
    // call the BLAS once per head) nor a forward softmax runs. Two heads a
    // thread and a batch of two: four products a thread, each small.
    torch::manual_seed(11);
    const std::int64_t G = 2 * at::get_num_threads();
    const torch::Tensor q = operand({2, G}, 40, 16, "projection").requires_grad_(true);
    const torch::Tensor k = operand({2, G}, 40, 16, "projection").requires_grad_(true);
    const torch::Tensor v = operand({2, G}, 40, 16, "projection").requires_grad_(true);
    QVERIFY(batchedProductTakesWholeProducts(q));
    torch::Tensor bias = torch::zeros({2, 1, 1, 40});
    bias[1].narrow(-1, 30, 10).fill_(-1e9);
    const torch::Tensor upstream = torch::randn({2, G, 40, 16});
    const auto lossOf = [&](const torch::Tensor& context) { return (context * upstream.to(context.scalar_type())).sum(); };

    OperatorTally tally;
    {
        const OperatorCounter counter;
        const torch::Tensor probabilities = batchedSoftmax(q * 0.25, k.transpose(-2, -1), bias);
        lossOf(batchedMatmul(probabilities, v)).backward();
        tally = counter.tally();
    }
    for (const char* op : {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::_softmax"})
        QVERIFY2(tally.byName.count(op) == 0, op);

    const torch::Tensor qd = q.detach().to(torch::kDouble).requires_grad_(true);
    const torch::Tensor kd = k.detach().to(torch::kDouble).requires_grad_(true);
    const torch::Tensor vd = v.detach().to(torch::kDouble).requires_grad_(true);
    const torch::Tensor scores = torch::matmul(qd * 0.25, kd.transpose(-2, -1)) + bias.to(torch::kDouble);
    lossOf(torch::matmul(torch::softmax(scores, -1), vd)).backward();
    for (const auto& [got, expected] : {std::pair{q, qd}, std::pair{k, kd}, std::pair{v, vd}}) {
        const double error = test::relativeError(got.grad(), expected.grad());
        QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));
    }

    // Without a mask (a model without padding), the same.
    for (const torch::Tensor& t : {q, k, v, qd, kd, vd})
        t.mutable_grad() = torch::Tensor();
    lossOf(batchedMatmul(batchedSoftmax(q * 0.25, k.transpose(-2, -1), torch::Tensor()), v)).backward();
    lossOf(torch::matmul(torch::softmax(torch::matmul(qd * 0.25, kd.transpose(-2, -1)), -1), vd)).backward();
    for (const auto& [got, expected] : {std::pair{q, qd}, std::pair{k, kd}, std::pair{v, vd}}) {
        const double error = test::relativeError(got.grad(), expected.grad());
        QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("without a mask, relative error %1").arg(error)));
    }
}

void TestBatchedProduct::aFewLargeProductsGoToTheBlas()
{
    // A batch of one product (a projection's, a feed-forward layer's): the
    // kernel would cut it into tasks of rows, which ran slower than a BLAS's
    // blocking of it, so batchedMatmul and batchedAddMatmul give it to
    // LibTorch's product, in training and in inference, with the same result;
    // in inference a build with oneDNN gives the one with a bias to oneDNN's
    // matmul (model/InferenceProduct.h), which no ATen operator counts.
    torch::manual_seed(5);
    const torch::Tensor a = torch::randn({1, 200, 64}), b = torch::randn({1, 64, 48}), bias = torch::randn({1, 1, 48});
    QVERIFY(batchedProductApplies(a, b));
    QVERIFY(!batchedProductTakesWholeProducts(a));
    for (const bool training : {true, false}) {
        const torch::AutoGradMode mode(training);
        OperatorTally tally;
        torch::Tensor product, added;
        {
            const OperatorCounter counter;
            product = batchedMatmul(a, b);
            added = batchedAddMatmul(bias, a, b);
            tally = counter.tally();
        }
        std::int64_t products = 0;
        for (const char* op : {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"})
            products += tally.byName.count(op) ? tally.byName.at(op) : 0;
        const std::int64_t byLibTorch = training || oneDnnVersion().empty() ? 2 : 1;
        QVERIFY2(products >= byLibTorch, training ? "training" : "inference");
        if (byLibTorch == 1)
            QVERIFY2(!tally.byName.count("aten::addmm") && !tally.byName.count("aten::baddbmm"), "oneDNN's");
        QVERIFY(test::relativeError(product, reference(a, b)) < kTolerance);
        QVERIFY(test::relativeError(added, reference(a, b) + bias.to(torch::kDouble)) < kTolerance);
    }
}

QTEST_GUILESS_MAIN(TestBatchedProduct)
#include "tst_batchedproduct.moc"
