// Tests of RandAugment (data/RandAugment): each operation on small pictures
// whose result is worked out by hand, the magnitude scale at its ends, and the
// draw (uniform over the operations, signs halved, the same for the same seed).
#include "data/Batch.h"
#include "data/ListOps.h"
#include "data/RandAugment.h"

#include <QtTest>

#include <map>

using namespace widelab;

namespace {

Image grey(std::int64_t width, std::int64_t height, std::vector<std::uint8_t> pixels)
{
    Image image;
    image.width = width;
    image.height = height;
    image.channels = 1;
    image.pixels = std::move(pixels);
    return image;
}

// A 4x4 grey picture whose pixel (x, y) is 10 + 10 * (4y + x): every value tells where it came from.
Image ramp()
{
    std::vector<std::uint8_t> pixels;
    for (int i = 0; i < 16; ++i)
        pixels.push_back(static_cast<std::uint8_t>(10 + 10 * i));
    return grey(4, 4, pixels);
}

std::vector<std::uint8_t> apply(const Image& image, AugmentOp op, double amount)
{
    return applyAugmentOp(image, op, amount).pixels;
}

using Bytes = std::vector<std::uint8_t>;

}  // namespace

class TestRandAugment : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void translationsShiftInBlack();
    void shearsSlideRowsAboutTheCentre();
    void rotationByAQuarterTurnsTheGrid();
    void enhancersBlendWithTheirReference();
    void sharpnessSharpensOnlyInside();
    void posterizeAndSolarizeByTheBits();
    void autocontrastAndEqualizeStretchEachChannel();
    void magnitudeScaleEnds();
    void drawIsUniformSignedAndSeeded();
    void batchesFollowTheirSeed();
};

void TestRandAugment::translationsShiftInBlack()
{
    const Image image = ramp();
    // Right by one: each row's first pixel black, the rest its left neighbour.
    QCOMPARE(apply(image, AugmentOp::TranslateX, 1.0),
             (Bytes{0, 10, 20, 30, 0, 50, 60, 70, 0, 90, 100, 110, 0, 130, 140, 150}));
    // Up by two: the lower two rows black.
    QCOMPARE(apply(image, AugmentOp::TranslateY, -2.0),
             (Bytes{90, 100, 110, 120, 130, 140, 150, 160, 0, 0, 0, 0, 0, 0, 0, 0}));
    QCOMPARE(apply(image, AugmentOp::TranslateX, 0.0), image.pixels);
}

void TestRandAugment::shearsSlideRowsAboutTheCentre()
{
    // x' = x + (y - 2): the rows' centres are 1.5 and 0.5 above and 0.5 and 1.5 below, so row 0 slides two
    // to the left, row 1 one, row 2 stays and row 3 goes one to the right.
    QCOMPARE(apply(ramp(), AugmentOp::ShearX, 1.0),
             (Bytes{30, 40, 0, 0, 60, 70, 80, 0, 90, 100, 110, 120, 0, 130, 140, 150}));
    // The same down the columns: column 0 slides two up, column 1 one, column 2 stays, column 3 one down.
    QCOMPARE(apply(ramp(), AugmentOp::ShearY, 1.0),
             (Bytes{90, 60, 30, 0, 130, 100, 70, 40, 0, 140, 110, 80, 0, 0, 150, 120}));
}

void TestRandAugment::rotationByAQuarterTurnsTheGrid()
{
    // A quarter turn anticlockwise: the right column becomes the top row, read from the top down.
    QCOMPARE(apply(ramp(), AugmentOp::Rotate, 90.0),
             (Bytes{40, 80, 120, 160, 30, 70, 110, 150, 20, 60, 100, 140, 10, 50, 90, 130}));
    QCOMPARE(apply(ramp(), AugmentOp::Rotate, -90.0),
             (Bytes{130, 90, 50, 10, 140, 100, 60, 20, 150, 110, 70, 30, 160, 120, 80, 40}));
    QCOMPARE(apply(ramp(), AugmentOp::Rotate, 0.0), ramp().pixels);
}

