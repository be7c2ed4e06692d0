// Tests of distributed training with real widelab-cli processes on this
// machine, over c10d's Gloo on localhost: every model family trained by two
// processes follows one process; the launchers (--nproc, the build's own torchrun,
// Slurm's and Open MPI's variables set by hand) start it; and the faults end
// cleanly: a rank killed, a rank that never comes, ranks given different
// documents, SIGTERM to the launcher.
#include "TestSupport.h"
#include "dist/Collective.h"
#include "run/Checkpoint.h"
#include "train/RunConfig.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"

#include <QtTest>

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>

#include <csignal>
#include <fstream>
#include <random>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace widelab;

namespace {

struct Finished {
    int code = -1;
    QString out, err;
    double seconds = 0.0;
};

QProcessEnvironment withVariables(const std::map<QString, QString>& variables)
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("OMP_WAIT_POLICY"), QStringLiteral("PASSIVE"));
    for (const auto& [name, value] : variables)
        environment.insert(name, value);
    return environment;
}

void start(QProcess& process, const QStringList& args, const QProcessEnvironment& environment)
{
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), args);
}

Finished finish(QProcess& process, int timeoutMs = 300000)
{
    QElapsedTimer timer;
    timer.start();
    Finished f;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        f.err = QStringLiteral("(timed out) ");
    }
    f.code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    f.out = QString::fromUtf8(process.readAllStandardOutput());
    f.err += QString::fromUtf8(process.readAllStandardError());
    f.seconds = static_cast<double>(timer.elapsed()) / 1000.0;
    return f;
}

Finished cli(const QStringList& args, const QProcessEnvironment& environment = withVariables({}))
{
    QProcess process;
    start(process, args, environment);
    return finish(process);
}

// The tiny document every family starts from (test::tinyRun's): 20 steps of a
// global batch of 15 (shares of 8 and 7), no dropout and no router noise,
// under which W ranks compute what one process computes, up to the order of
// the sums. Written resolved, every key.
// WideNet's mixture (shared attention, experts and router) and ViT-MoE's
// (unshared experts, images cropped and flipped), four experts each, with no
// capacity limit and no router noise.
constexpr const char* kWideNet =
    R"({"model": {"layers": 3, "experts": 4, "top_k": 2, "capacity_factor": 0, "router_noise_std": 0,
                  "balance_loss_weight": 0.01, "router_z_loss_weight": 0.001, "share_attention": true,
                  "share_ffn": true, "share_router": true}})";
constexpr const char* kVitMoe =
    R"({"model": {"input": "image", "image_size": 16, "patch_size": 4, "channels": 3, "experts": 4, "top_k": 2,
                  "capacity_factor": 0, "router_noise_std": 0, "balance_loss_weight": 0.01, "pooling": "mean"},
        "task": {"kind": "shapes", "crop_padding": 4, "flip": true, "min_length": null, "max_length": null}})";

std::string withLamb(const char* overrides)
{
    nlohmann::json json = nlohmann::json::parse(overrides);
    json["train"]["optimizer"] = "lamb";
    return json.dump();
}

nlohmann::json tinyDocument(const std::string& overrides)
{
    nlohmann::json json = {{"model", {{"dropout", 0.0}}}, {"train", {{"batch_size", 15}}}};
    json.merge_patch(nlohmann::json::parse(overrides));
    return test::tinyRun(json.dump()).toJson();
}

QString writeDocument(const QTemporaryDir& dir, const QString& name, const nlohmann::json& json)
{
    const QString path = dir.filePath(name + QStringLiteral(".json"));
    std::ofstream(path.toStdString()) << json.dump();
    return path;
}

std::vector<nlohmann::json> trainLines(const QString& run) { return test::metricLines(run.toStdString(), "train"); }

// |a - b| within 1e-5 of the larger magnitude (at least 1): float32 sums taken in
// another order differ in their last bits, and twenty steps of Adam carry that
// to a few units of 1e-6 (measured: 8e-6 on a gradient norm of 10).
bool near(double a, double b) { return std::abs(a - b) <= 1e-5 * std::max({1.0, std::abs(a), std::abs(b)}); }

