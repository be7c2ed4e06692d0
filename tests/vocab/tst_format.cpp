// Tests how WideLab writes a count and a size (core/vocab/Format): each row's
// text worked out by hand.
#include "vocab/Format.h"

#include <QTest>

#include <cmath>
#include <limits>

class TestFormat : public QObject {
    Q_OBJECT

private slots:
    void shortCountKeepsThreeSignificantDigits_data();
    void shortCountKeepsThreeSignificantDigits();
    void formatBytesWritesOneDecimalInBinaryUnits_data();
    void formatBytesWritesOneDecimalInBinaryUnits();
    void groupDigitsPutsACommaEveryThreeDigits_data();
    void groupDigitsPutsACommaEveryThreeDigits();
    void tableNumbersGroupWholeNumbersOnly_data();
    void tableNumbersGroupWholeNumbersOnly();
};

void TestFormat::shortCountKeepsThreeSignificantDigits_data()
{
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("expected");

    QTest::newRow("0") << 0.0 << "0";
    QTest::newRow("812") << 812.0 << "812";
    QTest::newRow("999") << 999.0 << "999";
    QTest::newRow("1000") << 1000.0 << "1k";
    QTest::newRow("1500") << 1500.0 << "1.5k";
    QTest::newRow("599,040") << 599040.0 << "599k";
    // 999,999 is 1.00e6 at three digits: the next unit, not "1e+03k".
    QTest::newRow("999999") << 999999.0 << "1M";
    QTest::newRow("2514954") << 2514954.0 << "2.51M";
    QTest::newRow("26225674") << 26225674.0 << "26.2M";
    QTest::newRow("1e9") << 1.0e9 << "1B";
    QTest::newRow("1.23e12") << 1.23e12 << "1.23T";
    // Past the last unit the digits grow rather than turn exponential.
    QTest::newRow("4.5e15") << 4.5e15 << "4.5e+03T";
    QTest::newRow("-2500") << -2500.0 << "-2.5k";
    QTest::newRow("nan") << std::numeric_limits<double>::quiet_NaN() << "nan";
    QTest::newRow("-inf") << -std::numeric_limits<double>::infinity() << "-inf";
}

void TestFormat::shortCountKeepsThreeSignificantDigits()
{
    QFETCH(double, value);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(widelab::shortCount(value)), expected);
}

void TestFormat::formatBytesWritesOneDecimalInBinaryUnits_data()
{
    QTest::addColumn<double>("bytes");
    QTest::addColumn<QString>("expected");

    QTest::newRow("0") << 0.0 << "0 B";
    QTest::newRow("512") << 512.0 << "512 B";
    QTest::newRow("1023") << 1023.0 << "1023 B";
    QTest::newRow("1024") << 1024.0 << "1.0 KiB";
    QTest::newRow("1536") << 1536.0 << "1.5 KiB";
    // 1,048,525 bytes are 1023.9502 KiB, 1024.0 at one decimal: the next unit;
    // one byte fewer is 1023.9492 KiB, which rounds down.
    QTest::newRow("1048525") << 1048525.0 << "1.0 MiB";
    QTest::newRow("1048524") << 1048524.0 << "1023.9 KiB";
    QTest::newRow("300 MiB") << 314572800.0 << "300.0 MiB";
    QTest::newRow("600 MiB") << 629145600.0 << "600.0 MiB";
    QTest::newRow("1.2 GiB") << 1288490189.0 << "1.2 GiB";
    QTest::newRow("128 GiB") << 137438953472.0 << "128.0 GiB";
    QTest::newRow("2 TiB") << 2199023255552.0 << "2.0 TiB";
}

void TestFormat::formatBytesWritesOneDecimalInBinaryUnits()
{
    QFETCH(double, bytes);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(widelab::formatBytes(bytes)), expected);
}

void TestFormat::groupDigitsPutsACommaEveryThreeDigits_data()
{
    QTest::addColumn<qint64>("value");
    QTest::addColumn<QString>("expected");

    QTest::newRow("0") << qint64(0) << "0";
    QTest::newRow("999") << qint64(999) << "999";
    QTest::newRow("1000") << qint64(1000) << "1,000";
    QTest::newRow("100000") << qint64(100000) << "100,000";
    QTest::newRow("1234567") << qint64(1234567) << "1,234,567";
    QTest::newRow("12345678") << qint64(12345678) << "12,345,678";
    QTest::newRow("-999") << qint64(-999) << "-999";
    QTest::newRow("-1000") << qint64(-1000) << "-1,000";
    QTest::newRow("-1234567") << qint64(-1234567) << "-1,234,567";
    QTest::newRow("int64 max") << qint64(std::numeric_limits<std::int64_t>::max()) << "9,223,372,036,854,775,807";
    QTest::newRow("int64 min") << qint64(std::numeric_limits<std::int64_t>::min()) << "-9,223,372,036,854,775,808";
}

void TestFormat::groupDigitsPutsACommaEveryThreeDigits()
{
    QFETCH(qint64, value);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(widelab::groupDigits(value)), expected);
}

void TestFormat::tableNumbersGroupWholeNumbersOnly_data()
{
    QTest::addColumn<double>("value");
    QTest::addColumn<int>("decimals");
    QTest::addColumn<QString>("expected");

    QTest::newRow("parameters") << 1261066.0 << 0 << "1,261,066";
    QTest::newRow("rounded") << 2048.6 << 0 << "2,049";
    QTest::newRow("small") << 812.0 << 0 << "812";
    QTest::newRow("accuracy") << 36.25 << 1 << "36.2";
    QTest::newRow("loss, not grouped") << 12345.125 << 2 << "12345.12";
    QTest::newRow("NaN") << std::nan("") << 0 << "nan";
}

void TestFormat::tableNumbersGroupWholeNumbersOnly()
{
    QFETCH(double, value);
    QFETCH(int, decimals);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(widelab::tableNumber(value, decimals)), expected);
}

QTEST_APPLESS_MAIN(TestFormat)
#include "tst_format.moc"
