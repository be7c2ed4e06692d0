// Tests curvemath: the debiased EMA, min/max decimation, the number formats and
// the legend's column count, against values worked out by hand.
#include "curves/CurveMath.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace widelab::curvemath;

class TestCurveMath : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void emaMatchesHandComputedValues();
    void emaPassesNonFiniteValuesThrough();
    void emaWeightIsClamped();
    void decimationKeepsEachBucketsMinAndMax();
    void decimationKeepsASpikeAndStaysBounded();
    void decimationKeepsTheNeighboursOutsideTheRange();
    void decimationTurnsGapsAndNonPositiveValuesIntoNaN();
    void manySeriesAreDecimatedAsOneByOne();
    void countsAreFormattedWithSuffixes();
    void axisValuesPickTheirNotationByMagnitude();
    void durationsAreFormattedAsClockTimes();
    void legendColumnsFitTheWidestEntryOfEachColumn();
    void longRunNamesAreCutInTheMiddle();
};

void TestCurveMath::emaMatchesHandComputedValues()
{
    // w = 0.5 over 1, 2, 3:
    //   a1 = 0.5,   s1 = 0.5 / 0.5     = 1
    //   a2 = 1.25,  s2 = 1.25 / 0.75   = 5/3
    //   a3 = 2.125, s3 = 2.125 / 0.875 = 17/7
    const QVector<double> s = smoothEma({1, 2, 3}, 0.5);
    QCOMPARE(s.size(), 3);
    QCOMPARE(s[0], 1.0);
    QVERIFY(std::abs(s[1] - 5.0 / 3.0) < 1e-12);
    QVERIFY(std::abs(s[2] - 17.0 / 7.0) < 1e-12);

    // w = 0.9 over 10, 0: a1 = 1, a2 = 0.9, s2 = 0.9 / (1 - 0.81) = 90/19.
    const QVector<double> t = smoothEma({10, 0}, 0.9);
    QVERIFY(std::abs(t[0] - 10.0) < 1e-12);
    QVERIFY(std::abs(t[1] - 90.0 / 19.0) < 1e-12);

    // Debiasing: the first smoothed value is the first value, even at w = 0.999.
    QVERIFY(std::abs(smoothEma({4.25, 1}, 0.999)[0] - 4.25) < 1e-9);
    // w = 0 is the identity.
    QCOMPARE(smoothEma({3, -1, 7}, 0.0), (QVector<double>{3, -1, 7}));
}

void TestCurveMath::emaPassesNonFiniteValuesThrough()
{
    // w = 0.5 over 1, NaN, 3: the NaN stays, and 3 is the second finite value:
    // a2 = 0.25 + 1.5 = 1.75, s = 1.75 / 0.75 = 7/3.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const QVector<double> s = smoothEma({1, nan, 3}, 0.5);
    QCOMPARE(s[0], 1.0);
    QVERIFY(std::isnan(s[1]));
    QVERIFY(std::abs(s[2] - 7.0 / 3.0) < 1e-12);
}

void TestCurveMath::emaWeightIsClamped()
{
    QCOMPARE(clampSmoothing(-0.5), 0.0);
    QCOMPARE(clampSmoothing(std::numeric_limits<double>::quiet_NaN()), 0.0);
    QCOMPARE(clampSmoothing(0.25), 0.25);
    QCOMPARE(clampSmoothing(1.0), 0.999);
    QCOMPARE(smoothEma({1, 5, 2}, 7.0), smoothEma({1, 5, 2}, 0.999));
}

void TestCurveMath::decimationKeepsEachBucketsMinAndMax()
{
    // Keys 0..9999, value = key % 1000, 10 columns over [0, 10000): bucket b holds
    // keys 1000b .. 1000b + 999 with its minimum 0 first and maximum 999 last.
    QVector<double> keys, values;
    for (int i = 0; i < 10000; ++i) {
        keys.append(i);
        values.append(i % 1000);
    }
    QVector<double> outKeys, outValues;
    decimateMinMax(keys, values, 0, 10000, 10, false, &outKeys, &outValues);
    QCOMPARE(outKeys.size(), 20);
    for (int b = 0; b < 10; ++b) {
        QCOMPARE(outKeys[2 * b], 1000.0 * b);
        QCOMPARE(outValues[2 * b], 0.0);
        QCOMPARE(outKeys[2 * b + 1], 1000.0 * b + 999);
        QCOMPARE(outValues[2 * b + 1], 999.0);
    }
}

