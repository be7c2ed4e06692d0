// Tests of model/ExpertRows on the CPU, where the fused dispatch and combine
// are host loops over the arithmetic the GPU's kernels run
// (cuda/ExpertRowsMath.h): hand-worked rows, sums and gradients, then the
// same against LibTorch's operators. tst_cuda sets the GPU's kernels against
// these.
#include "TestSupport.h"
#include "model/ExpertRows.h"

#include <QtTest>


using namespace widelab;
using widelab::test::printed;

namespace {

const c10::Device cpu(c10::kCPU);

torch::Tensor longs(std::vector<std::int64_t> values) { return torch::tensor(values, torch::kLong); }

// Two tokens, two choices: pair s * 2 + k is token s's choice k. The rows hold
// pairs 2, 0, 3 and 1 in that order, pair 3 dropped: its row holds no token (2).
torch::Tensor tokenOfRow() { return longs({1, 0, 2, 0}); }
torch::Tensor rowOfPair() { return longs({1, 3, 0, 2}); }

// A problem of S tokens and K choices, rows a permutation of the pairs with
// some dropped (token S), and values spread without a draw.
struct Problem {
    torch::Tensor token, row, dropped;  // dropped: by pair
};

Problem problem(std::int64_t S, std::int64_t K)
{
    const std::int64_t P = S * K;
    // Row i holds pair (5 i + 2) mod P (a permutation where 5 does not divide
    // P); every third row is a dropped pair's.
    const torch::Tensor pairOfRow = torch::arange(P, torch::kLong).mul(5).add(2).remainder(P);
    const torch::Tensor droppedRow = torch::arange(P, torch::kLong).remainder(3).eq(1);
    Problem made;
    made.token = torch::where(droppedRow, torch::full({P}, S, torch::kLong), pairOfRow.div(K, "floor"));
    made.row = torch::empty({P}, torch::kLong).scatter_(0, pairOfRow, torch::arange(P, torch::kLong));
    made.dropped = droppedRow.index_select(0, made.row);
    return made;
}

torch::Tensor spread(std::int64_t n, double step) { return torch::sin(torch::arange(n, torch::kFloat) * step); }

}  // namespace

class TestExpertRows : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theCpuRunsTheFusedPasses();
    void dispatchedRowsCarryTheirTokenAndTheBiasOne();
    void tokensGetTheGradientsOfTheirKeptRows();
    void combinedTokensSumTheirWeightedAnswers();
    void combineGradientsReachAnswersAndWeights();
    void matchesTheOperators_data();
    void matchesTheOperators();
    void noTokensGiveEmptyRows();
};

void TestExpertRows::theCpuRunsTheFusedPasses()
{
    QCOMPARE(fusedExpertRowsRefusal(cpu), std::string());
}

void TestExpertRows::dispatchedRowsCarryTheirTokenAndTheBiasOne()
{
    // Row 0 is token 1's, rows 1 and 3 token 0's, row 2 no token's; each
    // token row gains a 1 and a 0 (two bias columns).
    const torch::Tensor x = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2});
    const torch::Tensor rows = dispatchRows(x, tokenOfRow(), rowOfPair(), 2, 2, torch::kFloat);
    const torch::Tensor expected =
        torch::tensor({3.0f, 4.0f, 1.0f, 0.0f, 1.0f, 2.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 2.0f, 1.0f, 0.0f})
            .view({4, 4});
    QVERIFY2(torch::equal(rows, expected), qPrintable(printed(rows)));
}

void TestExpertRows::tokensGetTheGradientsOfTheirKeptRows()
{
    // Token 0's pairs are at rows 1 and 3: [2, 2] + [10, 20]. Token 1's are at
    // rows 0 and 2, but row 2 is the dropped pair's: [1, 1] alone. The bias
    // columns' gradients (5) reach no token.
    const torch::Tensor x = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2}).requires_grad_();
    const torch::Tensor upstream =
        torch::tensor({1.0f, 1.0f, 5.0f, 5.0f, 2.0f, 2.0f, 5.0f, 5.0f, 100.0f, 100.0f, 5.0f, 5.0f, 10.0f, 20.0f, 5.0f, 5.0f})
            .view({4, 4});
    dispatchRows(x, tokenOfRow(), rowOfPair(), 2, 2, torch::kFloat).backward(upstream);
    QVERIFY2(torch::equal(x.grad(), torch::tensor({12.0f, 22.0f, 1.0f, 1.0f}).view({2, 2})), qPrintable(printed(x.grad())));
}

void TestExpertRows::combinedTokensSumTheirWeightedAnswers()
{
    // Token 0: 0.25 * row 1 + 0.75 * row 3 = 0.25 [0, 1] + 0.75 [2, 2] = [1.5, 1.75].
    // Token 1: 1 * row 0 + 0 * row 2 (its dropped pair) = [1, 0].
    const torch::Tensor answers = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 5.0f, 5.0f, 2.0f, 2.0f}).view({4, 2});
    const torch::Tensor weight = torch::tensor({0.25f, 0.75f, 1.0f, 0.0f});
    const torch::Tensor out = combineRows(answers, rowOfPair(), weight, 2, torch::kFloat);
    QVERIFY2(torch::equal(out, torch::tensor({1.5f, 1.75f, 1.0f, 0.0f}).view({2, 2})), qPrintable(printed(out)));
}