void compareCurves(const QString& one, const QString& several)
{
    const auto a = trainLines(one), b = trainLines(several);
    QCOMPARE(a.size(), b.size());
    QVERIFY(!a.empty());
    for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].at("step"), b[i].at("step"));
        for (const char* key : {"loss", "task_loss", "balance_loss", "accuracy", "gradient_norm"}) {
            const double x = a[i].at(key).get<double>(), y = b[i].at(key).get<double>();
            QVERIFY2(near(x, y), qPrintable(QStringLiteral("step %1 %2: %3 vs %4")
                                                 .arg(i + 1).arg(QLatin1String(key)).arg(x, 0, 'g', 9).arg(y, 0, 'g', 9)));
        }
    }
}

struct WeightDifference {
    double largest = 0.0;   // of any element
    double relative = 0.0;  // the norm of all differences over the norm of the weights
};

// How far apart the weights two runs saved at `step` are.
WeightDifference weightDifference(const QString& one, const QString& other, std::int64_t step)
{
    const RunDocument document = readRunDocument(one.toStdString());
    WideTransformer a(document.model), b(document.model);
    loadCheckpoint(runlayout::checkpointFile(one.toStdString(), step), *a, nullptr);
    loadCheckpoint(runlayout::checkpointFile(other.toStdString(), step), *b, nullptr);
    WeightDifference d;
    double difference = 0.0, norm = 0.0;
    const auto pa = a->named_parameters(), pb = b->named_parameters();
    for (const auto& item : pa) {
        const torch::Tensor delta = (item.value() - pb[item.key()]).to(torch::kFloat64);
        d.largest = std::max(d.largest, delta.abs().max().item<double>());
        difference += delta.square().sum().item<double>();
        norm += item.value().to(torch::kFloat64).square().sum().item<double>();
    }
    d.relative = std::sqrt(difference / norm);
    return d;
}

// The weights two runs of `document` saved at step 20, within its optimiser's
// tolerance (familiesFollowOneProcess_data says why): SGD's 1e-6, else the
// 20 steps times the peak rate that an element's rounding noise may move it by.
void compareWeights(const QString& one, const QString& other, const nlohmann::json& document)
{
    const WeightDifference difference = weightDifference(one, other, 20);
    const QString measured = QStringLiteral("largest %1, relative %2").arg(difference.largest).arg(difference.relative);
    qInfo("weights against one process: %s", qPrintable(measured));
    if (document.at("train").at("optimizer") == "sgd")
        QVERIFY2(difference.largest < 1e-6 && difference.relative < 1e-6, qPrintable(measured));
    else
        QVERIFY2(difference.largest < 20 * document.at("train").at("learning_rate").get<double>(), qPrintable(measured));
}

int freePort()
{
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    getsockname(s, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(s);
    return ntohs(address.sin_port);
}

// The process of rank `rank` among the children of a launcher.
pid_t rankOf(qint64 launcher, int rank)
{
    std::ifstream children("/proc/" + std::to_string(launcher) + "/task/" + std::to_string(launcher) + "/children");
    pid_t child = 0;
    while (children >> child) {
        std::ifstream environ("/proc/" + std::to_string(child) + "/environ", std::ios::binary);
        std::string variable;
        while (std::getline(environ, variable, '\0'))
            if (variable == "RANK=" + std::to_string(rank))
                return child;
    }
    return 0;
}

bool waitFor(const std::function<bool()>& condition, int seconds)
{
    QElapsedTimer timer;
    timer.start();
    while (!condition()) {
        if (timer.elapsed() > seconds * 1000)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

}  // namespace

class TestDistributed : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void familiesFollowOneProcess_data();
    void familiesFollowOneProcess();
    void expertsSplitOverRanksFollowOneProcess_data();
    void expertsSplitOverRanksFollowOneProcess();
    void expertsThatDoNotSplitEvenlyAreRefused();
    void torchrunDrivesTheCli();
    void slurmAndOpenMpiVariablesByHand();
    void anotherWorldSizeContinuesTheRun();
    void ranksWithDifferentDocumentsAreRefused();
    void aRankThatNeverComesIsNamed();
    void aKilledRankStopsTheOthersAndTheRunResumes();
    void rankZeroKilledWhileSavingLeavesLoadableCheckpoints();
    void aStoppedRankIsFoundByTheTimeout();
    void sigtermSavesOneCheckpoint();
    void nestedLaunchersAreRefused();

private:
    std::unique_ptr<QTemporaryDir> m_dir;  // each test's own
};

void TestDistributed::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    if (const std::string reason = Collective::unavailableReason(); !reason.empty()) {
        // Such a build must say so rather than train in one process.
        const Finished f = cli({"train", writeDocument(*m_dir, "tiny", tinyDocument("{}")), "--out",
                                m_dir->filePath("refused"), "--nproc", "2"});
        QCOMPARE(f.code, 1);
        QVERIFY2(f.err.contains(QString::fromStdString(reason)), qPrintable(f.err));
        QVERIFY(!QFile::exists(m_dir->filePath("refused/metrics.jsonl")));
        QSKIP(reason.c_str());
    }
}

