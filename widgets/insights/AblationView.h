// defines: widelab::AblationView, the ablation page: switch every head, expert,
// path or sublayer off in turn (zeroed, or replaced by its mean) and see what
// that does to validation loss and accuracy (a heatmap of layers x parts, a
// sorted table) and to the probe's prediction. The app runs the scan on a worker
// thread: the page asks for it (scanRequested) and shows its progress and result,
// kept per run.
#pragma once

#include "AblationTypes.h"
#include "InsightPage.h"

#include <QHash>

#include <optional>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace widelab {

class MatrixView;
class PredictionBars;

class AblationView : public InsightPage {
    Q_OBJECT
public:
    explicit AblationView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    // The shown run's scan, one line per part in scan order:
    //   layer,index,label,loss,loss_delta,accuracy_delta  (layer and index 1-based)
    QByteArray csv() const override;

    // The kinds of part a model has: heads and sublayers always, experts and
    // paths when the architecture (or, unknown, the measurements) says so.
    static QStringList kindsOf(const InsightHistory* history);
    QStringList offeredKinds() const;  // those the kind box offers now
    void setKind(const QString& kind);
    QString kind() const;
    void setMode(const QString& mode);  // "zero" or "mean"
    QString mode() const;

    const AblationScan* scanOf(const QString& runId) const;  // nullptr: none yet
    bool isBusy(const QString& runId) const;
    void forgetRun(const QString& runId);

    // Shows the ablated prediction of the scan's row `index` (scan order); -1: none.
    void selectRow(int index);
    int selectedRow() const { return m_selected; }

    QPushButton* scanButton() const { return m_scan; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* baselineLabel() const { return m_baseline; }
    QLabel* statusLabel() const { return m_status; }
    MatrixView* heatmap() const { return m_map; }
    MatrixView* comparisonHeatmap() const { return m_compareMap; }
    QTableWidget* table() const { return m_table; }
    PredictionBars* baselinePrediction() const { return m_baselineBars; }
    PredictionBars* ablatedPrediction() const { return m_ablatedBars; }
    QLabel* topClassLabel() const { return m_topClass; }
    // The heatmap cell (x = column, y = row) of the scan's row `index`, (-1, -1) when none.
    QPoint cellOf(int index) const;

public Q_SLOTS:
    // What the app reports about a run's scan.
    void setProgress(const QString& runId, int done, int total, const QString& current);
    void setScan(const QString& runId, const widelab::AblationScan& scan);
    void setFailed(const QString& runId, const QString& message);
    void setBusy(const QString& runId, bool busy);

Q_SIGNALS:
    // Scan `runId`'s model switching off each part of `kind` ("heads", "experts",
    // "paths", "sublayers") in `mode` ("zero", "mean").
    void scanRequested(const QString& runId, const QString& kind, const QString& mode);
    void cancelRequested(const QString& runId);

private:
    struct RunScan {
        std::optional<AblationScan> scan;
        bool busy = false;
        int done = 0, total = 0;
        QString current;
        QString failure;
        quint64 revision = 0;
    };
    // Rows of a scan's heatmap: the layers its rows name, ascending.
    static QVector<int> layersOf(const AblationScan& scan);
    static int columnsOf(const AblationScan& scan);
    void changed(const QString& runId);  // redraws when the run is shown
    void updateControls();
    void showScan();
    void showMap(MatrixView* map, const InsightSource& source, const AblationScan* scan, bool primary);
    void showTable(const AblationScan& scan);
    void showPrediction();

    QHash<QString, RunScan> m_runs;
    QComboBox* m_kind = nullptr;
    QComboBox* m_mode = nullptr;
    QPushButton* m_scan = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QWidget* m_body = nullptr;
    QLabel* m_baseline = nullptr;
    MatrixView* m_map = nullptr;
    MatrixView* m_compareMap = nullptr;
    QTableWidget* m_table = nullptr;
    QWidget* m_predictionBox = nullptr;
    PredictionBars* m_baselineBars = nullptr;
    PredictionBars* m_ablatedBars = nullptr;
    QLabel* m_topClass = nullptr;
    QString m_shownKey;
    int m_selected = -1;
};

}  // namespace widelab
