// defines: CostPart, CostBreakdown: the model's parameters and forward FLOPs by
// part (embeddings, attention, experts, ...), what `widelab-cli params` prints
#pragma once

#include "ConfigTypes.h"

#include <QList>
#include <QString>
#include <QWidget>

class QLabel;
class QTableWidget;

namespace widelab {

class CostBreakdown : public QWidget {
    Q_OBJECT

public:
    explicit CostBreakdown(QWidget* parent = nullptr);

    // The parts in order and their total (CostPart: parameters stored, active
    // for one token and applied on its way up, and forward FLOPs per token; see
    // docs/accounting.md). Parts without parameters are left out, as the CLI
    // does. An empty list shows that nothing is computed yet.
    void setParts(const QList<CostPart>& parts, const CostPart& total);
    // The same from the panel's cost summary.
    void setCost(const CostSummary& cost);
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