void TestDistributed::familiesFollowOneProcess_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<bool>("sgd");
    // SGD's update is linear in the gradient: the weights differ as the summed
    // gradients do, by float32 sums taken in another order (measured 3e-8 of
    // their norm). AdamW divides each gradient element by its own running
    // magnitude, so an element whose gradient is rounding noise moves by up to
    // the learning rate whichever way the noise falls (measured 6e-4 at most,
    // 6e-5 of the norm): its weights are held to that bound, steps x peak rate.
    QTest::newRow("deep, adamw") << QStringLiteral("{}") << false;
    QTest::newRow("deep") << QStringLiteral("{}") << true;
    QTest::newRow("wide") << QStringLiteral(R"({"model": {"layers": 1, "heads": 16}})") << true;
    // Mixtures route each rank's tokens; with no capacity limit nothing is
    // dropped, and the balance and z-losses count every rank's tokens.
    QTest::newRow("widenet (shared)") << QString::fromLatin1(kWideNet) << true;
    // Images, cropped and flipped: each example's draw is keyed by its place in the global batch.
    QTest::newRow("vit-moe (unshared experts)") << QString::fromLatin1(kVitMoe) << true;
    QTest::newRow("multi-path") << QStringLiteral(R"({"model": {"paths": 3, "path_norm": true, "learnable_path_weights": true}})")
                                << true;
}

void TestDistributed::familiesFollowOneProcess()
{
    QFETCH(QString, overrides);
    QFETCH(bool, sgd);
    nlohmann::json json = tinyDocument(overrides.toStdString());
    if (sgd)
        json.merge_patch({{"train", {{"optimizer", "sgd"}, {"learning_rate", 0.05}}}});
    const QString document = writeDocument(*m_dir, "family", json);
    const QString one = m_dir->filePath("one"), two = m_dir->filePath("two");
    const Finished single = cli({"train", document, "--out", one});
    QVERIFY2(single.code == 0, qPrintable(single.err));
    const Finished pair = cli({"train", document, "--out", two, "--nproc", "2"});
    QVERIFY2(pair.code == 0, qPrintable(pair.err));
    compareCurves(one, two);
    compareWeights(one, two, json);
    if (QTest::currentTestFailed())
        return;
    // One voice: rank 0 prints, the other rank logs into logs/.
    QCOMPARE(pair.out.count(QStringLiteral("completed 20 steps")), 1);
    QVERIFY(QFile::exists(two + QStringLiteral("/logs/rank-1.txt")));
}

void TestDistributed::expertsSplitOverRanksFollowOneProcess_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<bool>("sgd");
    // Four experts: two on each rank. Each rank routes its own tokens (no
    // capacity limit: nothing is dropped, and the ranks' slot counts differ with
    // their sequences' lengths); the gradient clip (1.0, under norms of about 10)
    // and LAMB's trust ratios take the norm of every expert, over both ranks.
    QTest::newRow("widenet (shared), sgd") << QString::fromLatin1(kWideNet) << true;
    QTest::newRow("vit-moe (unshared experts), lamb") << QString::fromStdString(withLamb(kVitMoe)) << false;
}

