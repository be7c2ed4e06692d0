// defines: widelab::StudiesView, the Studies tab: pick a built-in study (or build
// one from the configuration), start, stop or continue it, watch its members'
// curves overlaid (one colour per axis point), read its results table as it
// fills, and chart a measure against an axis, parameters or latency with the
// papers' figures beside it. It draws what it is handed; app/ runs the study.
#pragma once

#include "curves/CurvePoint.h"
#include "StudyChart.h"
#include "StudyTypes.h"

#include <QHash>
#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QToolButton;

namespace widelab {

class CurvePlot;

// What Start asks for: a built-in study with the quick-look overrides.
struct StudyStartOptions {
    QString builtin;  // a built-in study's name
    int steps = 0;    // 0: the study's own
    int seeds = 0;    // 0: the study's own
    int jobs = 1;     // members trained at once
};

class StudiesView : public QWidget {
    Q_OBJECT

public:
    explicit StudiesView(QWidget* parent = nullptr);

    // The built-in studies: name (the file's) -> title and description, in order.
    struct Builtin {
        QString name, title, description;
    };
    void setBuiltins(const QVector<Builtin>& builtins);
    void selectBuiltin(const QString& name);
    QString selectedBuiltin() const;

    // The study shown: table, chart, notes. The member curves stay (appendCurve adds to them).
    void setStudy(const StudyData& study);
    const StudyData& study() const { return m_study; }
    void clearCurves();
    void clearCurve(const QString& member);  // e.g. before reloading it from its run directory
    // A member's points of a metric ("loss", "accuracy", "validation_loss", "validation_accuracy").
    void appendCurve(const QString& member, const QString& metric, const QVector<CurvePoint>& points);
    // A running member's step: its status cell, without redrawing the rest.
    void setMemberProgress(const QString& member, qint64 step, qint64 totalSteps);
    // Running: Start and Continue off, Stop on. `progress`: the status line (members done, running, left, time left).
    void setRunning(bool running);
    bool running() const { return m_running; }
    // Stop was asked for: Stop is off until the study has stopped (setRunning(false)).
    void setStopping();
    // Continue would do something: a study is shown, idle, with members not finished.
    bool canContinue() const;
    void setProgress(int done, int total, const QString& text);
    void setDefaultJobs(int jobs);

    StudyStartOptions startOptions() const;
    StudyChart* chart() const { return m_chart; }
    CurvePlot* curves() const { return m_curves; }
    QTableWidget* table() const { return m_table; }
    QLabel* notes() const { return m_notes; }
    QString curveMetric() const;
    void setCurveMetric(const QString& metric);

public Q_SLOTS:
    void exportChartWithDialog();
    void exportTableWithDialog();
    bool exportTableCsv(const QString& path, QString* error = nullptr) const;

Q_SIGNALS:
    void startRequested(const widelab::StudyStartOptions& options);
    void continueRequested();
    void stopRequested();
    void buildRequested();                     // "New from Configuration..."
    void openRequested();                      // "Open Study..."
    void memberActivated(const QString& runDirectory);
    // What Start, Continue and Stop can do has changed (the window's actions follow).
    void buttonsChanged();

private:
    void fillTable();
    void fillNotes();
    void fillChartControls();
    void redrawCurves();
    void updateButtons();
    QColor pointColor(const QString& point) const;
    // A member in the curves' legend: its axis values and seed ("6x8 · seed 2").
    QString memberLabel(const StudyMemberRow& member) const;

    StudyData m_study;
    bool m_running = false;
    // Every member's points by metric, so that the metric shown can change.
    QHash<QString, QHash<QString, QVector<CurvePoint>>> m_memberCurves;

    QComboBox* m_builtins = nullptr;
    QSpinBox* m_steps = nullptr;
    QSpinBox* m_seeds = nullptr;
    QSpinBox* m_jobs = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_continue = nullptr;
    QPushButton* m_stop = nullptr;
    QPushButton* m_build = nullptr;
    QPushButton* m_open = nullptr;
    bool m_stopping = false;
    QLabel* m_title = nullptr;
    QStackedWidget* m_body = nullptr;  // a hint until a study is open, then its charts and table
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QComboBox* m_curveMetric = nullptr;
    CurvePlot* m_curves = nullptr;
    QComboBox* m_chartKind = nullptr;
    QComboBox* m_chartMeasure = nullptr;
    QComboBox* m_chartAxis = nullptr;
    StudyChart* m_chart = nullptr;
    QLabel* m_notes = nullptr;
    QTableWidget* m_table = nullptr;
    QString m_exportDirectory;
};

}  // namespace widelab

Q_DECLARE_METATYPE(widelab::StudyStartOptions)
