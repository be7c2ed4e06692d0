// defines: RunStatusBar: the status bar's labels for the run in view: its
// state, step, speed, time left, device, memory and processes
#pragma once

#include "TrainingController.h"

#include "vocab/Snapshot.h"

#include <QObject>

class QLabel;
class QMainWindow;

namespace widelab {

class RunStatusBar : public QObject {
    Q_OBJECT
public:
    // Adds its labels to `window`'s status bar, at the right.
    explicit RunStatusBar(QMainWindow* window);

    QLabel* stateLabel() const { return m_state; }
    QLabel* speedLabel() const { return m_speed; }

    // The step, speed, time left, memory and processes go: a new run starts.
    void clearRun();
    void showState(TrainingController::State state);
    // A followed run's state (empty: Idle) and why it is not known; in the
    // warning colour while its trainer is stale or gone, in the error colour
    // when it failed.
    enum class Alert { None, Warning, Error };
    void showFollowedState(const QString& text, const QString& details, Alert alert);
    void clearFollowedState(bool idle);  // following ends: the plain look, and Idle when `idle`
    void showStep(qint64 step);
    void showStep(qint64 step, qint64 total);
    void showSpeed(double tokensPerSecond);
    // A distributed run's processes: how many, and which one the others wait for.
    void showWorld(const WorldPace& world);
    // A train snapshot of the run training here: step, speed, time left, memory, processes.
    void showTraining(const TrainingSnapshot& snapshot, qint64 totalSteps);
    void showDevice(const QString& device);
    void clearTimeLeft();
    // Where new runs go, at the status bar's left end; a click on it asks for the
    // Workspace tab (folderClicked).
    void showRunsFolder(const QString& folder);
    QLabel* folderLabel() const { return m_folder; }

Q_SIGNALS:
    void folderClicked();

private:
    QMainWindow* m_window;
    QLabel* m_state = nullptr;
    QLabel* m_step = nullptr;
    QLabel* m_speed = nullptr;
    QLabel* m_left = nullptr;
    QLabel* m_device = nullptr;
    QLabel* m_memory = nullptr;
    QLabel* m_world = nullptr;  // a distributed run's processes (PaceText.h)
    QLabel* m_folder = nullptr;  // the runs folder
};

}  // namespace widelab
