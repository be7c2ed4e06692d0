#include "GradientSync.h"

#include "runtime/Clock.h"
#include "runtime/FastPaths.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <unordered_set>

namespace widelab {
namespace {

class GradientReady : public torch::autograd::FunctionPostHook {
public:
    explicit GradientReady(std::function<void()> ready) : m_ready(std::move(ready)) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list&) override
    {
        m_ready();
        return outputs;
    }

private:
    std::function<void()> m_ready;
};

}  // namespace

GradientSync::GradientSync(Collective& collective, const std::vector<torch::Tensor>& parameters,
                           std::int64_t bucketBytes)
    : m_collective(collective), m_overlap(fastPathEnabled(FastPath::GradientOverlap))
{
    if (bucketBytes <= 0) {
        std::int64_t total = 0;
        for (const torch::Tensor& parameter : parameters)
            total += parameter.requires_grad() ? parameter.numel() * static_cast<std::int64_t>(sizeof(float)) : 0;
        bucketBytes = std::clamp<std::int64_t>(total / 8, std::int64_t{256} << 10, std::int64_t{25} << 20);
    }
    // Backward reaches the last layers first: buckets fill from the end.
    std::unordered_set<const void*> seen;
    std::int64_t bucketSize = 0;
    for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
        const torch::Tensor& parameter = *it;
        if (!parameter.requires_grad() || !seen.insert(parameter.unsafeGetTensorImpl()).second)
            continue;
        TORCH_CHECK(parameter.scalar_type() == torch::kFloat32, "GradientSync expects fp32 parameters");
        const std::int64_t bytes = parameter.numel() * static_cast<std::int64_t>(sizeof(float));
        if (m_buckets.empty() || (bucketSize > 0 && bucketSize + bytes > bucketBytes)) {
            m_buckets.emplace_back();
            bucketSize = 0;
        }
        Bucket& bucket = m_buckets.back();
        m_slots.push_back({parameter, m_buckets.size() - 1, bucketSize / static_cast<std::int64_t>(sizeof(float))});
        bucket.slots.push_back(m_slots.size() - 1);
        bucketSize += bytes;
    }
    for (Bucket& bucket : m_buckets) {
        std::int64_t numel = 0;
        for (const std::size_t slot : bucket.slots)
            numel += m_slots[slot].parameter.numel();
        bucket.flat = torch::zeros({numel}, m_slots[bucket.slots.front()].parameter.options().requires_grad(false));
    }
    for (std::size_t i = 0; i < m_slots.size(); ++i) {
        std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(m_slots[i].parameter);
        m_hooks.push_back(accumulator->add_post_hook(std::make_unique<GradientReady>([this, i] { ready(i); })));
        m_accumulators.push_back(std::move(accumulator));
    }
}

GradientSync::~GradientSync()
{
    // A step cut short (an exception in backward) may leave sends under way.
    for (Bucket& bucket : m_buckets) {
        try {
            bucket.pending.wait();
        } catch (const std::exception&) {
        }
    }
    for (std::size_t i = 0; i < m_accumulators.size(); ++i)
        m_accumulators[i]->del_post_hook(m_hooks[i]);
}

void GradientSync::beginStep(std::int64_t step)
{
    std::lock_guard lock(m_mutex);
    for (Bucket& bucket : m_buckets) {
        bucket.pending.wait();
        bucket.waiting = bucket.slots.size();
    }
    for (Slot& slot : m_slots)
        slot.filled = false;
    m_nextToSend = 0;
    m_step = step;
    m_sentDuringBackward = 0;
    m_armed = true;
}

void GradientSync::ready(std::size_t index)
{
    std::lock_guard lock(m_mutex);
    if (!m_armed)
        return;
    Slot& slot = m_slots[index];
    Bucket& bucket = m_buckets[slot.bucket];
    const torch::Tensor grad = slot.parameter.grad();
    if (!grad.defined() || slot.filled)
        return;
    bucket.flat.narrow(0, slot.offset, slot.parameter.numel()).copy_(grad.reshape({-1}));
    slot.filled = true;
    // WIDELAB_DISABLE=gradient_overlap holds every bucket for finish(), to measure what overlap hides.
    if (--bucket.waiting == 0 && m_overlap) {
        const std::size_t before = m_nextToSend;
        sendReady();
        m_sentDuringBackward += m_nextToSend - before;
    }
}

void GradientSync::sendReady()
{
    while (m_nextToSend < m_buckets.size() && m_buckets[m_nextToSend].waiting == 0) {
        Bucket& bucket = m_buckets[m_nextToSend];
        bucket.pending = m_collective.sumAsync(bucket.flat, "the gradients' all-reduce at step " + std::to_string(m_step + 1));
        ++m_nextToSend;
    }
}

void GradientSync::finish()
{
    const double start = steadySeconds();
    std::unique_lock lock(m_mutex);
    m_armed = false;
    // What this rank's batch did not reach is zero here (another rank's may not be).
    for (Slot& slot : m_slots) {
        if (slot.filled)
            continue;
        Bucket& bucket = m_buckets[slot.bucket];
        bucket.flat.narrow(0, slot.offset, slot.parameter.numel()).zero_();
        slot.filled = true;
        --bucket.waiting;
    }
    sendReady();
    for (Bucket& bucket : m_buckets)
        bucket.pending.wait();
    // Each gradient becomes its slice of the summed bucket: no copy back.
    for (Slot& slot : m_slots)
        slot.parameter.mutable_grad() = m_buckets[slot.bucket].flat.narrow(0, slot.offset, slot.parameter.numel())
                                            .view(slot.parameter.sizes());
    m_exposedSeconds = steadySeconds() - start;
}

}  // namespace widelab
