#include "RecentMenu.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>
#include <QStringList>

namespace widelab {
namespace {

constexpr int kRecentLimit = 10;

}  // namespace

RecentMenu::RecentMenu(QMenu* menu, QObject* parent) : QObject(parent), m_menu(menu)
{
    rebuild();
}

void RecentMenu::remember(const QString& path)
{
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recent")).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    while (recent.size() > kRecentLimit)
        recent.removeLast();
    settings.setValue(QStringLiteral("recent"), recent);
    rebuild();
}

void RecentMenu::rebuild()
{
    m_menu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recent")).toStringList();
    int index = 1;
    for (const QString& path : recent) {
        const bool run = QFileInfo(path).isDir();
        QAction* open = m_menu->addAction(
            QStringLiteral("&%1 %2%3").arg(index % 10).arg(QDir::toNativeSeparators(path), run ? tr(" (run)") : QString()));
        connect(open, &QAction::triggered, this, [this, path, run] { Q_EMIT chosen(path, run); });
        ++index;
    }
    m_menu->setEnabled(!recent.isEmpty());
}

}  // namespace widelab
