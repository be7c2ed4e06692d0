// defines: widelab::RouterHealthPanel, the Experts page's router health: per
// routing block at the shown step the load-balance violation, effective experts,
// z-loss, dead experts and top-1 consistency (cells coloured good or bad), one
// chosen measure over training per block, and the routing alarms raised so far
#pragma once

#include "InsightHistory.h"

#include <QWidget>

class QComboBox;
class QTableWidget;

namespace widelab {

class AlarmList;
class CurvePlot;

class RouterHealthPanel : public QWidget {
    Q_OBJECT
public:
    enum class Measure { MaxViolation, EffectiveExperts, ZLoss, DeadFraction, Consistency };
    // The routing alarms this panel lists.
    static QStringList alarmKinds();
    // Bounds of the colours: MaxVio above kBadViolation (the busiest expert's mean
    // probability over twice a fair one), exp(H)/E under kBadEffective are bad.
    static constexpr double kGoodViolation = 0.5, kBadViolation = 1.0;
    static constexpr double kGoodEffective = 0.8, kBadEffective = 0.5;

    explicit RouterHealthPanel(QWidget* parent = nullptr);

    // The table at `state` (the routed state shown), the chart of `history` with
    // its cursor at state.step, the alarms up to `upTo` (< 0: all).
    void show(const QString& runId, const InsightHistory& history, const TrainingSnapshot& state, qint64 upTo);

    void setMeasure(Measure measure);
    Measure measure() const;
    static QString measureName(Measure measure);
    static QString measureTip(Measure measure);
    // The measure's value in a load; NaN where it has none (consistency of the first block).
    static double value(const RoutingStats& load, Measure measure);
    // A measure as the table writes it: "0.250", "12.5%", "–".
    static QString format(const RoutingStats& load, Measure measure);

    QTableWidget* table() const { return m_table; }
    CurvePlot* plot() const { return m_plot; }
    AlarmList* alarms() const { return m_alarms; }
    // The health numbers of the shown state, one row per block and measure.
    QByteArray csv(const QString& runLabel) const;

Q_SIGNALS:
    void measureChanged();  // the chart wants redrawing: the page calls show() again

private:
    void showTable(const TrainingSnapshot& state, const QVector<HealthEvent>& active);
    void showPlot(const InsightHistory& history);

    QTableWidget* m_table = nullptr;
    QComboBox* m_measure = nullptr;
    CurvePlot* m_plot = nullptr;
    AlarmList* m_alarms = nullptr;
    TrainingSnapshot m_state;
    QString m_plotKey;
};

}  // namespace widelab
