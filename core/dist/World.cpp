#include "World.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace widelab {
namespace {

const char* variable(const Environment& getenv, const char* name)
{
    const char* value = getenv(name);
    return value && *value ? value : nullptr;
}

int integerVariable(const Environment& getenv, const char* name, int lowest, int highest)
{
    const char* text = variable(getenv, name);
    if (!text)
        throw WorldError(std::string(name) + " is not set; the launcher sets it for every process");
    int value = 0;
    const std::string s = text;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (error != std::errc() || end != s.data() + s.size() || value < lowest || value > highest)
        throw WorldError(std::string(name) + "=" + s + " is not a whole number from " + std::to_string(lowest)
                         + " to " + std::to_string(highest));
    return value;
}

int optionalInteger(const Environment& getenv, const char* name, int fallback, int lowest, int highest)
{
    return variable(getenv, name) ? integerVariable(getenv, name, lowest, highest) : fallback;
}

void checkRank(const World& world, const char* rankName, const char* sizeName)
{
    if (world.rank >= world.size)
        throw WorldError(std::string(rankName) + "=" + std::to_string(world.rank) + " is not below " + sizeName + "="
                         + std::to_string(world.size));
    if (world.localRank >= world.localSize)
        throw WorldError("the local rank " + std::to_string(world.localRank) + " is not below the local size "
                         + std::to_string(world.localSize));
}

}  // namespace

std::int64_t shareBegin(std::int64_t batchSize, int rank, int size)
{
    return rank * (batchSize / size) + std::min<std::int64_t>(rank, batchSize % size);
}

std::vector<std::int64_t> shareOf(const std::vector<std::int64_t>& batch, int rank, int size)
{
    const auto n = static_cast<std::int64_t>(batch.size());
    const std::int64_t begin = shareBegin(n, rank, size), end = shareBegin(n, rank + 1, size);
    return {batch.begin() + begin, batch.begin() + end};
}

std::string firstSlurmHost(const std::string& nodeList)
{
    // The first entry ends at a comma outside brackets.
    std::size_t end = 0;
    int depth = 0;
    for (; end < nodeList.size(); ++end) {
        const char c = nodeList[end];
        if (c == '[')
            ++depth;
        else if (c == ']')
            --depth;
        else if (c == ',' && depth == 0)
            break;
    }
    const std::string entry = nodeList.substr(0, end);
    const std::size_t open = entry.find('[');
    if (open == std::string::npos)
        return entry;
    // "node[03-05,9]": the prefix and the first number of the range, its zeros kept.
    std::size_t stop = open + 1;
    while (stop < entry.size() && entry[stop] != '-' && entry[stop] != ',' && entry[stop] != ']')
        ++stop;
    return entry.substr(0, open) + entry.substr(open + 1, stop - open - 1);
}

World worldFromEnvironment(const Environment& getenv)
{
    constexpr int kMaxRanks = 1 << 20;
    World world;
    if (variable(getenv, "RANK") || variable(getenv, "WORLD_SIZE")) {
        world.launcher = "torchrun";
        world.size = integerVariable(getenv, "WORLD_SIZE", 1, kMaxRanks);
        world.rank = integerVariable(getenv, "RANK", 0, kMaxRanks);
        world.localSize = optionalInteger(getenv, "LOCAL_WORLD_SIZE", world.size, 1, kMaxRanks);
        world.localRank = optionalInteger(getenv, "LOCAL_RANK", world.rank % world.localSize, 0, kMaxRanks);
        checkRank(world, "RANK", "WORLD_SIZE");
        const char* agentStore = variable(getenv, "TORCHELASTIC_USE_AGENT_STORE");
        world.launcherHostsStore = agentStore && (std::string(agentStore) == "True" || std::string(agentStore) == "1");
    } else if (variable(getenv, "SLURM_PROCID") && variable(getenv, "SLURM_STEP_NUM_TASKS")) {
        world.launcher = "slurm";
        world.size = integerVariable(getenv, "SLURM_STEP_NUM_TASKS", 1, kMaxRanks);
        world.rank = integerVariable(getenv, "SLURM_PROCID", 0, kMaxRanks);
        world.localRank = optionalInteger(getenv, "SLURM_LOCALID", 0, 0, kMaxRanks);
        // "8(x2)" or "8,7": this node's count leads when the nodes are alike.
        world.localSize = optionalInteger(getenv, "SLURM_NTASKS_PER_NODE", world.size, 1, kMaxRanks);
        if (const char* perNode = variable(getenv, "SLURM_STEP_TASKS_PER_NODE")) {
            const std::string text = perNode;
            int count = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
            if (error == std::errc() && count >= 1 && end != text.data())
                world.localSize = count;
        }
        checkRank(world, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS");
    } else if (variable(getenv, "OMPI_COMM_WORLD_RANK")) {
        world.launcher = "mpi";
        world.size = integerVariable(getenv, "OMPI_COMM_WORLD_SIZE", 1, kMaxRanks);
        world.rank = integerVariable(getenv, "OMPI_COMM_WORLD_RANK", 0, kMaxRanks);
        world.localSize = optionalInteger(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", world.size, 1, kMaxRanks);
        world.localRank = optionalInteger(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0, kMaxRanks);
        checkRank(world, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    }
    if (!world.distributed())
        return world;

    if (const char* address = variable(getenv, "MASTER_ADDR")) {
        world.masterAddress = address;
    } else if (world.launcher == "slurm") {
        const char* nodes = variable(getenv, "SLURM_STEP_NODELIST");
        if (!nodes)
            nodes = variable(getenv, "SLURM_JOB_NODELIST");
        if (!nodes)
            throw WorldError("MASTER_ADDR is not set and neither is SLURM_STEP_NODELIST or SLURM_JOB_NODELIST");
        world.masterAddress = firstSlurmHost(nodes);
    } else if (world.launcher == "mpi") {
        throw WorldError("MASTER_ADDR is not set: under mpirun, pass the first host's address with -x MASTER_ADDR=HOST");
    } else {
        throw WorldError("MASTER_ADDR is not set; torchrun sets it for every process");
    }
    if (variable(getenv, "MASTER_PORT"))
        world.masterPort = integerVariable(getenv, "MASTER_PORT", 1, 65535);
    else if (world.launcher == "slurm" && variable(getenv, "SLURM_JOB_ID"))
        world.masterPort = 29500 + integerVariable(getenv, "SLURM_JOB_ID", 0, 2147483647) % 1000;
    else if (world.launcher == "torchrun")
        throw WorldError("MASTER_PORT is not set; torchrun sets it for every process");
    else
        world.masterPort = 29500;
    return world;
}

std::string distributedUnavailableReason()
{
#if WIDELAB_HAVE_GLOO
    return {};
#else
    return "this build of WideLab has no torch.distributed backend: it was built without Gloo's headers matching "
           "its LibTorch (Debian's libgloo-dev for Debian's LibTorch 1.13; see docs/distributed.md)";
#endif
}

World worldFromEnvironment()
{
    return worldFromEnvironment([](const char* name) { return std::getenv(name); });
}

}  // namespace widelab
