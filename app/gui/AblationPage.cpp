#include "AblationPage.h"

#include "measure/AblationScan.h"
#include "run/RunDirectory.h"

#include "insights/AblationView.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

namespace widelab {
namespace {

// The step of a checkpoint file step-NNNNNNNN.pt; -1 for another name.
qint64 stepOf(const std::filesystem::path& file)
{
    static const std::regex pattern("step-([0-9]+)\\.pt");
    std::smatch match;
    const std::string name = file.filename().string();
    return std::regex_match(name, match, pattern) ? std::stoll(match[1].str()) : -1;
}

AblationScan toView(const AblationScanResult& r, const QString& kind, const QString& weights)
{
    AblationScan out;
    out.kind = kind;
    out.mode = QString::fromStdString(toString(r.mode));
    out.step = r.step;
    out.weights = weights;
    out.baselineLoss = r.baseline.loss;
    out.baselineAccuracy = r.baseline.accuracy;
    out.examples = r.baseline.examples;
    out.layers = static_cast<int>(r.layers);
    out.columns = static_cast<int>(r.columns);
    out.probeText = QString::fromStdString(r.probeText);
    for (const std::string& label : r.predictionLabels)
        out.predictionLabels.push_back(QString::fromStdString(label));
    out.baselinePrediction = QVector<float>(r.baselinePrediction.begin(), r.baselinePrediction.end());
    for (const AblatedPart& row : r.rows) {
        AblationRow shown;
        shown.layer = static_cast<int>(row.ablation.block);
        shown.index = static_cast<int>(row.ablation.index);
        shown.label = QString::fromStdString(row.label);
        shown.loss = row.loss;
        shown.lossDelta = row.lossDelta;
        shown.accuracyDelta = row.accuracyDelta;
        shown.probePrediction = QVector<float>(row.probePrediction.begin(), row.probePrediction.end());
        out.rows.push_back(std::move(shown));
    }
    return out;
}

}  // namespace

AblationPage::AblationPage(AblationView* view, Hooks hooks, QObject* parent)
    : QObject(parent), m_view(view), m_hooks(std::move(hooks))
{
    connect(m_view, &AblationView::scanRequested, this, &AblationPage::scan);
    connect(m_view, &AblationView::cancelRequested, this, &AblationPage::cancel);
}

AblationPage::~AblationPage()
{
    if (m_cancel)
        m_cancel->store(true);
    wait();
}

void AblationPage::wait()
{
    if (m_thread)
        m_thread->wait();
}

void AblationPage::cancel(const QString& runId)
{
    if (m_thread && runId == m_runId && m_cancel)
        m_cancel->store(true);
}

void AblationPage::scan(const QString& runId, const QString& kind, const QString& mode)
{
    if (m_thread) {
        m_view->setFailed(runId, tr("A scan of another run is in progress; cancel it first."));
        return;
    }
    const QString directory = m_hooks.directory ? m_hooks.directory(runId) : QString();
    if (directory.isEmpty() || !QFileInfo::exists(directory)) {
        m_view->setFailed(runId, tr("This run has no folder on disk to scan."));
        return;
    }
    AblationScanOptions options;
    const auto part = ablationPartFromName(kind.toStdString());
    const auto how = ablationModeFromName(mode.toStdString());
    if (!part || !how) {
        m_view->setFailed(runId, tr("Unknown part \"%1\" or mode \"%2\".").arg(kind, mode));
        return;
    }
    options.part = *part;
    options.mode = *how;
    options.probe = m_hooks.probe ? m_hooks.probe().toStdString() : std::string();
    // A training run saves its current weights for the scan to read.
    const qint64 liveStep = m_hooks.checkpointLive ? m_hooks.checkpointLive(runId) : -1;

    m_runId = runId;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    auto cancelled = m_cancel;
    QPointer<AblationPage> self = this;
    QPointer<AblationView> view = m_view;
    m_view->setBusy(runId, true);
    m_view->setProgress(runId, 0, 0, liveStep >= 0 ? tr("waiting for the run's checkpoint") : tr("opening the run"));
    m_thread = QThread::create([self, view, runId, kind, directory, options, liveStep, cancelled] {
        auto report = [&](auto call) {
            QMetaObject::invokeMethod(self, [view, call] {
                if (view)
                    call(*view);
            }, Qt::QueuedConnection);
        };
        QString weights;
        try {
            const std::filesystem::path dir = directory.toStdString();
            if (liveStep >= 0) {
                // Up to two minutes for the step's checkpoint (the run saves it between steps).
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
                for (;;) {
                    const auto newest = latestCheckpoint(dir);
                    if (newest && stepOf(*newest) >= liveStep)
                        break;
                    if (cancelled->load())
                        throw AblationCancelled("cancelled");
                    if (std::chrono::steady_clock::now() > deadline)
                        throw std::runtime_error("the run did not save a checkpoint of step " + std::to_string(liveStep)
                                                 + " within two minutes");
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            }
            const AblationScanResult result = scanAblations(
                dir, options, [&](std::int64_t done, std::int64_t total, const std::string& current) {
                    const QString text = QString::fromStdString(current);
                    report([runId, done, total, text](AblationView& v) {
                        v.setProgress(runId, static_cast<int>(done), static_cast<int>(total - 1), text);
                    });
                    return !cancelled->load();
                });
            weights = QString::fromStdString(result.checkpoint);
            if (liveStep >= 0)
                weights = QObject::tr("%1, a copy of the training run's weights").arg(weights);
            const AblationScan shown = toView(result, kind, weights);
            report([runId, shown](AblationView& v) {
                v.setScan(runId, shown);
                v.setBusy(runId, false);
            });
        } catch (const AblationCancelled&) {
            report([runId](AblationView& v) { v.setFailed(runId, QObject::tr("Scan cancelled.")); });
        } catch (const std::exception& error) {
            const QString text = QString::fromStdString(error.what());
            report([runId, text](AblationView& v) { v.setFailed(runId, text); });
        }
        QMetaObject::invokeMethod(self, [self] {
            if (!self)
                return;
            self->m_thread->wait();
            self->m_thread->deleteLater();
            self->m_thread = nullptr;
            self->m_runId.clear();
        }, Qt::QueuedConnection);
    });
    m_thread->setObjectName(QStringLiteral("ablation"));
    m_thread->start();
}

}  // namespace widelab
