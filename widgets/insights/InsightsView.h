// defines: widelab::InsightsView, the interpretability views under one bar: the
// run to inspect and one to compare with, the probe text, a step scrubber that
// follows training live or freezes on a step, and export of what is shown
#pragma once

#include "InsightHistory.h"

#include <QHash>
#include <QTimer>
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTabWidget;
class QToolButton;

namespace widelab {

class AblationView;
class AttentionView;
class ExpertsView;
class HeadRolesView;
class InsightPage;
class LayerNormView;
class LogitLensView;
class PathsView;

// The app hands it each run's InsightHistory and says when one changed; the
// view redraws its visible page at most every kRefreshMs. Live (the default),
// the pages show each run's newest step; moving the scrubber freezes them on a
// step until Live is ticked again, or another run is chosen to inspect.
class InsightsView : public QWidget {
    Q_OBJECT
public:
    enum class Page { Attention, Experts, LayerNorm, Paths, Heads, LogitLens, Ablation };
    static constexpr int kRefreshMs = 250;

    explicit InsightsView(QWidget* parent = nullptr);
    ~InsightsView() override;

    void addRun(const QString& runId, const QString& label, std::shared_ptr<const InsightHistory> history);
    void removeRun(const QString& runId);
    QStringList runs() const;
    void setCurrentRun(const QString& runId);
    QString currentRun() const;
    void setComparisonRun(const QString& runId);  // empty: none
    QString comparisonRun() const;
    // The run's history changed (new data): redraw soon if it is shown.
    void historyChanged(const QString& runId);

    void setPage(Page page);
    Page page() const;
    InsightPage* currentPage() const;
    AttentionView* attention() const { return m_attention; }
    ExpertsView* experts() const { return m_experts; }
    LayerNormView* layerNorm() const { return m_layerNorm; }
    PathsView* paths() const { return m_paths; }
    HeadRolesView* headRoles() const { return m_headRoles; }
    LogitLensView* logitLens() const { return m_logitLens; }
    // The app connects its scanRequested / cancelRequested and reports to its slots.
    AblationView* ablation() const { return m_ablation; }

    void setLive(bool live);
    bool isLive() const;
    void setStep(qint64 step);  // freezes on the newest recorded step at or before `step`
    qint64 shownStep() const;   // -1 when live
    QVector<qint64> scrubberSteps() const { return m_steps; }
    void setProbe(const QString& text);
    QString probe() const;

    // Export of the visible page: PNG, PDF or SVG by suffix, or its numbers as CSV.
    bool exportImage(const QString& path, QString* error = nullptr);
    bool exportCsv(const QString& path, QString* error = nullptr);

public Q_SLOTS:
    void refreshNow();
    void stepBy(int stops);  // moves the scrubber by stops (negative: back), freezing
    void askForProbe();      // asks for a text and requests it for the shown runs
    void exportImageWithDialog();
    void exportCsvWithDialog();

Q_SIGNALS:
    // Inspect `text` with each of these runs (the shown one and the one compared).
    void probeRequested(const QStringList& runIds, const QString& text);
    void currentRunChanged(const QString& runId);
    void liveChanged(bool live);
    // The step the pages show changed (the scrubber moved, Live toggled, another
    // run chosen): the frozen step, or -1 while live. For a step cursor on the
    // training curves (CurvesView::setCursorStep).
    void shownStepChanged(qint64 step);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void rebuildRunCombos();
    void updateProbes();
    void updateScrubber();
    void scheduleRefresh();

    struct Run {
        QString label;
        std::shared_ptr<const InsightHistory> history;
    };
    QHash<QString, Run> m_runs;
    QHash<QString, QStringList> m_asked;  // per run: texts asked for, shown until captured
    QStringList m_order;
    QComboBox* m_run = nullptr;
    QComboBox* m_compare = nullptr;
    QComboBox* m_probe = nullptr;
    QToolButton* m_addProbe = nullptr;
    QSlider* m_scrubber = nullptr;
    QLabel* m_stepLabel = nullptr;
    QCheckBox* m_live = nullptr;
    QToolButton* m_export = nullptr;
    QTabWidget* m_tabs = nullptr;
    AttentionView* m_attention = nullptr;
    ExpertsView* m_experts = nullptr;
    LayerNormView* m_layerNorm = nullptr;
    PathsView* m_paths = nullptr;
    HeadRolesView* m_headRoles = nullptr;
    LogitLensView* m_logitLens = nullptr;
    AblationView* m_ablation = nullptr;
    QVector<qint64> m_steps;
    qint64 m_frozenStep = -1;
    qint64 m_announcedStep = -1;  // the last shownStepChanged
    QTimer m_refreshTimer;
    QString m_exportDirectory;
};

}  // namespace widelab