void TestDistributed::expertsSplitOverRanksFollowOneProcess()
{
    QFETCH(QString, overrides);
    QFETCH(bool, sgd);
    nlohmann::json json = tinyDocument(overrides.toStdString());
    json.merge_patch({{"train", {{"expert_parallel", true}, {"schedule", "inverse_sqrt"}}}});
    if (sgd)
        json.merge_patch({{"train", {{"optimizer", "sgd"}, {"learning_rate", 0.05}}}});
    const QString document = writeDocument(*m_dir, "experts", json);
    const QString one = m_dir->filePath("one"), split = m_dir->filePath("split");
    const Finished single = cli({"train", document, "--out", one});
    QVERIFY2(single.code == 0, qPrintable(single.err));
    QFile singleLog(one + QStringLiteral("/log.txt"));
    QVERIFY(singleLog.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(singleLog.readAll()).contains(QStringLiteral("one process holds every expert")));
    // Ten steps, a checkpoint of every expert, and ten more from it: loading
    // splits the experts and their optimiser state again.
    const Finished first = cli({"train", document, "--out", split, "--nproc", "2", "--steps", "10"});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    const Finished second = cli({"train", document, "--resume", "--out", split, "--nproc", "2", "--steps", "20"});
    QVERIFY2(second.code == 0, qPrintable(second.err));
    compareCurves(one, split);
    // The checkpoints hold every expert: one process reads them as its own.
    compareWeights(one, split, json);
    if (QTest::currentTestFailed())
        return;
    QFile log(split + QStringLiteral("/logs/rank-1.txt"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QVERIFY2(text.contains(QStringLiteral("this rank holds experts 2-3 of 4 in each mixture layer")), qPrintable(text));
}

void TestDistributed::expertsThatDoNotSplitEvenlyAreRefused()
{
    const QString document = writeDocument(
        *m_dir, "uneven",
        tinyDocument(R"({"model": {"experts": 4, "capacity_factor": 0}, "train": {"expert_parallel": true}})"));
    const Finished f = cli({"train", document, "--out", m_dir->filePath("uneven"), "--nproc", "3"});
    QCOMPARE(f.code, 1);
    QVERIFY2(f.err.contains(QStringLiteral("train.expert_parallel"))
                 && f.err.contains(QStringLiteral("4 experts (model.experts) cannot be split evenly over 3 processes")),
             qPrintable(f.err));
    QVERIFY(!QFile::exists(m_dir->filePath("uneven/checkpoints/step-00000010.pt")));
}

void TestDistributed::torchrunDrivesTheCli()
{
    // The build's own torchrun: PyPI's from the wheel it was built against, else
    // Debian's python3 -m torch.distributed.run (python3-torch).
#ifdef WIDELAB_TORCH_SITE
    const QProcessEnvironment environment = withVariables({{"PYTHONPATH", QStringLiteral(WIDELAB_TORCH_SITE)}});
#else
    const QProcessEnvironment environment = withVariables({});
#endif
    QProcess probe;
    probe.setProcessEnvironment(environment);
    probe.start(QStringLiteral("/usr/bin/python3"), {"-c", "import torch.distributed.run"});
    if (!probe.waitForFinished(60000) || probe.exitCode() != 0)
        QSKIP("no torchrun of this build's torch (Debian's python3-torch) is installed");
    const QString document = writeDocument(*m_dir, "tiny", tinyDocument("{}"));
    const Finished single = cli({"train", document, "--out", m_dir->filePath("one")});
    QCOMPARE(single.code, 0);
    QProcess process;
    process.setProcessEnvironment(environment);
    // --redirects and --tee name a rank that does not exist: Debian 12's torchrun
    // (1.13 on Python 3.11) cannot read their default, 0 (docs/distributed.md).
    process.start(QStringLiteral("/usr/bin/python3"),
                  {"-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "9:1", "--tee", "9:1",
                   "--no_python", QStringLiteral(WIDELAB_CLI), "train", document, "--out", m_dir->filePath("torchrun")});
    const Finished f = finish(process);
    QVERIFY2(f.code == 0, qPrintable(f.err));
    compareCurves(m_dir->filePath("one"), m_dir->filePath("torchrun"));
}

void TestDistributed::slurmAndOpenMpiVariablesByHand()
{
    const QString document = writeDocument(*m_dir, "tiny", tinyDocument("{}"));
    QVERIFY(cli({"train", document, "--out", m_dir->filePath("one")}).code == 0);
    // srun's variables: rank 0 opens the store on the step's first node.
    const QString port = QString::number(freePort());
    QProcess slurm[2];
    for (int r = 0; r < 2; ++r)
        start(slurm[r], {"train", document, "--out", m_dir->filePath("slurm")},
              withVariables({{"SLURM_PROCID", QString::number(r)}, {"SLURM_LOCALID", QString::number(r)},
                             {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2"},
                             {"SLURM_STEP_NODELIST", "localhost"}, {"MASTER_PORT", port}}));
    for (QProcess& p : slurm) {
        const Finished f = finish(p);
        QVERIFY2(f.code == 0, qPrintable(f.err));
    }
    compareCurves(m_dir->filePath("one"), m_dir->filePath("slurm"));
    // mpirun's: the address is given with -x MASTER_ADDR.
    const QString mpiPort = QString::number(freePort());
    QProcess mpi[2];
    for (int r = 0; r < 2; ++r)
        start(mpi[r], {"train", document, "--out", m_dir->filePath("mpi")},
              withVariables({{"OMPI_COMM_WORLD_RANK", QString::number(r)}, {"OMPI_COMM_WORLD_SIZE", "2"},
                             {"OMPI_COMM_WORLD_LOCAL_RANK", QString::number(r)}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                             {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", mpiPort}}));
    for (QProcess& p : mpi) {
        const Finished f = finish(p);
        QVERIFY2(f.code == 0, qPrintable(f.err));
    }
    compareCurves(m_dir->filePath("one"), m_dir->filePath("mpi"));
}

void TestDistributed::anotherWorldSizeContinuesTheRun()
{
    // Ten steps on two processes, ten more on one: the batches are the global
    // ones whatever the world, so the run is the 20-step run of one process
    // (under a schedule that does not depend on the run's length).
    const QString document = writeDocument(*m_dir, "tiny", tinyDocument(R"({"train": {"schedule": "inverse_sqrt"}})"));
    QVERIFY(cli({"train", document, "--out", m_dir->filePath("one")}).code == 0);
    const QString run = m_dir->filePath("resharded");
    const Finished first = cli({"train", document, "--out", run, "--nproc", "2", "--steps", "10"});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    const Finished second = cli({"train", "--resume", "--out", run, "--steps", "20"});
    QVERIFY2(second.code == 0, qPrintable(second.err));
    QFile log(run + QStringLiteral("/log.txt"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QVERIFY2(text.contains(QStringLiteral("the run trained on 2 processes and continues on 1")), qPrintable(text));
    compareCurves(m_dir->filePath("one"), run);
}

void TestDistributed::ranksWithDifferentDocumentsAreRefused()
{
    const QString a = writeDocument(*m_dir, "a", tinyDocument("{}"));
    const QString b = writeDocument(*m_dir, "b", tinyDocument(R"({"train": {"learning_rate": 0.001}})"));
    const QString port = QString::number(freePort());
    QProcess ranks[2];
    for (int r = 0; r < 2; ++r)
        start(ranks[r], {"train", r == 0 ? a : b, "--out", m_dir->filePath("mixed")},
              withVariables({{"RANK", QString::number(r)}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", port}}));
    for (QProcess& p : ranks) {
        const Finished f = finish(p, 120000);
        QCOMPARE(f.code, 1);
        QVERIFY2(f.err.contains(QStringLiteral("rank 1 was given another run document than rank 0"))
                     && f.err.contains(QStringLiteral("train.learning_rate")),
                 qPrintable(f.err));
    }
    QVERIFY(!QFile::exists(m_dir->filePath("mixed/checkpoints/step-00000010.pt")));
}

void TestDistributed::aRankThatNeverComesIsNamed()
{
    const QString document = writeDocument(*m_dir, "alone", tinyDocument(R"({"train": {"collective_timeout_s": 3}})"));
    const Finished f = cli({"train", document, "--out", m_dir->filePath("alone")},
                           withVariables({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                                          {"MASTER_PORT", QString::number(freePort())}}));
    QCOMPARE(f.code, 1);
    QVERIFY2(f.err.contains(QStringLiteral("rank 1 never joined")) && f.err.contains(QStringLiteral("127.0.0.1:")),
             qPrintable(f.err));
    QVERIFY2(f.seconds < 30.0, qPrintable(QString::number(f.seconds)));
}

void TestDistributed::aKilledRankStopsTheOthersAndTheRunResumes()
{
    const QString document = writeDocument(
        *m_dir, "long", tinyDocument(R"({"train": {"steps": 100000, "checkpoint_every": 20, "log_every": 10,
                                                   "eval_every": 100000}})"));
    const QString run = m_dir->filePath("killed");
    QProcess launcher;
    start(launcher, {"train", document, "--out", run, "--nproc", "2"}, withVariables({}));
    QVERIFY(launcher.waitForStarted());
    const auto firstCheckpoint = runlayout::checkpointFile(run.toStdString(), 40);
    QVERIFY(waitFor([&] { return std::filesystem::exists(firstCheckpoint); }, 120));
    const pid_t victim = rankOf(launcher.processId(), 1);
    QVERIFY(victim > 0);
    ::kill(victim, SIGKILL);
    const Finished f = finish(launcher, 120000);
    QVERIFY(f.code != 0);
    QVERIFY2(f.err.contains(QStringLiteral("rank 1 was killed by signal 9")), qPrintable(f.err));
    QVERIFY2(f.seconds < 60.0, qPrintable(QString::number(f.seconds)));
    // Every checkpoint left is whole, and the run continues from the newest.
    std::int64_t newest = 0;
    for (const auto& entry : std::filesystem::directory_iterator(runlayout::checkpointsDirectory(run.toStdString()))) {
        QVERIFY2(!checkpointIntegrity(entry.path()), entry.path().c_str());
        if (const auto step = runlayout::stepOfCheckpoint(entry.path().filename().string()))
            newest = std::max(newest, *step);
    }
    QVERIFY(newest >= 40);
    const Finished resumed = cli({"train", "--resume", "--out", run, "--nproc", "2", "--steps",
                                  QString::number(newest + 20)});
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    QVERIFY2(resumed.out.contains(QStringLiteral("from step %1").arg(newest)), qPrintable(resumed.out));
    QVERIFY(resumed.out.contains(QStringLiteral("completed %1 steps").arg(newest + 20)));
}

// Rank 0 writes a checkpoint after every step, so that a kill at a random
// moment falls in a write about as often as in a step. Whatever it cut, every
// checkpoint left is whole and the run continues from the newest.
void TestDistributed::rankZeroKilledWhileSavingLeavesLoadableCheckpoints()
{
    const QString document = writeDocument(
        *m_dir, "saving", tinyDocument(R"({"model": {"d_model": 128, "ffn_dim": 512},
                                          "train": {"steps": 100000, "checkpoint_every": 1, "keep_last": 2,
                                                    "log_every": 10, "eval_every": 100000}})"));
    const QString run = m_dir->filePath("saving");
    const auto checkpoints = runlayout::checkpointsDirectory(run.toStdString());
    auto newest = [&] {
        std::int64_t step = 0;
        if (std::filesystem::exists(checkpoints))
            for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
                if (const auto s = runlayout::stepOfCheckpoint(entry.path().filename().string()))
                    step = std::max(step, *s);
        return step;
    };
    std::mt19937 random(7);
    for (int round = 0; round < 3; ++round) {
        QProcess launcher;
        QStringList args{"train", "--out", run, "--nproc", "2"};
        args.insert(1, round == 0 ? document : QStringLiteral("--resume"));
        start(launcher, args, withVariables({}));
        QVERIFY(launcher.waitForStarted());
        const std::int64_t before = newest();
        QVERIFY(waitFor([&] { return newest() > before + 2; }, 120));
        QTest::qWait(static_cast<int>(random() % 400));
        const pid_t victim = rankOf(launcher.processId(), 0);
        QVERIFY(victim > 0);
        ::kill(victim, SIGKILL);
        const Finished f = finish(launcher, 120000);
        QVERIFY(f.code != 0);
        QVERIFY2(f.err.contains(QStringLiteral("rank 0 was killed by signal 9")), qPrintable(f.err));
        for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
            if (runlayout::stepOfCheckpoint(entry.path().filename().string()))
                QVERIFY2(!checkpointIntegrity(entry.path()), entry.path().c_str());
    }
    const std::int64_t last = newest();
    const Finished resumed = cli({"train", "--resume", "--out", run, "--nproc", "2", "--steps", QString::number(last + 5)});
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    QVERIFY(resumed.out.contains(QStringLiteral("completed %1 steps").arg(last + 5)));
}

void TestDistributed::aStoppedRankIsFoundByTheTimeout()
{
    const QString document = writeDocument(
        *m_dir, "frozen", tinyDocument(R"({"train": {"steps": 100000, "checkpoint_every": 20, "log_every": 10,
                                                     "eval_every": 100000, "collective_timeout_s": 3}})"));
    const QString run = m_dir->filePath("frozen");
    QProcess launcher;
    start(launcher, {"train", document, "--out", run, "--nproc", "2"}, withVariables({}));
    QVERIFY(launcher.waitForStarted());
    QVERIFY(waitFor([&] { return std::filesystem::exists(runlayout::checkpointFile(run.toStdString(), 20)); }, 120));
    const pid_t ranks[2] = {rankOf(launcher.processId(), 0), rankOf(launcher.processId(), 1)};
    QVERIFY(ranks[0] > 0 && ranks[1] > 0);
    ::kill(ranks[1], SIGSTOP);  // alive, but silent
    const Finished f = finish(launcher, 120000);
    QVERIFY(f.code != 0);
    // Rank 0 waited the timeout, named what it waited for and stopped; the
    // launcher woke the stopped rank to end it too. Nothing is left behind.
    QVERIFY2(f.err.contains(QRegularExpression(QStringLiteral("rank 0: [^\\n]* step \\d+ failed \\(another rank stopped, "
                                                              "or none answered within 3 s\\)"))),
             qPrintable(f.err));
    QVERIFY2(f.seconds < 60.0, qPrintable(QString::number(f.seconds)));
    for (const pid_t pid : ranks)
        QVERIFY2(::kill(pid, 0) != 0, "a rank outlived the launcher");
    QVERIFY(!checkpointIntegrity(runlayout::checkpointFile(run.toStdString(), 20)));
}

void TestDistributed::sigtermSavesOneCheckpoint()
{
    const QString document = writeDocument(
        *m_dir, "long", tinyDocument(R"({"train": {"steps": 100000, "checkpoint_every": 100000, "log_every": 10,
                                                   "eval_every": 100000}})"));
    const QString run = m_dir->filePath("stopped");
    QProcess launcher;
    start(launcher, {"train", document, "--out", run, "--nproc", "2"}, withVariables({}));
    QVERIFY(launcher.waitForStarted());
    QVERIFY(waitFor([&] { return test::metricLines(run.toStdString(), "train").size() >= 3; }, 120));
    ::kill(static_cast<pid_t>(launcher.processId()), SIGTERM);
    const Finished f = finish(launcher, 120000);
    QVERIFY2(f.code == 0, qPrintable(f.err));
    const QRegularExpressionMatch stopped = QRegularExpression(QStringLiteral("stopped at step (\\d+)")).match(f.out);
    QVERIFY2(stopped.hasMatch(), qPrintable(f.out));
    const std::int64_t step = stopped.captured(1).toLongLong();
    QVERIFY(std::filesystem::exists(runlayout::checkpointFile(run.toStdString(), step)));
    // Both ranks stopped after the same step.
    QFile log(run + QStringLiteral("/logs/rank-1.txt"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(log.readAll()).contains(QStringLiteral("stopped at step %1").arg(step)));
}

void TestDistributed::nestedLaunchersAreRefused()
{
    const QString document = writeDocument(*m_dir, "tiny", tinyDocument("{}"));
    const Finished f = cli({"train", document, "--out", m_dir->filePath("nested"), "--nproc", "2"},
                           withVariables({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                                          {"MASTER_PORT", "1"}}));
    QCOMPARE(f.code, 2);
    QVERIFY2(f.err.contains(QStringLiteral("already rank 0 of 2")), qPrintable(f.err));
}

QTEST_GUILESS_MAIN(TestDistributed)
#include "tst_distributed.moc"
