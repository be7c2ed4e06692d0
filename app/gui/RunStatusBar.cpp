#include "RunStatusBar.h"

#include "PaceText.h"
#include "Theme.h"
#include "vocab/Format.h"

#include <QDir>
#include <QHash>
#include <QLabel>
#include <QMainWindow>
#include <QStatusBar>

#include <cmath>

namespace widelab {
namespace {

QString humanDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return QStringLiteral("–");
    const auto s = static_cast<qint64>(seconds + 0.5);
    if (s >= 3600)
        return QStringLiteral("%1 h %2 min").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0'));
    if (s >= 60)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 s").arg(s);
}

}  // namespace

RunStatusBar::RunStatusBar(QMainWindow* window) : QObject(window), m_window(window)
{
    m_state = new QLabel(tr("Idle"), window);
    m_step = new QLabel(window);
    m_speed = new QLabel(window);
    m_left = new QLabel(window);
    m_device = new QLabel(window);
    m_memory = new QLabel(window);
    m_world = new QLabel(window);
    // Shown whole when there is room; on a small screen they give way instead of
    // making the window wider than the screen (a label asks for all its text).
    const int fewCharacters = window->fontMetrics().averageCharWidth() * 6;
    for (QLabel* label : {m_state, m_step, m_speed, m_left, m_device, m_world, m_memory}) {
        label->setMinimumWidth(fewCharacters);
        window->statusBar()->addPermanentWidget(label);
    }
    m_state->setAccessibleName(tr("Training state"));
    m_step->setAccessibleName(tr("Step"));
    m_speed->setAccessibleName(tr("Tokens per second"));
    m_left->setAccessibleName(tr("Time left"));
    m_device->setAccessibleName(tr("Device"));
    m_memory->setAccessibleName(tr("Memory in use"));
    m_world->setAccessibleName(tr("Processes"));
    // Left of the run's labels, the first to give way to them.
    m_folder = new QLabel(window);
    m_folder->setAccessibleName(tr("Runs folder"));
    m_folder->setMinimumWidth(fewCharacters);
    m_folder->setTextFormat(Qt::RichText);
    connect(m_folder, &QLabel::linkActivated, this, &RunStatusBar::folderClicked);
    window->statusBar()->insertPermanentWidget(0, m_folder, 0);
}

void RunStatusBar::showRunsFolder(const QString& folder)
{
    QString shown = QDir::toNativeSeparators(folder);
    const QString home = QDir::toNativeSeparators(QDir::homePath());
    if (shown.startsWith(home + QDir::separator()))
        shown = QStringLiteral("~") + shown.mid(home.size());
    m_folder->setText(QStringLiteral("<a href=\"workspace\">%1</a>").arg(tr("Runs: %1").arg(shown.toHtmlEscaped())));
    m_folder->setToolTip(tr("New runs go in %1 (File > Runs Folder... changes it); click to list its runs")
                             .arg(QDir::toNativeSeparators(folder)));
}

void RunStatusBar::clearRun()
{
    for (QLabel* label : {m_step, m_speed, m_left, m_memory, m_world})
        label->clear();
    m_world->setToolTip(QString());
}

void RunStatusBar::showState(TrainingController::State state)
{
    static const QHash<TrainingController::State, QString> names{
        {TrainingController::State::Idle, tr("Idle")},
        {TrainingController::State::Starting, tr("Starting: preparing data and model")},
        {TrainingController::State::Running, tr("Training")},
        {TrainingController::State::Paused, tr("Paused")},
        {TrainingController::State::Stopping, tr("Stopping: saving a checkpoint")}};
    m_state->setText(names.value(state));
}

void RunStatusBar::showFollowedState(const QString& text, const QString& details, Alert alert)
{
    m_state->setText(text.isEmpty() ? tr("Idle") : text);
    m_state->setToolTip(details);
    const bool dark = themeIsDark(m_window->palette());  // the colours lighter on a dark window
    m_state->setStyleSheet(alert == Alert::Warning
                               ? QStringLiteral("color: %1; font-weight: bold;").arg(dark ? "#e69f00" : "#a15c00")
                           : alert == Alert::Error
                               ? QStringLiteral("color: %1; font-weight: bold;").arg(dark ? "#ff6b6b" : "#b3261e")
                               : QString());
}

void RunStatusBar::clearFollowedState(bool idle)
{
    m_state->setStyleSheet(QString());
    m_state->setToolTip(QString());
    if (idle)
        m_state->setText(tr("Idle"));
}

void RunStatusBar::showStep(qint64 step) { m_step->setText(tr("Step %1").arg(step)); }

void RunStatusBar::showStep(qint64 step, qint64 total) { m_step->setText(tr("Step %1 / %2").arg(step).arg(total)); }

void RunStatusBar::showSpeed(double tokensPerSecond)
{
    m_speed->setText(tr("%1 tokens/s").arg(tokensPerSecond, 0, 'f', 0));
}

void RunStatusBar::showWorld(const WorldPace& world)
{
    const PaceText text = describePace(world);
    m_world->setText(text.label);
    m_world->setToolTip(text.details);
}

void RunStatusBar::showTraining(const TrainingSnapshot& s, qint64 totalSteps)
{
    showStep(s.step, totalSteps);
    showSpeed(s.tokensPerSecond);
    m_left->setText(tr("%1 left").arg(humanDuration(s.stepSeconds * static_cast<double>(totalSteps - s.step))));
    m_memory->setText(QString::fromStdString(formatBytes(static_cast<double>(s.memoryBytes))));
    showWorld(s.world);
}

void RunStatusBar::showDevice(const QString& device) { m_device->setText(device); }

void RunStatusBar::clearTimeLeft() { m_left->clear(); }

}  // namespace widelab