void TestCurveMath::decimationKeepsASpikeAndStaysBounded()
{
    QVector<double> keys, values;
    for (int i = 0; i < 100000; ++i) {
        keys.append(i);
        values.append(0.1 * (i % 7));
    }
    values[54321] = 100;
    values[77777] = -50;
    QVector<double> outKeys, outValues;
    decimateMinMax(keys, values, 0, 99999, 100, false, &outKeys, &outValues);
    QVERIFY(outKeys.size() <= 2 * 100 + 2);
    QVERIFY(outKeys.size() >= 100);
    const qsizetype spike = outKeys.indexOf(54321.0);
    const qsizetype dip = outKeys.indexOf(77777.0);
    QVERIFY(spike >= 0);
    QVERIFY(dip >= 0);
    QCOMPARE(outValues[spike], 100.0);
    QCOMPARE(outValues[dip], -50.0);
    // Output keys still ascend.
    QVERIFY(std::is_sorted(outKeys.cbegin(), outKeys.cend()));
}

void TestCurveMath::decimationKeepsTheNeighboursOutsideTheRange()
{
    QVector<double> outKeys, outValues;
    decimateMinMax({0, 10, 20, 30, 40}, {1, 2, 3, 4, 5}, 15, 25, 100, false, &outKeys, &outValues);
    QCOMPARE(outKeys, (QVector<double>{10, 20, 30}));
    QCOMPARE(outValues, (QVector<double>{2, 3, 4}));
}

void TestCurveMath::decimationTurnsGapsAndNonPositiveValuesIntoNaN()
{
    QVector<double> outKeys, outValues;
    // Each key its own bucket: floor(k / 3 * 100) = 0, 33, 66, 100 -> 99.
    decimateMinMax({0, 1, 2, 3}, {1, 0, -1, 2}, 0, 3, 100, true, &outKeys, &outValues);
    QCOMPARE(outKeys, (QVector<double>{0, 1, 2, 3}));
    QCOMPARE(outValues[0], 1.0);
    QVERIFY(std::isnan(outValues[1]));
    QVERIFY(std::isnan(outValues[2]));
    QCOMPARE(outValues[3], 2.0);

    // Two buckets over [0, 10]: keys 0..4 are all NaN (one NaN for the gap),
    // keys 5..9 all 1 (minimum and maximum coincide: one point).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    decimateMinMax({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {nan, nan, nan, nan, nan, 1, 1, 1, 1, 1}, 0, 10, 2, false,
                   &outKeys, &outValues);
    QCOMPARE(outKeys, (QVector<double>{0, 5}));
    QVERIFY(std::isnan(outValues[0]));
    QCOMPARE(outValues[1], 1.0);
}

