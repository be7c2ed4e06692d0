#include "StudyController.h"

#include "StudyData.h"
#include "study/StudyRunner.h"

#include <QPointer>
#include <QThread>

#include <thread>

namespace widelab {
namespace {

QString text(const std::string& s)
{
    return QString::fromStdString(s);
}

// Hears the runner on its threads and re-emits on the controller's (queued; a
// call arriving after the controller is gone is dropped with it).
class Relay : public StudyObserver {
public:
    Relay(StudyController* controller, const std::vector<StudyMember>& members) : m_controller(controller)
    {
        for (const StudyMember& member : members)
            m_names.push_back(text(member.name));
    }

    void onMemberStarted(std::size_t index, const StudyMember&, bool resumed) override
    {
        const QString name = m_names[index];
        post([=](StudyController* c) { Q_EMIT c->memberStarted(name, resumed); });
    }
    void onMemberSkipped(std::size_t index, const MemberResult& result) override
    {
        const QString name = m_names[index];
        const QString status = text(toString(result.status)), error = text(result.error);
        post([=](StudyController* c) { Q_EMIT c->memberSkipped(name, status, error); });
    }
    void onMemberProgress(std::size_t index, const TrainingSnapshot& s, std::int64_t total) override
    {
        const QString name = m_names[index];
        const qint64 step = s.step;
        const double seconds = s.wallSeconds, loss = s.loss, accuracy = s.accuracy;
        post([=](StudyController* c) { Q_EMIT c->memberProgress(name, step, total, seconds, loss, accuracy); });
    }
    void onMemberEvaluation(std::size_t index, const EvaluationResult& result) override
    {
        const QString name = m_names[index];
        if (result.split != "validation")
            return;
        post([=](StudyController* c) { Q_EMIT c->memberEvaluation(name, result); });
    }
    void onMemberMessage(std::size_t index, const std::string& level, const std::string& message) override
    {
        const QString name = m_names[index];
        const QString l = text(level), t = text(message);
        post([=](StudyController* c) { Q_EMIT c->memberMessage(name, l, t); });
    }
    void onMemberFinished(std::size_t index, const MemberResult& result) override
    {
        const QString name = m_names[index];
        const QString status = text(toString(result.status)), error = text(result.error);
        post([=](StudyController* c) { Q_EMIT c->memberFinished(name, status, error); });
    }
    void onMemberStopped(std::size_t index, std::int64_t) override
    {
        const QString name = m_names[index];
        post([=](StudyController* c) { Q_EMIT c->memberFinished(name, QStringLiteral("stopped"), QString()); });
    }
    void onProgress(const StudyProgress& p) override
    {
        const int done = static_cast<int>(p.done), total = static_cast<int>(p.total), running = static_cast<int>(p.running);
        const double left = p.secondsLeft;
        post([=](StudyController* c) { Q_EMIT c->progress(done, total, running, left); });
    }

private:
    template <typename F>
    void post(F&& call)
    {
        QPointer<StudyController> controller = m_controller;
        QMetaObject::invokeMethod(
            m_controller, [controller, call = std::forward<F>(call)] {
                if (controller)
                    call(controller.data());
            },
            Qt::QueuedConnection);
    }

    StudyController* m_controller;
    QVector<QString> m_names;
};

}  // namespace

StudyController::StudyController(QObject* parent) : QObject(parent) {}

StudyController::~StudyController()
{
    stop();
    wait();
    delete m_thread;
}

bool StudyController::start(const Job& job)
{
    if (busy())
        return false;
    m_directory = job.directory;
    m_stopping = false;
    m_stop = std::make_shared<std::atomic<bool>>(false);
    auto stopFlag = m_stop;
    QPointer<StudyController> self = this;
    m_thread = QThread::create([this, self, job, stopFlag] {
        QString outcome = QStringLiteral("refused"), message;
        int failed = 0;
        try {
            const std::filesystem::path directory = job.directory.toStdString();
            const StudyDocument study = job.documentJson.isEmpty()
                                            ? recordedStudy(directory)
                                            : parseStudyDocument(job.documentJson.toStdString(), "the study");
            StudyOptions options;
            if (job.steps > 0)
                options.overrides.steps = job.steps;
            if (job.seeds > 0)
                options.overrides.seeds = job.seeds;
            options.jobs = static_cast<std::size_t>(std::max(1, job.jobs));
            StudyRunner runner(study, directory, options);
            // Set up: from here an error is the study's failing, not its refusal.
            outcome = QStringLiteral("failed");
            Relay relay(this, runner.members());
            runner.addObserver(&relay);
            const StudySummary summary = runner.run(*stopFlag);
            failed = static_cast<int>(summary.failed);
            outcome = summary.stopped ? QStringLiteral("stopped") : QStringLiteral("completed");
        } catch (const std::exception& problem) {
            message = studyProblemText(problem);
        }
        QMetaObject::invokeMethod(
            this, [self, outcome, failed, message] {
                if (!self)
                    return;
                self->m_thread->wait();
                self->m_thread->deleteLater();
                self->m_thread = nullptr;
                self->m_stopping = false;
                Q_EMIT self->finished(outcome, failed, message);
            },
            Qt::QueuedConnection);
    });
    m_thread->setObjectName(QStringLiteral("study"));
    m_thread->start();
    return true;
}

void StudyController::stop()
{
    if (!busy() || !m_stop)
        return;
    m_stopping = true;
    m_stop->store(true);
}

void StudyController::wait()
{
    if (m_thread)
        m_thread->wait();
}

}  // namespace widelab
