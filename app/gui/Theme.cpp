#include "Theme.h"

#include <QApplication>
#include <QProxyStyle>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleOption>

#include <optional>

namespace widelab {
namespace {

struct SystemLook {
    QPalette palette;
    QString styleName;
};

std::optional<SystemLook>& systemLook()
{
    static std::optional<SystemLook> look;
    return look;
}

Theme& current()
{
    static Theme theme = Theme::System;
    return theme;
}

// Fusion, but for an unticked box's frame on a dark palette: Fusion draws it in
// the window colour darkened, which on a dark base all but vanishes (the
// Workspace's Shown column, the Runs panel's ticks). There the frame takes the
// dimmed text's grey instead.
class ThemeStyle : public QProxyStyle {
public:
    ThemeStyle() : QProxyStyle(QStyleFactory::create(QStringLiteral("fusion"))) {}

    void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                       const QWidget* widget) const override
    {
        if (element != PE_IndicatorCheckBox || !option || !themeIsDark(option->palette)) {
            QProxyStyle::drawPrimitive(element, option, painter, widget);
            return;
        }
        QStyleOptionButton box;
        if (const auto* button = qstyleoption_cast<const QStyleOptionButton*>(option))
            box = *button;
        else
            box.QStyleOption::operator=(*option);
        // Fusion's frame is the window colour darkened by 140 %: this one comes out as the dimmed text.
        box.palette.setColor(QPalette::Window, box.palette.color(QPalette::Disabled, QPalette::Text).lighter(140));
        QProxyStyle::drawPrimitive(element, &box, painter, widget);
    }
};

// Qt's Fusion palette darkened: windows and bases near black, text near white,
// the highlight a blue that keeps white text readable; disabled text dimmed.
QPalette darkPalette()
{
    const QColor window(0x2b, 0x2d, 0x30), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
    const QColor button(0x35, 0x37, 0x3b), dim(0x80, 0x82, 0x86), link(0x6c, 0xb4, 0xff);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, dim);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, button.lighter(150));
    p.setColor(QPalette::Midlight, button.lighter(125));
    p.setColor(QPalette::Mid, button.darker(125));
    p.setColor(QPalette::Dark, base.darker(150));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xb8));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, link);
    p.setColor(QPalette::LinkVisited, link.darker(120));
    for (const auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dim);
    p.setColor(QPalette::Disabled, QPalette::Highlight, button);
    return p;
}

}  // namespace

void applyTheme(Theme theme)
{
    if (!systemLook())
        systemLook() = SystemLook{QApplication::palette(), QApplication::style()->name()};
    current() = theme;
    // The style first (a new style resets the palette), only when it changes.
    const bool ours = dynamic_cast<const ThemeStyle*>(QApplication::style()) != nullptr;
    if (theme != Theme::System && !ours)
        QApplication::setStyle(new ThemeStyle);
    else if (theme == Theme::System
             && (ours || QApplication::style()->name().compare(systemLook()->styleName, Qt::CaseInsensitive) != 0))
        QApplication::setStyle(QStyleFactory::create(systemLook()->styleName));
    if (theme == Theme::System)
        QApplication::setPalette(systemLook()->palette);
    else
        QApplication::setPalette(theme == Theme::Dark ? darkPalette() : QApplication::style()->standardPalette());
}

Theme currentTheme() { return current(); }

QString themeName(Theme theme)
{
    switch (theme) {
    case Theme::Light:
        return QStringLiteral("light");
    case Theme::Dark:
        return QStringLiteral("dark");
    case Theme::System:
        break;
    }
    return QStringLiteral("system");
}

Theme savedTheme()
{
    const QString name = QSettings().value(QStringLiteral("appearance/theme")).toString();
    for (Theme theme : {Theme::Light, Theme::Dark})
        if (name == themeName(theme))
            return theme;
    return Theme::System;
}

void saveTheme(Theme theme) { QSettings().setValue(QStringLiteral("appearance/theme"), themeName(theme)); }

bool themeIsDark(const QPalette& palette)
{
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

}  // namespace widelab
