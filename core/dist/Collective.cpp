#include "Collective.h"

#include "runtime/Clock.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if WIDELAB_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <cstdlib>

namespace widelab {
namespace {

#if WIDELAB_HAVE_GLOO
using Backend = c10d::ProcessGroupGloo;
#endif

std::string seconds(std::chrono::milliseconds timeout)
{
    return std::to_string((timeout.count() + 999) / 1000) + " s";
}

// A store that is reached but does not answer as this LibTorch's does: one
// opened by a launcher of another torch version speaks another protocol.
CollectiveError otherProtocol(int rank, const std::string& where, const std::string& what)
{
    return CollectiveError("rank " + std::to_string(rank) + " reached the rendezvous store at " + where
                           + " but cannot use it (" + what + "): a store opened by another version of torch "
                           "(torchrun's agent) speaks another protocol; launch with the torchrun of the LibTorch "
                           "this WideLab was built with (" TORCH_VERSION ")");
}

bool loopback(const std::string& address)
{
    return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

}  // namespace

struct Collective::Group {
    c10::intrusive_ptr<c10d::Store> store;
#if WIDELAB_HAVE_GLOO
    c10::intrusive_ptr<Backend> backend;
#endif
};

std::string Collective::unavailableReason() { return distributedUnavailableReason(); }

Collective::Collective(World world, std::chrono::milliseconds timeout)
    : m_world(std::move(world)), m_timeout(timeout), m_group(std::make_unique<Group>())
{
}

Collective::~Collective() = default;

std::shared_ptr<Collective> Collective::join(const World& world, std::chrono::milliseconds timeout)
{
    if (const std::string reason = unavailableReason(); !reason.empty())
        throw CollectiveError(reason);
    std::shared_ptr<Collective> collective(new Collective(world, timeout));
    Group& group = *collective->m_group;
    const std::string where = world.masterAddress + ":" + std::to_string(world.masterPort);
    const bool opensStore = !world.launcherHostsStore && world.rank == 0;
    try {
        c10d::TCPStoreOptions options;
        options.port = static_cast<std::uint16_t>(world.masterPort);
        options.isServer = opensStore;
        options.numWorkers = static_cast<std::size_t>(world.size);
        options.waitWorkers = false;
        options.timeout = timeout;
        const auto tcp = c10::make_intrusive<c10d::TCPStore>(world.masterAddress, options);
        // torchrun's agent keeps its store across restarts: each attempt's keys apart.
        const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
        group.store = c10::make_intrusive<c10d::PrefixStore>(std::string("widelab/") + (restart ? restart : "0"), tcp);
    } catch (const std::exception& error) {
        throw CollectiveError("rank " + std::to_string(world.rank) + " could not "
                              + (opensStore ? "open the rendezvous store at " : "reach the rendezvous store at ") + where
                              + " within " + seconds(timeout) + " (MASTER_ADDR, MASTER_PORT): " + error.what());
    }
    // Every rank checks in, so that one that never comes is named.
    try {
        group.store->set("joined/" + std::to_string(world.rank), std::vector<std::uint8_t>{1});
    } catch (const std::exception& error) {
        throw otherProtocol(world.rank, where, error.what());
    }
    try {
        std::vector<std::string> keys;
        for (int r = 0; r < world.size; ++r)
            keys.push_back("joined/" + std::to_string(r));
        group.store->wait(keys, timeout);
    } catch (const std::exception&) {
        std::string missing;
        int count = 0;
        for (int r = 0; r < world.size; ++r) {
            bool present = false;
            try {
                present = group.store->check({"joined/" + std::to_string(r)});
            } catch (const std::exception& error) {
                throw otherProtocol(world.rank, where, error.what());
            }
            if (!present && r == world.rank)  // its own check-in lost: the store is not one it can use
                throw otherProtocol(world.rank, where, "its own key is not found there");
            if (!present && count++ < 8)
                missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
        throw CollectiveError("rank " + std::to_string(world.rank) + " waited " + seconds(timeout) + " at " + where
                              + " for the other processes of a world of " + std::to_string(world.size)
                              + "; rank" + (count == 1 ? " " : "s ") + (missing.empty() ? "?" : missing)
                              + (count > 8 ? " and others" : "") + " never joined");
    }
#if WIDELAB_HAVE_GLOO
    try {
        auto options = Backend::Options::create(timeout);
        if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
            options->devices.push_back(Backend::createDeviceForInterface(interface));
        else if (loopback(world.masterAddress))
            options->devices.push_back(Backend::createDeviceForHostname("127.0.0.1"));
        else
            options->devices.push_back(Backend::createDefaultDevice());
        options->threads = 2;
        group.backend = c10::make_intrusive<Backend>(group.store, world.rank, world.size, options);
    } catch (const std::exception& error) {
        throw CollectiveError("rank " + std::to_string(world.rank) + " could not connect to the other ranks ("
                              + where + "): " + error.what());
    }
#endif
    return collective;
}

void Collective::fail(const std::string& what, const std::exception& error) const
{
    throw CollectiveError("rank " + std::to_string(rank()) + ": " + what + " failed (another rank stopped, or none "
                          "answered within " + seconds(m_timeout) + "): " + error.what());
}

void Collective::Pending::wait()
{
    if (!m_work)
        return;
#if WIDELAB_HAVE_GLOO  // without Gloo no collective starts, so there is nothing to wait for
    auto work = std::static_pointer_cast<c10::intrusive_ptr<c10d::Work>>(m_work);
    m_work.reset();
    const double start = steadySeconds();
    try {
        (*work)->wait();
    } catch (const std::exception& error) {
        m_owner->fail(m_what, error);
    }
    m_owner->m_waited += steadySeconds() - start;
#endif
}

Collective::Pending Collective::reduceAsync(torch::Tensor& tensor, Reduction reduction, std::string what)
{
    Pending pending;
    pending.m_owner = this;
    pending.m_what = std::move(what);
#if WIDELAB_HAVE_GLOO
    try {
        std::vector<at::Tensor> tensors{tensor};
        c10d::AllreduceOptions options;
        options.reduceOp = reduction == Reduction::Sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
        pending.m_work = std::make_shared<c10::intrusive_ptr<c10d::Work>>(m_group->backend->allreduce(tensors, options));
    } catch (const std::exception& error) {
        fail(pending.m_what, error);
    }
#endif
    return pending;
}

Collective::Pending Collective::sumAsync(torch::Tensor& tensor, std::string what)
{
    return reduceAsync(tensor, Reduction::Sum, std::move(what));
}

void Collective::sum(torch::Tensor& tensor, std::string what)
{
    reduceAsync(tensor, Reduction::Sum, std::move(what)).wait();
}

void Collective::largest(torch::Tensor& tensor, std::string what)
{
    reduceAsync(tensor, Reduction::Largest, std::move(what)).wait();
}

torch::Tensor Collective::exchange(const torch::Tensor& input, std::string what)
{
    torch::Tensor sent = input.contiguous();
    torch::Tensor output = torch::empty_like(sent);
    Pending pending;
    pending.m_owner = this;
    pending.m_what = std::move(what);
#if WIDELAB_HAVE_GLOO
    try {
        std::vector<std::int64_t> equalSplits;  // empty: size() equal chunks
        c10d::AllToAllOptions options;
        pending.m_work = std::make_shared<c10::intrusive_ptr<c10d::Work>>(
            m_group->backend->alltoall_base(output, sent, equalSplits, equalSplits, options));
    } catch (const std::exception& error) {
        fail(pending.m_what, error);
    }
#endif
    pending.wait();
    return output;
}

std::vector<std::string> Collective::gather(const std::string& key, const std::string& value)
{
    const std::string prefix = "gather/" + std::to_string(m_gathers++) + "/" + key + "/";
    std::vector<std::string> values;
    try {
        m_group->store->set(prefix + std::to_string(rank()), std::vector<std::uint8_t>(value.begin(), value.end()));
        for (int r = 0; r < size(); ++r) {
            const std::vector<std::uint8_t> bytes = m_group->store->get(prefix + std::to_string(r));
            values.emplace_back(bytes.begin(), bytes.end());
        }
    } catch (const std::exception& error) {
        fail("gathering each rank's " + key, error);
    }
    return values;
}

void Collective::barrier(const std::string& what)
{
#if WIDELAB_HAVE_GLOO
    try {
        m_group->backend->barrier()->wait();
    } catch (const std::exception& error) {
        fail(what, error);
    }
#endif
}

RendezvousHost::RendezvousHost()
{
    c10d::TCPStoreOptions options;
    options.port = 0;  // any free one
    options.isServer = true;
    options.waitWorkers = false;
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
    m_port = store->getPort();
    // Held by a shared_ptr that owns one reference of the intrusive one.
    m_store = std::shared_ptr<c10d::Store>(store.release(), [](c10d::Store* s) {
        c10::intrusive_ptr<c10d::Store>::reclaim(s);
    });
}

RendezvousHost::~RendezvousHost() = default;

}  // namespace widelab
