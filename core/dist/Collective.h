#pragma once

// The processes of a distributed run, joined in one torch.distributed (c10d)
// process group: Gloo between CPUs. Everything here is c10d's; this class only
// says, in the run's words, what went wrong (which rank, what it waited for).

#include "World.h"

#include <torch/types.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace c10d {
class Store;
}

namespace widelab {

// A collective that failed or timed out, or a world whose ranks disagree.
class CollectiveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Collective {
public:
    // Why this build cannot join a world of several processes, or "" when it can.
    static std::string unavailableReason();

    // Joins `world` (world.size > 1): rendezvous at MASTER_ADDR:MASTER_PORT, then
    // the process group. Waits at most `timeout` for every rank, then throws
    // CollectiveError naming the address and the ranks that did not come; the
    // same timeout bounds every collective afterwards.
    static std::shared_ptr<Collective> join(const World& world, std::chrono::milliseconds timeout);

    ~Collective();
    Collective(const Collective&) = delete;
    Collective& operator=(const Collective&) = delete;

    const World& world() const { return m_world; }
    int rank() const { return m_world.rank; }
    int size() const { return m_world.size; }
    std::chrono::milliseconds timeout() const { return m_timeout; }

    // An all-reduce under way; wait() returns once `tensor` holds the sum.
    class Pending {
    public:
        Pending() = default;
        void wait();
        bool active() const { return static_cast<bool>(m_work); }

    private:
        friend class Collective;
        std::shared_ptr<void> m_work;  // c10d's work item, kept opaque to includers
        const Collective* m_owner = nullptr;
        std::string m_what;
    };

    // Sums `tensor` (contiguous, on the CPU) over the ranks in place. `what` names
    // it in an error ("the gradients at step 12").
    Pending sumAsync(torch::Tensor& tensor, std::string what);
    void sum(torch::Tensor& tensor, std::string what);
    // The largest of each element over the ranks, in place.
    void largest(torch::Tensor& tensor, std::string what);
    // All-to-all: `input` (contiguous, on the CPU), whose first dimension is a
    // multiple of the world size, is cut into size() equal chunks; chunk r goes to
    // rank r. Returns what the ranks sent this one, rank q's chunk at q.
    torch::Tensor exchange(const torch::Tensor& input, std::string what);

    // Every rank's `value` for `key`, in rank order, through the rendezvous store.
    std::vector<std::string> gather(const std::string& key, const std::string& value);

    void barrier(const std::string& what);

    // Seconds this process has spent waiting for collectives to complete, in all:
    // its step time less this is what it computed (the slowest rank's is the step).
    double waitedSeconds() const { return m_waited; }

private:
    struct Group;
    Collective(World world, std::chrono::milliseconds timeout);
    [[noreturn]] void fail(const std::string& what, const std::exception& error) const;
    enum class Reduction { Sum, Largest };
    Pending reduceAsync(torch::Tensor& tensor, Reduction reduction, std::string what);

    World m_world;
    std::chrono::milliseconds m_timeout;
    std::unique_ptr<Group> m_group;
    std::int64_t m_gathers = 0;
    mutable double m_waited = 0.0;
};

// The rendezvous store of a world started on this machine, hosted by the
// process that starts the ranks, as torchrun's agent hosts it: on a free port
// of 127.0.0.1, which the ranks find in MASTER_PORT.
class RendezvousHost {
public:
    RendezvousHost();
    ~RendezvousHost();
    int port() const { return m_port; }

private:
    std::shared_ptr<c10d::Store> m_store;
    int m_port = 0;
};

}  // namespace widelab
