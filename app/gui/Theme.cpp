#include "Theme.h"

#include <QApplication>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

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
    const QString style = theme == Theme::System ? systemLook()->styleName : QStringLiteral("fusion");
    if (QApplication::style()->name().compare(style, Qt::CaseInsensitive) != 0)
        QApplication::setStyle(QStyleFactory::create(style));
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
