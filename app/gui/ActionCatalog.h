// defines: widelab::ActionSpec, actionCatalog, actionSpec, shortcutTableMarkdown:
// every command of the main window with its menu text, key and what it does,
// written once. MainWindow builds its actions (and the panels' toggles) from it,
// Help > Keyboard Shortcuts lists it, and docs/desktop.md's table is its Markdown
// (`widelab --shortcuts` prints it; tst_desktop_window checks the two agree).
#pragma once

#include <QKeySequence>
#include <QList>
#include <QString>

namespace widelab {

struct ActionSpec {
    QString name;         // the QAction's objectName
    QString text;         // the menu's text, with its & mnemonic
    QKeySequence key;     // empty: none
    QString description;  // what it does, a line: the action's tooltip and the sheet's third column
};

// In the order the menus and the sheet list them.
QList<ActionSpec> actionCatalog();
// The entry named `name`; a default ActionSpec (empty name) for an unknown one.
ActionSpec actionSpec(const QString& name);
// The text without its & mnemonic and trailing "...": "Open Configuration".
QString plainActionText(const ActionSpec& spec);
// The keyed entries as a Markdown table (Action | Key | What it does), one row each.
QString shortcutTableMarkdown();

}  // namespace widelab
