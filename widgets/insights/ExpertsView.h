// defines: widelab::ExpertsView, expert load and routing: the share of tokens
// each expert of each block receives, now and over time, dropped tokens, dead
// experts and imbalance flagged, and which expert each probe token (or each
// patch of a probe image, over the picture) goes to; beside it, router health
// (RouterHealthPanel) with its alarms and what each expert receives
// (ExpertSpecialisationPanel)
#pragma once

#include "InsightPage.h"

#include <optional>

class QComboBox;
class QLabel;
class QScrollArea;
class QStackedWidget;
class QTabWidget;
class QTableWidget;

namespace widelab {

class ExpertSpecialisationPanel;
class MatrixView;
class PatchExpertGrid;
class RouterHealthPanel;

class ExpertsView : public InsightPage {
    Q_OBJECT
public:
    // A block is flagged when its busiest expert gets more than this many times its fair share.
    static constexpr double kImbalance = 2.0;

    explicit ExpertsView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    // -1: the mean over blocks.
    void setTimeBlock(int block);
    MatrixView* shareMap() const { return m_share; }
    MatrixView* timeMap() const { return m_overTime; }
    MatrixView* routingMap() const { return m_routing; }
    // An image probe's routing: the expert of each patch over the picture, per block.
    PatchExpertGrid* patchRouting() const { return m_patches; }
    QLabel* patchLegend() const { return m_patchLegend; }
    bool showsPatches() const;
    QTableWidget* table() const { return m_table; }
    // The flags at the shown step, one line each.
    QStringList warnings() const { return m_warnings; }

    // The page's parts: load (the maps above), router health, specialisation.
    enum class Section { Load, Health, Specialisation };
    void setSection(Section section);
    Section section() const;
    RouterHealthPanel* health() const { return m_health; }
    ExpertSpecialisationPanel* specialisation() const { return m_specialisation; }
    // The routing alarms in force at the shown step, and the badge that names them
    // (hidden when none is in force).
    QVector<HealthEvent> activeAlarms() const;
    QLabel* alarmBadge() const { return m_alarmBadge; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void fitPatches();  // the image grid's tiles as large as its area allows
    void showShare(const TrainingSnapshot& state, const QVector<HealthEvent>& active);
    void showOverTime(const InsightHistory& history, qint64 upTo);
    void showTable(const TrainingSnapshot& state);
    void showRouting(const ProbeResult* capture, int experts);

    QWidget* m_body = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_flags = nullptr;
    QLabel* m_alarmBadge = nullptr;
    QTabWidget* m_sections = nullptr;
    RouterHealthPanel* m_health = nullptr;
    ExpertSpecialisationPanel* m_specialisation = nullptr;
    QComboBox* m_timeBlock = nullptr;
    MatrixView* m_share = nullptr;
    MatrixView* m_overTime = nullptr;
    MatrixView* m_routing = nullptr;
    QStackedWidget* m_routingStack = nullptr;  // the token matrix, or the image grid
    QWidget* m_patchBox = nullptr;
    QLabel* m_patchLegend = nullptr;
    PatchExpertGrid* m_patches = nullptr;
    QScrollArea* m_patchArea = nullptr;
    QTableWidget* m_table = nullptr;
    QStringList m_warnings;
    std::optional<TrainingSnapshot> m_state;  // a copy: the history may move its states
};

}  // namespace widelab
