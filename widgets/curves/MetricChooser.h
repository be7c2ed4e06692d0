// defines: widelab::MetricChooser, the dialog that picks which of the runs'
// metrics get a chart of their own beside the fixed ones: every tag the runs
// write (routing per block, expert loads, LayerNorm divergence, path weights,
// memory, step time, validation perplexity, ...), filterable, ticked when charted
#pragma once

#include <QDialog>
#include <QStringList>

class QLabel;
class QLineEdit;
class QListWidget;

namespace widelab {

class MetricChooser : public QDialog {
    Q_OBJECT

public:
    // `available`: the tags the runs have; `charted`: those with a chart now.
    MetricChooser(const QStringList& available, const QStringList& charted, QWidget* parent = nullptr);

    // The ticked tags: those charted before that stay, in their order, then the
    // newly ticked in the list's order.
    QStringList chosen() const;
    void setFilter(const QString& text);
    void setTicked(const QString& tag, bool ticked);
    int visibleCount() const;

private:
    void updateCount();

    QStringList m_charted;
    QLineEdit* m_filter = nullptr;
    QListWidget* m_list = nullptr;
    QLabel* m_count = nullptr;
};

}  // namespace widelab
