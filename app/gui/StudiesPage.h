// defines: StudiesPage: the Studies tab's coordinator: joins the StudiesView to a
// StudyController, reads study directories (core/study) into the view, keeps the
// member curves live, remembers the last study and where new studies go
#pragma once

#include "StudyController.h"
#include "studies/StudyTypes.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTimer>

class QWidget;

namespace widelab {

struct StudyStartOptions;
class StudiesView;

class StudiesPage : public QObject {
    Q_OBJECT
public:
    // `studiesRoot`: where new studies go (a folder per study); `dialogParent`: for messages.
    StudiesPage(StudiesView* view, QString studiesRoot, QWidget* dialogParent);

    // Shows a study directory (finished or not) and remembers it; false after
    // telling the user why when it holds no readable study.
    bool openStudy(const QString& directory);
    // Opens the study shown last time, when there is one; says so in the log.
    void reopenLast();
    // Starts a built-in study into studiesRoot/NAME (continuing the study there
    // when it is the same; another folder when not).
    bool startBuiltin(const StudyStartOptions& options);
    // Starts a study document (the builder's) into a new folder named after it.
    bool startDocument(const QJsonObject& study, int jobs);
    // Continues the study shown.
    bool continueStudy(int jobs);
    void stop();
    bool busy() const { return m_controller.busy(); }
    // Asks for the study of `base` (the configuration being edited; `resolved` with
    // every value) and starts it.
    void build(const QJsonObject& base, const QJsonObject& resolved);

    StudyController& controller() { return m_controller; }
    QString studiesRoot() const { return m_studiesRoot; }
    // Re-reads the study shown (done after each member; on a timer while another
    // process runs it).
    void refresh();

Q_SIGNALS:
    void message(const QString& level, const QString& text);  // for the log
    void problem(const QString& title, const QString& text);  // for a message box
    void runningChanged(bool running);
    void openRunRequested(const QString& runDirectory);

private:
    bool run(const StudyController::Job& job);
    // Shows `directory`'s study (or nothing, for an empty one), forgetting the last one's curves.
    void show(const QString& directory);
    QString freeDirectory(const QString& name) const;
    // A member's curves as its run directory holds them; its last time in seconds (0 without a run).
    double loadMemberCurves(const StudyMemberRow& member);
    void onMemberStarted(const QString& member, bool resumed);
    void onMemberProgress(const QString& member, qint64 step, qint64 total, double seconds, double loss, double accuracy);
    void onFinished(const QString& outcome, int failed, const QString& text);

    StudiesView* m_view;
    QString m_studiesRoot;
    QWidget* m_dialogParent;
    StudyController m_controller;
    QTimer m_refreshTimer;
    QString m_directory;                    // the study shown
    // Members training in this window's study: step and total steps.
    QHash<QString, QPair<qint64, qint64>> m_running;
    // A member's clock restarts when it continues: the seconds it had before, added to
    // its snapshots' (its curves' x in time), and its latest time (for its validations).
    QHash<QString, double> m_timeBefore, m_lastSeconds;
    QSet<QString> m_reload;                 // continued members: curves reread at their first snapshot
    // Per member: the last step its curves were read up to from its run; live points
    // up to there arrive late and are left out.
    QHash<QString, double> m_loadedUntil;
};

}  // namespace widelab
