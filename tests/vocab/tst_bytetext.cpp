// Tests base64 in core/vocab/ByteText: RFC 4648's own test vectors (section 10)
// and the forms the reader must refuse.
#include "vocab/ByteText.h"

#include <QTest>

#include <string>
#include <vector>

namespace {

std::vector<std::uint8_t> bytesOf(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

class TestByteText : public QObject {
    Q_OBJECT

private slots:
    void base64MatchesTheRfcVectors_data();
    void base64MatchesTheRfcVectors();
    void base64KeepsEveryByteValue();
    void fromBase64RefusesMalformedText_data();
    void fromBase64RefusesMalformedText();
};

void TestByteText::base64MatchesTheRfcVectors_data()
{
    QTest::addColumn<QString>("plain");
    QTest::addColumn<QString>("encoded");
    QTest::newRow("empty") << "" << "";
    QTest::newRow("f") << "f" << "Zg==";
    QTest::newRow("fo") << "fo" << "Zm8=";
    QTest::newRow("foo") << "foo" << "Zm9v";
    QTest::newRow("foob") << "foob" << "Zm9vYg==";
    QTest::newRow("fooba") << "fooba" << "Zm9vYmE=";
    QTest::newRow("foobar") << "foobar" << "Zm9vYmFy";
}

void TestByteText::base64MatchesTheRfcVectors()
{
    QFETCH(QString, plain);
    QFETCH(QString, encoded);
    QCOMPARE(QString::fromStdString(widelab::toBase64(bytesOf(plain.toStdString()))), encoded);
    const auto decoded = widelab::fromBase64(encoded.toStdString());
    QVERIFY(decoded.has_value());
    QVERIFY(*decoded == bytesOf(plain.toStdString()));
}

void TestByteText::base64KeepsEveryByteValue()
{
    // 0, 1, 2, 253, 254, 255: 000000 000000 000100 000010 | 111111 011111 111011 111111
    const std::vector<std::uint8_t> bytes = {0, 1, 2, 253, 254, 255};
    QCOMPARE(widelab::toBase64(bytes), std::string("AAEC/f7/"));
    QVERIFY(widelab::fromBase64("AAEC/f7/") == bytes);
}

void TestByteText::fromBase64RefusesMalformedText_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("length not a multiple of 4") << "Zm9vY";
    QTest::newRow("foreign character") << "Zm9!";
    QTest::newRow("padding inside") << "Zg==Zm8=";
    QTest::newRow("padding then a character") << "Zm=v";
    QTest::newRow("three padding characters") << "Z===";
}

void TestByteText::fromBase64RefusesMalformedText()
{
    QFETCH(QString, text);
    QVERIFY(!widelab::fromBase64(text.toStdString()).has_value());
}

QTEST_APPLESS_MAIN(TestByteText)
#include "tst_bytetext.moc"
