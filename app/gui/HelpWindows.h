// defines: widelab::HelpWindows, the Help menu's two windows: the bundled
// documentation (found where core's documentationFolder looks) and the sheet of
// keyboard shortcuts (from ActionCatalog), each opened once and raised again
#pragma once

#include <QObject>
#include <QPointer>

class QWidget;

namespace widelab {

class DocumentationBrowser;
class ShortcutSheet;

class HelpWindows : public QObject {
    Q_OBJECT

public:
    explicit HelpWindows(QWidget* window);

    // Opens the documentation at its README, or says where it was looked for.
    void showDocumentation();
    void showShortcuts();

    DocumentationBrowser* documentation() const;  // null until opened, and once closed
    ShortcutSheet* shortcuts() const;             // null until opened, and once closed

Q_SIGNALS:
    void problem(const QString& title, const QString& text);

private:
    QWidget* m_window;
    QPointer<DocumentationBrowser> m_documentation;
    QPointer<ShortcutSheet> m_shortcuts;
};

}  // namespace widelab
