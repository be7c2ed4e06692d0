// defines: widelab::ConfigDiffDialog, two configurations side by side: the keys
// whose values differ (the app computes them with core's configurationDiff), a
// summary line, and Copy (the table as tab-separated text)
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

class QTableWidget;

namespace widelab {

class ConfigDiffDialog : public QDialog {
    Q_OBJECT

public:
    struct Row {
        QString key;  // dotted: "model.heads"
        QString a;    // the value as JSON text; empty when that side lacks the key
        QString b;
    };

    ConfigDiffDialog(const QList<Row>& rows, const QString& titleA, const QString& titleB, QWidget* parent = nullptr);

    int rowCount() const;
    QString cell(int row, int column) const;  // column 0 the key, 1 A, 2 B, as shown
    // The table as text: a header line, then a line a key; tab-separated.
    QString tableText() const;

private:
    QTableWidget* m_table = nullptr;
};

}  // namespace widelab
