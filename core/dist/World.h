#pragma once

// Which process of a distributed run this one is, as the launcher that started
// it says: torchrun (and `widelab-cli train --nproc`, which sets the same
// variables), Slurm's srun, or Open MPI's mpirun. Plain C++: no torch here, so
// that reading the environment is tested on its own.

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

struct World {
    int rank = 0;
    int size = 1;
    int localRank = 0;     // this process's place on its machine: its GPU, its share of the cores
    int localSize = 1;
    std::string masterAddress;  // where the rendezvous store listens
    int masterPort = 0;
    // The launcher hosts the rendezvous store (torchrun's agent, widelab-cli
    // --nproc): every rank connects to it. Otherwise rank 0 opens it.
    bool launcherHostsStore = false;
    std::string launcher;  // "torchrun", "slurm", "mpi" or "" for one process

    bool distributed() const { return size > 1; }
};

// A variable a launcher set that cannot be read; the message names it.
class WorldError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

using Environment = std::function<const char*(const char*)>;

// The world the environment describes: torchrun's RANK and WORLD_SIZE first,
// then srun's SLURM_PROCID with SLURM_STEP_NUM_TASKS, then Open MPI's
// OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE; one process when none is set.
// MASTER_ADDR and MASTER_PORT name the store; under Slurm they default to the
// step's first node and 29500 plus the job id modulo 1000, under MPI the address
// must be given. WorldError names the variable that is missing or malformed.
World worldFromEnvironment(const Environment& getenv);
World worldFromEnvironment();

// Rank `rank`'s share of a global batch of `batch`: consecutive, the first
// size % batch.size() ranks one longer; every example in exactly one share.
std::vector<std::int64_t> shareOf(const std::vector<std::int64_t>& batch, int rank, int size);
// Where that share starts in the global batch of `batchSize`.
std::int64_t shareBegin(std::int64_t batchSize, int rank, int size);

// Why this build cannot train on several processes ("" when it can): without
// Gloo's headers matching its LibTorch, it has no c10d backend (docs/distributed.md).
std::string distributedUnavailableReason();
inline bool distributedTrainingAvailable() { return distributedUnavailableReason().empty(); }

// The first host of a Slurm node list: "node[03-05,9],gpu1" gives "node03".
std::string firstSlurmHost(const std::string& nodeList);

}  // namespace widelab
