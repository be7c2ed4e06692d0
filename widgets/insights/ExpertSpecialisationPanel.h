// defines: widelab::ExpertSpecialisationPanel, what each expert of one routing
// block receives over the validation sample: its most frequent tokens with their
// counts and, for classification, the class mix of its tokens as a stacked bar
#pragma once

#include "InsightHistory.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QLabel;
class QStackedWidget;
class QTableWidget;

namespace widelab {

class ExpertSpecialisationPanel : public QWidget {
    Q_OBJECT
public:
    static constexpr int kTokensInCell = 8;  // the rest are in the cell's tool tip

    explicit ExpertSpecialisationPanel(QWidget* parent = nullptr);

    // The validation shown (nullptr: none yet; `why` says so) and the alarms in
    // force, whose experts are marked.
    void show(const ValidationInsights* insight, const QVector<HealthEvent>& active, const QString& why);
    void setBlock(int block);  // 0-based, as ExpertIntake::block
    int block() const;

    QTableWidget* table() const { return m_table; }
    QLabel* legend() const { return m_legend; }
    QLabel* emptyLabel() const { return m_empty; }
    // The class shares drawn for `expert` of the chosen block (empty: no classes).
    QVector<double> classShares(int expert) const;
    // The chosen block's numbers: one row per expert and token, and per expert and class.
    QByteArray csv(const QString& runLabel) const;

Q_SIGNALS:
    void blockChanged();

private:
    void showBlock();
    const ExpertIntake* chosen() const;

    QComboBox* m_block = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_empty = nullptr;
    QTableWidget* m_table = nullptr;
    QStackedWidget* m_stack = nullptr;
    std::optional<ValidationInsights> m_insight;
    QVector<HealthEvent> m_active;
};

}  // namespace widelab