void TestCurveMath::manySeriesAreDecimatedAsOneByOne()
{
    // Series i runs i*100 + (step mod 10) over steps 0..149,999; three of them
    // (450,000 points) are shared with a second thread, one is not. In 10 columns
    // of 15,000 steps each bucket starts at a multiple of 10: its min (i*100)
    // comes first, then its max (i*100 + 9).
    for (const int count : {1, 3}) {
        QVector<double> keys;
        QVector<QVector<double>> values(count);
        for (int step = 0; step < 150'000; ++step) {
            keys.push_back(step);
            for (int i = 0; i < count; ++i)
                values[i].push_back(i * 100 + step % 10);
        }
        QVector<Decimation> series;
        for (int i = 0; i < count; ++i)
            series.push_back({&keys, &values[i], {}, {}});
        decimateEach(series, 0, 149'999, 10, false);
        for (int i = 0; i < count; ++i) {
            QVector<double> expected;
            for (int bucket = 0; bucket < 10; ++bucket)
                expected << i * 100 << i * 100 + 9;
            QCOMPARE(series[i].outValues, expected);
            QCOMPARE(series[i].outKeys.size(), 20);
            QCOMPARE(series[i].outKeys[2], 15'000.0);  // the second bucket's first step
        }
    }
}

void TestCurveMath::countsAreFormattedWithSuffixes()
{
    QCOMPARE(formatCount(950), QStringLiteral("950"));
    QCOMPARE(formatCount(1530), QStringLiteral("1.53k"));
    QCOMPARE(formatCount(-1500), QStringLiteral("-1.5k"));
    QCOMPARE(formatCount(12345678), QStringLiteral("12.3M"));
    QCOMPARE(formatCount(999999), QStringLiteral("1M"));
    QCOMPARE(formatCount(2e9), QStringLiteral("2B"));
    QCOMPARE(formatCount(0), QStringLiteral("0"));
    // With a tick resolution: enough decimals to tell neighbouring ticks apart.
    QCOMPARE(formatCount(12550, 10), QStringLiteral("12.55k"));
    QCOMPARE(formatCount(12560, 10), QStringLiteral("12.56k"));
    QCOMPARE(formatCount(5000, 2500), QStringLiteral("5k"));
    QCOMPARE(formatCount(7500, 2500), QStringLiteral("7.5k"));
    QCOMPARE(formatCount(0, 2500), QStringLiteral("0"));
    QCOMPARE(formatCount(12.5, 0.5), QStringLiteral("12.5"));
}

void TestCurveMath::axisValuesPickTheirNotationByMagnitude()
{
    // Decimals for the step.
    QCOMPARE(formatAxisValue(1.25, 0.25, 2.5), QStringLiteral("1.25"));
    QCOMPARE(formatAxisValue(1.5, 0.25, 2.5), QStringLiteral("1.5"));
    QCOMPARE(formatAxisValue(0.012, 0.001, 0.016), QStringLiteral("0.012"));
    QCOMPARE(formatAxisValue(1e-12, 0.25, 2.5), QStringLiteral("0"));  // residue of tick arithmetic
    // Learning rates: compact scientific, mantissa precise to the step.
    QCOMPARE(formatAxisValue(0.00025, 0.00005, 0.0003), QStringLiteral("2.5e-4"));
    QCOMPARE(formatAxisValue(0.00005, 0.00005, 0.0003), QStringLiteral("5e-5"));
    QCOMPARE(formatAxisValue(0.0001, 0.00005, 0.0003), QStringLiteral("1e-4"));
    QCOMPARE(formatAxisValue(-0.0002, 0.0001, 0.0003), QStringLiteral("-2e-4"));
    // Throughput: suffixes.
    QCOMPARE(formatAxisValue(12000, 1000, 12500), QStringLiteral("12k"));
    QCOMPARE(formatAxisValue(11500, 500, 12500), QStringLiteral("11.5k"));
}

void TestCurveMath::durationsAreFormattedAsClockTimes()
{
    QCOMPARE(formatDuration(5.25), QStringLiteral("5.25 s"));
    QCOMPARE(formatDuration(42.5), QStringLiteral("42.5 s"));
    QCOMPARE(formatDuration(125), QStringLiteral("2:05"));
    QCOMPARE(formatDuration(3725), QStringLiteral("1:02:05"));
    QCOMPARE(formatDuration(90000), QStringLiteral("1 d 1:00:00"));
}

void TestCurveMath::legendColumnsFitTheWidestEntryOfEachColumn()
{
    using widelab::curvemath::legendColumns;
    // Entries 100, 60, 80, 40 wide, spacing 10. Four columns: 100+60+80+40+30 = 310.
    const QVector<int> widths{100, 60, 80, 40};
    QCOMPARE(legendColumns(widths, 310, 10), 4);
    // Three columns: rows (100, 60, 80) and (40): 100+60+80+20 = 260.
    QCOMPARE(legendColumns(widths, 309, 10), 3);
    QCOMPARE(legendColumns(widths, 260, 10), 3);
    // Two columns: rows (100, 60) and (80, 40): 100+60+10 = 170.
    QCOMPARE(legendColumns(widths, 259, 10), 2);
    QCOMPARE(legendColumns(widths, 170, 10), 2);
    // One column however narrow: the entries cannot shrink.
    QCOMPARE(legendColumns(widths, 169, 10), 1);
    QCOMPARE(legendColumns(widths, 5, 10), 1);
    QCOMPARE(legendColumns({}, 500, 10), 1);
    // A wide entry in the second column counts where it lands: (10, 200), (10, 10) -> 10+200+5 = 215.
    QCOMPARE(legendColumns({10, 200, 10, 10}, 214, 5), 1);
    QCOMPARE(legendColumns({10, 200, 10, 10}, 215, 5), 2);
}

void TestCurveMath::longRunNamesAreCutInTheMiddle()
{
    using widelab::curvemath::elideMiddle;
    QCOMPARE(elideMiddle(QStringLiteral("abcdefghij"), 5), QStringLiteral("ab\u2026ij"));
    QCOMPARE(elideMiddle(QStringLiteral("abcdefghij"), 6), QStringLiteral("abc\u2026ij"));  // the start takes the odd one
    QCOMPARE(elideMiddle(QStringLiteral("abcde"), 5), QStringLiteral("abcde"));
    // Two members of one study stay apart in 28 characters.
    const QString a = elideMiddle(QStringLiteral("multipath-translation-deep-vs-paths-member-2"));
    QCOMPARE(a, QStringLiteral("multipath-tran\u2026aths-member-2"));
    QCOMPARE(a.size(), 28);
    QVERIFY(a != elideMiddle(QStringLiteral("multipath-translation-deep-vs-paths-member-3")));
}

QTEST_MAIN(TestCurveMath)
#include "tst_curvemath.moc"
