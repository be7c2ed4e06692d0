#include "FigureLayout.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>

#include <cmath>
#include <iterator>

namespace widelab {
namespace {

// The dialog's ranges: a thumbnail to a poster panel.
constexpr double kMinInches = 1.0, kMaxInches = 20.0;
constexpr int kMinDpi = 72, kMaxDpi = 1200;
constexpr int kMinFont = 5, kMaxFont = 16;

struct Preset {
    const char* name;
    double width, height;
};
// Column widths of the common two-column templates (IEEE, ACM, NeurIPS-like).
constexpr Preset kPresets[] = {
    {QT_TRANSLATE_NOOP("widelab::FigureLayout", "One column (3.5 × 2.6 in)"), 3.5, 2.6},
    {QT_TRANSLATE_NOOP("widelab::FigureLayout", "Two columns (7 × 3.5 in)"), 7.0, 3.5},
    {QT_TRANSLATE_NOOP("widelab::FigureLayout", "Slide (10 × 5.6 in)"), 10.0, 5.6},
};

QString tr(const char* text) { return QCoreApplication::translate("widelab::FigureLayout", text); }

}  // namespace

QSize FigureLayout::points() const
{
    return {static_cast<int>(std::lround(widthInches * 72)), static_cast<int>(std::lround(heightInches * 72))};
}

QSize FigureLayout::pixels() const
{
    return {static_cast<int>(std::lround(widthInches * dpi)), static_cast<int>(std::lround(heightInches * dpi))};
}

FigureLayout FigureLayout::remembered()
{
    const QSettings settings;
    const FigureLayout defaults;
    FigureLayout layout;
    auto inches = [&](const char* key, double fallback) {
        const double v = settings.value(QLatin1String(key), fallback).toDouble();
        return v >= kMinInches && v <= kMaxInches ? v : fallback;
    };
    auto whole = [&](const char* key, int fallback, int lo, int hi) {
        const int v = settings.value(QLatin1String(key), fallback).toInt();
        return v >= lo && v <= hi ? v : fallback;
    };
    layout.widthInches = inches("export/figureWidthInches", defaults.widthInches);
    layout.heightInches = inches("export/figureHeightInches", defaults.heightInches);
    layout.dpi = whole("export/figureDpi", defaults.dpi, kMinDpi, kMaxDpi);
    layout.fontPoints = whole("export/figureFontPoints", defaults.fontPoints, kMinFont, kMaxFont);
    return layout;
}

void FigureLayout::remember() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("export/figureWidthInches"), widthInches);
    settings.setValue(QStringLiteral("export/figureHeightInches"), heightInches);
    settings.setValue(QStringLiteral("export/figureDpi"), dpi);
    settings.setValue(QStringLiteral("export/figureFontPoints"), fontPoints);
}

std::optional<FigureLayout> askFigureLayout(QWidget* parent, const FigureLayout& initial)
{
    QDialog dialog(parent);
    dialog.setObjectName(QStringLiteral("figureLayoutDialog"));
    dialog.setWindowTitle(tr("Figure Size"));
    auto* preset = new QComboBox(&dialog);
    preset->setObjectName(QStringLiteral("figurePreset"));
    for (const Preset& p : kPresets)
        preset->addItem(tr(p.name));
    preset->addItem(tr("Custom"));
    auto inchBox = [&](double value) {
        auto* box = new QDoubleSpinBox(&dialog);
        box->setRange(kMinInches, kMaxInches);
        box->setDecimals(2);
        box->setSingleStep(0.1);
        box->setSuffix(tr(" in"));
        box->setValue(value);
        return box;
    };
    auto* width = inchBox(initial.widthInches);
    width->setObjectName(QStringLiteral("figureWidth"));
    auto* height = inchBox(initial.heightInches);
    height->setObjectName(QStringLiteral("figureHeight"));
    auto* dpi = new QSpinBox(&dialog);
    dpi->setObjectName(QStringLiteral("figureDpi"));
    dpi->setRange(kMinDpi, kMaxDpi);
    dpi->setSingleStep(50);
    dpi->setSuffix(tr(" dpi"));
    dpi->setValue(initial.dpi);
    auto* font = new QSpinBox(&dialog);
    font->setObjectName(QStringLiteral("figureFont"));
    font->setRange(kMinFont, kMaxFont);
    font->setSuffix(tr(" pt"));
    font->setValue(initial.fontPoints);
    auto* pixels = new QLabel(&dialog);

    auto current = [&] {
        FigureLayout layout;
        layout.widthInches = width->value();
        layout.heightInches = height->value();
        layout.dpi = dpi->value();
        layout.fontPoints = font->value();
        return layout;
    };
    // The preset that matches the size shown, else Custom; choosing one sets the size.
    auto matchPreset = [&] {
        int match = static_cast<int>(std::size(kPresets));
        for (int i = 0; i < static_cast<int>(std::size(kPresets)); ++i)
            if (std::abs(width->value() - kPresets[i].width) < 1e-6 && std::abs(height->value() - kPresets[i].height) < 1e-6)
                match = i;
        const QSignalBlocker block(preset);
        preset->setCurrentIndex(match);
        const QSize px = current().pixels();
        pixels->setText(tr("%1 × %2 pixels in a PNG").arg(px.width()).arg(px.height()));
    };
    QObject::connect(preset, qOverload<int>(&QComboBox::currentIndexChanged), &dialog, [&](int index) {
        if (index < 0 || index >= static_cast<int>(std::size(kPresets)))
            return;
        width->setValue(kPresets[index].width);
        height->setValue(kPresets[index].height);
    });
    for (QDoubleSpinBox* box : {width, height})
        QObject::connect(box, qOverload<double>(&QDoubleSpinBox::valueChanged), &dialog, matchPreset);
    QObject::connect(dpi, qOverload<int>(&QSpinBox::valueChanged), &dialog, matchPreset);
    matchPreset();

    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Size"), preset);
    form->addRow(tr("Width"), width);
    form->addRow(tr("Height"), height);
    form->addRow(tr("Resolution"), dpi);
    form->addRow(tr("Type size"), font);
    form->addRow(QString(), pixels);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted)
        return std::nullopt;
    return current();
}

}  // namespace widelab
