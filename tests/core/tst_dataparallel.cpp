// Tests of the pieces of data-parallel training that one process can check:
// which rank the launcher's variables make this process (dist/World), each
// rank's share of a batch, and GradientSync's buckets in a world of one (sent
// only once complete, in one order, an unreached parameter counted as zero).
// Several processes are tested by tests/app/tst_distributed.
#include "TestSupport.h"
#include "dist/Collective.h"
#include "dist/GradientSync.h"
#include "dist/World.h"

#include <QtTest>

#include <map>

using namespace widelab;

namespace {

World worldOf(const std::map<std::string, std::string>& variables)
{
    return worldFromEnvironment([&](const char* name) -> const char* {
        const auto it = variables.find(name);
        return it == variables.end() ? nullptr : it->second.c_str();
    });
}

QString errorOf(const std::map<std::string, std::string>& variables)
{
    try {
        worldOf(variables);
    } catch (const WorldError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

// A world of one process, its store hosted here: GradientSync's logic without a second process.
struct WorldOfOne {
    RendezvousHost host;
    std::shared_ptr<Collective> collective;
    WorldOfOne()
    {
        World world;
        world.masterAddress = "127.0.0.1";
        world.masterPort = host.port();
        world.launcherHostsStore = true;
        collective = Collective::join(world, std::chrono::seconds(20));
    }
};

}  // namespace

class TestDataParallel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noLauncherIsOneProcess();
    void torchrunVariablesNameTheRank();
    void slurmStepNamesTheRankAndFirstNode();
    void openMpiNeedsAMasterAddress();
    void malformedVariablesAreNamed();
    void slurmNodeListsGiveTheirFirstHost();
    void sharesCoverTheBatchOnce();
    void sharedWeightIsSentOnceComplete();
    void bucketsAreSentInOneOrder();
};

void TestDataParallel::noLauncherIsOneProcess()
{
    const World world = worldOf({{"PATH", "/usr/bin"}});
    QCOMPARE(world.size, 1);
    QVERIFY(!world.distributed());
    // srun's variables outside a step (salloc's shell) do not make a world either.
    QVERIFY(!worldOf({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}).distributed());
}

void TestDataParallel::torchrunVariablesNameTheRank()
{
    const World world = worldOf({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                                 {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"},
                                 {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
    QCOMPARE(world.rank, 5);
    QCOMPARE(world.size, 8);
    QCOMPARE(world.localRank, 1);
    QCOMPARE(world.localSize, 4);
    QCOMPARE(world.masterAddress, std::string("node7"));
    QCOMPARE(world.masterPort, 29400);
    QVERIFY(world.launcherHostsStore);
    QCOMPARE(world.launcher, std::string("torchrun"));
    // Without the agent's store, rank 0 opens it.
    QVERIFY(!worldOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}})
                 .launcherHostsStore);
}

void TestDataParallel::slurmStepNamesTheRankAndFirstNode()
{
    // srun -N 2 --ntasks-per-node 8: the 11th task, on the second node.
    const World world = worldOf({{"SLURM_PROCID", "10"}, {"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_LOCALID", "2"},
                                 {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"}, {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                                 {"SLURM_JOB_ID", "123456"}});
    QCOMPARE(world.launcher, std::string("slurm"));
    QCOMPARE(world.rank, 10);
    QCOMPARE(world.size, 16);
    QCOMPARE(world.localRank, 2);
    QCOMPARE(world.localSize, 8);
    QCOMPARE(world.masterAddress, std::string("gpu07"));
    QCOMPARE(world.masterPort, 29500 + 456);  // the job's own port: 123456 % 1000
    QVERIFY(!world.launcherHostsStore);
    // MASTER_ADDR and MASTER_PORT, when given, win.
    const World given = worldOf({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                 {"MASTER_PORT", "4000"}, {"SLURM_STEP_NODELIST", "gpu07"}});
    QCOMPARE(given.masterAddress, std::string("10.0.0.1"));
    QCOMPARE(given.masterPort, 4000);
}

void TestDataParallel::openMpiNeedsAMasterAddress()
{
    const World world = worldOf({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                 {"MASTER_ADDR", "127.0.0.1"}});
    QCOMPARE(world.launcher, std::string("mpi"));
    QCOMPARE(world.rank, 1);
    QCOMPARE(world.localRank, 1);
    QCOMPARE(world.masterPort, 29500);
    const QString error = errorOf({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    QVERIFY2(error.contains(QLatin1String("MASTER_ADDR")) && error.contains(QLatin1String("-x")), qPrintable(error));
}

void TestDataParallel::malformedVariablesAreNamed()
{
    QString error = errorOf({{"RANK", "two"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
    QVERIFY2(error.contains(QLatin1String("RANK=two")), qPrintable(error));
    error = errorOf({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
    QVERIFY2(error.contains(QLatin1String("RANK=4 is not below WORLD_SIZE=4")), qPrintable(error));
    error = errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
    QVERIFY2(error.contains(QLatin1String("MASTER_PORT is not set")), qPrintable(error));
    error = errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}});
    QVERIFY2(error.contains(QLatin1String("MASTER_PORT=70000")), qPrintable(error));
    error = errorOf({{"RANK", "0"}});
    QVERIFY2(error.contains(QLatin1String("WORLD_SIZE is not set")), qPrintable(error));
}

void TestDataParallel::slurmNodeListsGiveTheirFirstHost()
{
    QCOMPARE(firstSlurmHost("node1"), std::string("node1"));
    QCOMPARE(firstSlurmHost("node1,node2"), std::string("node1"));
    QCOMPARE(firstSlurmHost("node[03-05,9],gpu1"), std::string("node03"));
    QCOMPARE(firstSlurmHost("rack2-n[9,11]"), std::string("rack2-n9"));
}

void TestDataParallel::sharesCoverTheBatchOnce()
{
    // 7 examples over 3 ranks: 3, 2, 2, in order.
    const std::vector<std::int64_t> batch{10, 11, 12, 13, 14, 15, 16};
    QCOMPARE(shareOf(batch, 0, 3), (std::vector<std::int64_t>{10, 11, 12}));
    QCOMPARE(shareOf(batch, 1, 3), (std::vector<std::int64_t>{13, 14}));
    QCOMPARE(shareOf(batch, 2, 3), (std::vector<std::int64_t>{15, 16}));
    QCOMPARE(shareBegin(7, 0, 3), std::int64_t{0});
    QCOMPARE(shareBegin(7, 1, 3), std::int64_t{3});
    QCOMPARE(shareBegin(7, 2, 3), std::int64_t{5});
    QCOMPARE(shareOf(batch, 0, 1), batch);
}

void TestDataParallel::sharedWeightIsSentOnceComplete()
{
    if (const std::string reason = Collective::unavailableReason(); !reason.empty())
        QSKIP(reason.c_str());
    WorldOfOne world;
    // w is used twice (as WideNet's shared weights are, once per block): its
    // gradient is a + b only after both uses; the bucket must hold that sum.
    torch::Tensor w = torch::tensor({1.0f, 2.0f, 3.0f}).requires_grad_(true);
    torch::Tensor v = torch::tensor({0.5f}).requires_grad_(true);
    const torch::Tensor a = torch::tensor({1.0f, 10.0f, 100.0f}), b = torch::tensor({2.0f, 20.0f, 200.0f});
    GradientSync sync(*world.collective, {v, w}, /*bucketBytes=*/4);  // a bucket each
    QCOMPARE(sync.buckets(), std::size_t{2});
    for (int step = 0; step < 2; ++step) {
        w.mutable_grad() = torch::Tensor();
        v.mutable_grad() = torch::Tensor();
        sync.beginStep(step);
        const torch::Tensor first = (w * a).sum();
        const torch::Tensor second = (w * b * v).sum();  // d/dv = w.b = 2 + 40 + 600
        (first + second).backward();
        QCOMPARE(sync.sentDuringBackward(), std::size_t{2});
        sync.finish();
        // d/dw = a + v b = (1 + 1, 10 + 10, 100 + 100)
        QVERIFY(torch::equal(w.grad(), torch::tensor({2.0f, 20.0f, 200.0f})));
        QVERIFY(torch::equal(v.grad(), torch::tensor({642.0f})));
    }
}

void TestDataParallel::bucketsAreSentInOneOrder()
{
    if (const std::string reason = Collective::unavailableReason(); !reason.empty())
        QSKIP(reason.c_str());
    WorldOfOne world;
    torch::Tensor used = torch::tensor({3.0f}).requires_grad_(true);
    torch::Tensor unused = torch::tensor({7.0f}).requires_grad_(true);
    const torch::Tensor x = torch::tensor({2.0f});
    {
        // Buckets fill from the last parameter: `unused` is bucket 0, which no
        // backward pass completes, so `used` (bucket 1) waits for finish() too,
        // on every rank alike.
        GradientSync sync(*world.collective, {used, unused}, 4);
        sync.beginStep(0);
        (used * x).sum().backward();
        QCOMPARE(sync.sentDuringBackward(), std::size_t{0});
        sync.finish();
        QVERIFY(torch::equal(used.grad(), torch::tensor({2.0f})));
        // Another rank's batch may reach it: here it is zero, and defined.
        QVERIFY(unused.grad().defined());
        QVERIFY(torch::equal(unused.grad(), torch::tensor({0.0f})));
    }
    used.mutable_grad() = torch::Tensor();
    unused.mutable_grad() = torch::Tensor();
    GradientSync sync(*world.collective, {unused, used}, 4);  // now `used` is bucket 0
    sync.beginStep(0);
    (used * x).sum().backward();
    QCOMPARE(sync.sentDuringBackward(), std::size_t{1});
    sync.finish();
    QVERIFY(torch::equal(used.grad(), torch::tensor({2.0f})));
    // A backward pass outside a step (a measurement on one rank) sends nothing.
    used.mutable_grad() = torch::Tensor();
    (used * x).sum().backward();
    QCOMPARE(sync.sentDuringBackward(), std::size_t{1});
}

QTEST_GUILESS_MAIN(TestDataParallel)
#include "tst_dataparallel.moc"
