// defines: CostPart, CostBreakdown: the model's parameters and forward FLOPs by
// part (embeddings, attention, experts, ...), what `widelab-cli params` prints
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

class QLabel;
class QTableWidget;

namespace widelab {

// One part of the model (see docs/accounting.md): parameters stored, active for
// one token and applied on its way up, and the part's forward FLOPs per token.
struct CostPart {
    QString part;
    qint64 stored = 0;
    qint64 active = 0;
    qint64 applied = 0;
    double flopsPerToken = 0;
};

class CostBreakdown : public QWidget {
    Q_OBJECT

public:
    explicit CostBreakdown(QWidget* parent = nullptr);

    // The parts in order and their total. Parts without parameters are left out,
    // as the CLI does. An empty list shows that nothing is computed yet.
    void setParts(const QList<CostPart>& parts, const CostPart& total);
    // Stale: the parts belong to the last valid model, not to the form as it is.
    void setStale(bool stale);
    bool isStale() const { return m_stale; }

    QTableWidget* table() const { return m_table; }
    // The table as tab-separated text with a header line (what Copy puts on the clipboard).
    QString toTsv() const;

private:
    void copy() const;

    QTableWidget* m_table = nullptr;
    QLabel* m_note = nullptr;
    bool m_stale = false;
};

}  // namespace widelab
