#include "HelpWindows.h"

#include "ActionCatalog.h"
#include "common/DocumentationBrowser.h"
#include "common/ShortcutSheet.h"
#include "config/ResourceFolder.h"

#include <QStringList>
#include <QWidget>

namespace widelab {
namespace {

void raise(QWidget* window)
{
    window->show();
    window->raise();
    window->activateWindow();
}

}  // namespace

HelpWindows::HelpWindows(QWidget* window)
    : QObject(window)
    , m_window(window)
{
}

DocumentationBrowser* HelpWindows::documentation() const { return m_documentation; }

ShortcutSheet* HelpWindows::shortcuts() const { return m_shortcuts; }

void HelpWindows::showDocumentation()
{
    if (!m_documentation) {
        std::vector<std::filesystem::path> lookedIn;
        const std::filesystem::path folder = documentationFolder(&lookedIn);
        if (folder.empty()) {
            QStringList places;
            for (const auto& place : lookedIn)
                places << QString::fromStdString(place.string());
            Q_EMIT problem(tr("No documentation"),
                           tr("WideLab's documentation (README.md and docs/) is in none of: %1. The package installs "
                              "it in /usr/share/doc/widelab (a system set to leave out /usr/share/doc has none); "
                              "WIDELAB_DOCS names another folder.")
                               .arg(places.join(QStringLiteral(", "))));
            return;
        }
        m_documentation = new DocumentationBrowser(QString::fromStdString(folder.string()), m_window);
        m_documentation->setAttribute(Qt::WA_DeleteOnClose);
    }
    raise(m_documentation);
}

void HelpWindows::showShortcuts()
{
    if (!m_shortcuts) {
        QList<ShortcutSheet::Row> rows;
        for (const ActionSpec& spec : actionCatalog())
            if (!spec.key.isEmpty())
                rows.push_back({plainActionText(spec), spec.key.toString(QKeySequence::NativeText), spec.description});
        m_shortcuts = new ShortcutSheet(rows, m_window);
        m_shortcuts->setAttribute(Qt::WA_DeleteOnClose);
    }
    raise(m_shortcuts);
}

}  // namespace widelab