void TestRandAugment::enhancersBlendWithTheirReference()
{
    const Image two = grey(2, 1, {100, 200});
    QCOMPARE(apply(two, AugmentOp::Brightness, 0.5), (Bytes{50, 100}));
    QCOMPARE(apply(two, AugmentOp::Brightness, 1.9), (Bytes{190, 255}));  // 380 clamped

    // Colour 0 is the grey picture: pure red's grey is 0.299 x 255 = 76.2.
    Image red;
    red.width = red.height = 1;
    red.channels = 3;
    red.pixels = {255, 0, 0};
    QCOMPARE(apply(red, AugmentOp::Color, 0.0), (Bytes{76, 76, 76}));
    QCOMPARE(apply(red, AugmentOp::Color, 1.0), red.pixels);
    QCOMPARE(apply(two, AugmentOp::Color, 1.9), two.pixels);  // a grey picture has no colour

    // Contrast about the mean grey, 100 here.
    const Image four = grey(2, 2, {0, 100, 200, 100});
    QCOMPARE(apply(four, AugmentOp::Contrast, 0.0), (Bytes{100, 100, 100, 100}));
    QCOMPARE(apply(four, AugmentOp::Contrast, 0.5), (Bytes{50, 100, 150, 100}));
    QCOMPARE(apply(four, AugmentOp::Contrast, 2.0), (Bytes{0, 100, 255, 100}));
}

void TestRandAugment::sharpnessSharpensOnlyInside()
{
    // A bright centre on black: smoothed, it is (5 x 130) / 13 = 50; its neighbours are the border and keep
    // their 0.
    const Image dot = grey(3, 3, {0, 0, 0, 0, 130, 0, 0, 0, 0});
    QCOMPARE(apply(dot, AugmentOp::Sharpness, 0.0), (Bytes{0, 0, 0, 0, 50, 0, 0, 0, 0}));
    QCOMPARE(apply(dot, AugmentOp::Sharpness, 1.5), (Bytes{0, 0, 0, 0, 170, 0, 0, 0, 0}));  // 50 + 1.5 x 80
    const Image flat = grey(3, 3, Bytes(9, 77));
    QCOMPARE(apply(flat, AugmentOp::Sharpness, 1.9), flat.pixels);
}

void TestRandAugment::posterizeAndSolarizeByTheBits()
{
    const Image values = grey(4, 1, {191, 128, 100, 255});
    QCOMPARE(apply(values, AugmentOp::Posterize, 4.0), (Bytes{176, 128, 96, 240}));  // 1011'1111 -> 1011'0000
    QCOMPARE(apply(values, AugmentOp::Posterize, 8.0), values.pixels);
    QCOMPARE(apply(values, AugmentOp::Solarize, 128.0), (Bytes{64, 127, 100, 0}));
    QCOMPARE(apply(values, AugmentOp::Solarize, 256.0), values.pixels);
}

void TestRandAugment::autocontrastAndEqualizeStretchEachChannel()
{
    QCOMPARE(apply(grey(3, 1, {50, 100, 150}), AugmentOp::AutoContrast, 0.0), (Bytes{0, 128, 255}));  // 127.5
    QCOMPARE(apply(grey(2, 1, {80, 80}), AugmentOp::AutoContrast, 0.0), (Bytes{80, 80}));
    Image rgb;  // each channel on its own: red 10..20, green already full, blue flat
    rgb.width = 2;
    rgb.height = 1;
    rgb.channels = 3;
    rgb.pixels = {10, 0, 7, 20, 255, 7};
    QCOMPARE(apply(rgb, AugmentOp::AutoContrast, 0.0), (Bytes{0, 0, 7, 255, 255, 7}));

    // 510 pixels of 0, 255 of 100, 255 of 200: the step is (1020 - 255) / 255 = 3, and value v becomes
    // (the count below v + 1) / 3: 0 -> 1/3 = 0, 100 -> 511/3 = 170, 200 -> 766/3 = 255.
    Bytes pixels(510, 0);
    pixels.insert(pixels.end(), 255, 100);
    pixels.insert(pixels.end(), 255, 200);
    const Bytes equalised = apply(grey(1020, 1, pixels), AugmentOp::Equalize, 0.0);
    QCOMPARE(equalised[0], std::uint8_t{0});
    QCOMPARE(equalised[510], std::uint8_t{170});
    QCOMPARE(equalised[1019], std::uint8_t{255});
    // One value only: nothing to spread.
    QCOMPARE(apply(grey(2, 1, {40, 40}), AugmentOp::Equalize, 0.0), (Bytes{40, 40}));
}

