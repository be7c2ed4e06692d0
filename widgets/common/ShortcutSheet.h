// defines: widelab::ShortcutSheet, the Help > Keyboard Shortcuts window: every
// shortcut it is handed (action, key, what it does) in a table that a typed
// word filters
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

class QLineEdit;
class QTableWidget;

namespace widelab {

class ShortcutSheet : public QDialog {
    Q_OBJECT

public:
    struct Row {
        QString action;       // "Open Configuration"
        QString key;          // as the platform writes it: "Ctrl+O"
        QString description;  // what it does
    };

    explicit ShortcutSheet(const QList<Row>& rows, QWidget* parent = nullptr);

    // Shows the rows whose action, key or description holds `text` (any case); all when empty.
    void setFilter(const QString& text);
    int visibleRows() const;

private:
    QLineEdit* m_filter = nullptr;
    QTableWidget* m_table = nullptr;
};

}  // namespace widelab