void TestExpertRows::combineGradientsReachAnswersAndWeights()
{
    // Output gradients [1, 2] for token 0 and [3, 4] for token 1. Each pair's
    // row gets its weight times its token's: row 1 (pair 0) 0.25 [1, 2], row 3
    // (pair 1) 0.75 [1, 2], row 0 (pair 2) [3, 4], row 2 (pair 3) 0. Each
    // weight gets its row against its token's: [0, 1].[1, 2] = 2, [2, 2].[1, 2]
    // = 6, [1, 0].[3, 4] = 3, [5, 5].[3, 4] = 35.
    const torch::Tensor answers =
        torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 5.0f, 5.0f, 2.0f, 2.0f}).view({4, 2}).requires_grad_();
    const torch::Tensor weight = torch::tensor({0.25f, 0.75f, 1.0f, 0.0f}).requires_grad_();
    combineRows(answers, rowOfPair(), weight, 2, torch::kFloat).backward(torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2}));
    QVERIFY2(torch::equal(answers.grad(), torch::tensor({3.0f, 4.0f, 0.25f, 0.5f, 0.0f, 0.0f, 0.75f, 1.5f}).view({4, 2})),
             qPrintable(printed(answers.grad())));
    QVERIFY2(torch::equal(weight.grad(), torch::tensor({2.0f, 6.0f, 3.0f, 35.0f})), qPrintable(printed(weight.grad())));
}

void TestExpertRows::matchesTheOperators_data()
{
    QTest::addColumn<std::int64_t>("choices");
    QTest::addColumn<bool>("bf16");
    for (const std::int64_t K : {1, 2, 3})
        for (const bool bf16 : {false, true})
            QTest::addRow("top-%lld, rows in %s", static_cast<long long>(K), bf16 ? "bf16" : "fp32") << K << bf16;
}

void TestExpertRows::matchesTheOperators()
{
    QFETCH(std::int64_t, choices);
    QFETCH(bool, bf16);
    // 13 tokens of 16 values, 8 bias columns; the rows (and answers) in bf16
    // or fp32, the tokens and the combined output in fp32, as under autocast.
    const std::int64_t S = 13, K = choices, D = 16, P = S * K, bias = 8;
    const c10::ScalarType rowType = bf16 ? torch::kBFloat16 : torch::kFloat;
    const Problem made = problem(S, K);
    const torch::Tensor x0 = spread(S * D, 0.37).view({S, D}), answers0 = spread(P * D, 0.53).view({P, D}).to(rowType);
    const torch::Tensor weight0 = torch::where(made.dropped, torch::zeros({P}), spread(P, 0.91).abs());
    const torch::Tensor upstreamRows = spread(P * (D + bias), 0.29).view({P, D + bias}).to(rowType);
    const torch::Tensor upstreamOut = spread(S * D, 0.61).view({S, D});

    std::vector<std::vector<torch::Tensor>> results;
    for (const bool fused : {true, false}) {
        const torch::Tensor x = x0.clone().requires_grad_(), answers = answers0.clone().requires_grad_();
        const torch::Tensor weight = weight0.clone().requires_grad_();
        const torch::Tensor rows = fused ? dispatchRows(x, made.token, made.row, K, bias, rowType)
                                         : dispatchRowsByOperators(x, made.token, made.row, K, bias, rowType);
        const torch::Tensor out = fused ? combineRows(answers, made.row, weight, K, torch::kFloat)
                                        : combineRowsByOperators(answers, made.row, weight, K, torch::kFloat);
        torch::autograd::backward({rows, out}, {upstreamRows, upstreamOut});
        results.push_back({rows.detach().to(torch::kFloat), out.detach(), x.grad(), answers.grad().to(torch::kFloat),
                           weight.grad()});
    }
    // The operators sum the tokens' gradients in the rows' type (bf16 here),
    // in row order; the fused pass sums in float, choice 0 first.
    const double tolerance[] = {0.0, 1e-6, bf16 ? 2e-2 : 1e-6, 0.0, 1e-5};
    const char* names[] = {"rows", "combined", "tokens' gradient", "answers' gradient", "weights' gradient"};
    for (std::size_t i = 0; i < results[0].size(); ++i)
        QVERIFY2(torch::allclose(results[0][i], results[1][i], tolerance[i], tolerance[i]),
                 qPrintable(QString("%1: fused %2 against %3")
                                .arg(names[i], printed(results[0][i]), printed(results[1][i]))));
}

void TestExpertRows::noTokensGiveEmptyRows()
{
    const torch::Tensor x = torch::zeros({0, 8}).requires_grad_(), none = torch::zeros({0}, torch::kLong);
    const torch::Tensor rows = dispatchRows(x, none, none, 2, 8, torch::kFloat);
    QCOMPARE(rows.sizes().vec(), (std::vector<std::int64_t>{0, 16}));
    const torch::Tensor answers = torch::zeros({0, 8}).requires_grad_();
    const torch::Tensor out = combineRows(answers, none, torch::zeros({0}), 2, torch::kFloat);
    QCOMPARE(out.sizes().vec(), (std::vector<std::int64_t>{0, 8}));
    (rows.sum() + out.sum()).backward();
    QCOMPARE(x.grad().sizes().vec(), (std::vector<std::int64_t>{0, 8}));
    QCOMPARE(answers.grad().sizes().vec(), (std::vector<std::int64_t>{0, 8}));
}

QTEST_GUILESS_MAIN(TestExpertRows)
#include "tst_expertrows.moc"