void TestRandAugment::magnitudeScaleEnds()
{
    QCOMPARE(augmentOps().size(), std::size_t{14});
    for (std::size_t i = 0; i < augmentOps().size(); ++i)
        QCOMPARE(static_cast<std::size_t>(augmentOps()[i].op), i);  // the table is in the enum's order

    QCOMPARE(augmentOpAmount(AugmentOp::ShearX, 30, 28), 0.3);
    QCOMPARE(augmentOpAmount(AugmentOp::ShearX, 30, 28, true), -0.3);
    QCOMPARE(augmentOpAmount(AugmentOp::TranslateY, 30, 331), 150.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Rotate, 10, 28), 10.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Brightness, 30, 28), 1.9);
    QCOMPARE(augmentOpAmount(AugmentOp::Contrast, 30, 28, true), 1.0 - 0.9);
    QCOMPARE(augmentOpAmount(AugmentOp::Sharpness, 0, 28), 1.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Posterize, 0, 28), 8.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Posterize, 15, 28), 6.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Posterize, 30, 28), 4.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Solarize, 0, 28), 255.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Solarize, 30, 28), 0.0);
    QCOMPARE(augmentOpAmount(AugmentOp::Solarize, 30, 28, true), 0.0);  // unsigned: no sign to take
    QCOMPARE(augmentOpAmount(AugmentOp::Equalize, 30, 28), 0.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, augmentOpAmount(AugmentOp::Rotate, 31, 28));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, augmentOpAmount(AugmentOp::Rotate, -1, 28));
}

void TestRandAugment::drawIsUniformSignedAndSeeded()
{
    DataRandom random(5);
    std::map<AugmentOp, int> picked;
    int rotations = 0, anticlockwise = 0;
    const int draws = 14000;
    for (const AugmentStep& step : drawRandAugment(draws, 30, 28, random)) {
        ++picked[step.op];
        if (step.op == AugmentOp::Rotate) {
            ++rotations;
            anticlockwise += step.amount > 0.0;
            QCOMPARE(std::abs(step.amount), 30.0);
        }
    }
    QCOMPARE(picked.size(), std::size_t{14});
    for (const auto& [op, count] : picked)
        QVERIFY2(count > 850 && count < 1150, augmentOpInfo(op).name);  // 1000 expected, sd about 30
    QVERIFY(anticlockwise > rotations * 0.4 && anticlockwise < rotations * 0.6);

    DataRandom a(9), b(9), c(10);
    const Image image = ramp();
    const Image once = randAugment(image, 2, 9, a);
    QCOMPARE(randAugment(image, 2, 9, b).pixels, once.pixels);
    bool differs = false;
    for (int i = 0; i < 5 && !differs; ++i)
        differs = randAugment(image, 2, 9, c).pixels != once.pixels;
    QVERIFY(differs);
    DataRandom d(9);
    QCOMPARE(randAugment(image, 0, 9, d).pixels, image.pixels);
    QCOMPARE(drawRandAugment(0, 9, 4, d).size(), std::size_t{0});
}

void TestRandAugment::batchesFollowTheirSeed()
{
    // Grey 8x8 pictures with a bright square, so that most operations change them.
    const ImageFormat format{8, 1};
    std::vector<Example> examples;
    for (int b = 0; b < 8; ++b) {
        Example example;
        example.pixels.assign(64, 30);
        for (int y = 2; y < 5; ++y)
            for (int x = 2 + b % 3; x < 5 + b % 3; ++x)
                example.pixels[static_cast<std::size_t>(y * 8 + x)] = 220;
        example.label = b % 2;
        examples.push_back(example);
    }
    const ImageStats stats{{0.5}, {0.25}, 1};
    ImageAugmentation withRandAugment{0, false, 11};
    withRandAugment.randAugment = 2;
    withRandAugment.randAugmentMagnitude = 20;
    const ImageAugmentation without{0, false, 11};
    const Batch first = makeImageBatch(examples, format, stats, &withRandAugment);
    QVERIFY(torch::equal(first.pixels, makeImageBatch(examples, format, stats, &withRandAugment).pixels));
    QVERIFY(!torch::equal(first.pixels, makeImageBatch(examples, format, stats, &without).pixels));
    QVERIFY(torch::equal(makeImageBatch(examples, format, stats, &without).pixels,
                         makeImageBatch(examples, format, stats).pixels));  // crops, flips and RandAugment off
}

QTEST_APPLESS_MAIN(TestRandAugment)
#include "tst_randaugment.moc"
