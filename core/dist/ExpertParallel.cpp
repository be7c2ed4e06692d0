#include "ExpertParallel.h"

#include <ATen/core/ivalue.h>
#include <torch/autograd.h>

#include <stdexcept>

namespace widelab {
namespace {

struct Exchange : torch::CustomClassHolder {
    Exchange(Collective& world_, std::string what_) : world(world_), what(std::move(what_)) {}
    Collective& world;
    std::string what;
};

// An all-to-all of equal chunks in the autograd graph. Its backward is the same
// exchange of the gradients: rank q's chunk r went to rank r as its chunk q, so
// the gradient of that chunk comes back the same way.
class AllToAll : public torch::autograd::Function<AllToAll> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* context, const torch::Tensor& input,
                                 const c10::intrusive_ptr<Exchange>& exchange)
    {
        context->saved_data["exchange"] = c10::IValue::make_capsule(exchange);
        return exchange->world.exchange(input, exchange->what);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                   torch::autograd::variable_list gradients)
    {
        const auto exchange = c10::static_intrusive_pointer_cast<Exchange>(context->saved_data["exchange"].toCapsule());
        return {exchange->world.exchange(gradients[0], "the gradients of " + exchange->what), torch::Tensor()};
    }
};

torch::Tensor allToAll(Collective& world, const torch::Tensor& input, std::string what)
{
    return AllToAll::apply(input, c10::make_intrusive<Exchange>(world, std::move(what)));
}

}  // namespace

ExpertParallel::ExpertParallel(Collective& world, std::int64_t experts)
    : m_world(world), m_experts(experts), m_first(experts / world.size() * world.rank()),
      m_count(experts / world.size())
{
}

std::string ExpertParallel::unsplittableReason(const ModelConfig& model, int processes)
{
    if (!model.isMoe())
        return "the model has no experts to split (model.experts is " + std::to_string(model.experts) + ")";
    if (model.experts % processes != 0)
        return std::to_string(model.experts) + " experts (model.experts) cannot be split evenly over "
               + std::to_string(processes) + " processes; use a number of processes that divides them";
    return {};
}

std::shared_ptr<ExpertParallel> ExpertParallel::split(Collective& world, WideTransformerImpl& model)
{
    const ModelConfig& c = model.config();
    if (const std::string reason = unsplittableReason(c, world.size()); !reason.empty())
        throw std::invalid_argument("train.expert_parallel: " + reason);
    std::shared_ptr<ExpertParallel> parallel(new ExpertParallel(world, c.experts));
    model.placeExperts(parallel, parallel->m_first, parallel->m_count);
    parallel->m_parameters = model.expertParameters();
    for (const torch::Tensor& p : parallel->m_parameters)
        parallel->m_held.insert(p.unsafeGetTensorImpl());
    return parallel;
}

bool ExpertParallel::holds(const torch::Tensor& parameter) const
{
    return m_held.count(parameter.unsafeGetTensorImpl()) > 0;
}

torch::Tensor ExpertParallel::gather(const torch::Tensor& own, const std::string& what)
{
    std::vector<std::int64_t> shape = own.sizes().vec();
    shape.front() = m_experts;
    // Each rank's rows in place, zeros elsewhere: the sum is every expert, exactly.
    torch::Tensor every = torch::zeros(shape, own.options());
    every.narrow(0, m_first, m_count).copy_(own);
    m_world.sum(every, "gathering " + what);
    return m_world.rank() == 0 ? every : torch::Tensor();
}

torch::Tensor ExpertParallel::own(const torch::Tensor& every) const
{
    return every.narrow(0, m_first, m_count).clone();
}

void ExpertParallel::sum(torch::Tensor& tensor, const std::string& what) { m_world.sum(tensor, what); }

torch::Tensor ExpertParallel::run(const torch::Tensor& buffer, FeedForwardImpl& localExperts)
{
    // E experts, L = E / W of them on each of W ranks, C slots, D = width
    const std::int64_t W = m_world.size(), L = m_count, C = buffer.size(1), D = buffer.size(2);
    torch::Tensor largest = torch::full({1}, static_cast<double>(C), torch::kFloat64);
    m_world.largest(largest, "agreeing on the experts' slots");
    const auto S = static_cast<std::int64_t>(largest.item<double>());
    const torch::Tensor sent = S > C ? torch::constant_pad_nd(buffer, {0, 0, 0, S - C}) : buffer;  // [E, S, D]
    // Chunk r, experts [r L, (r + 1) L), goes to rank r; chunk q of what comes back is rank q's tokens.
    const torch::Tensor received = allToAll(m_world, sent.reshape({W, L, S, D}), "the tokens sent to the experts");
    const torch::Tensor answers =
        localExperts.forwardEach(received.permute({1, 0, 2, 3}).reshape({L, W * S, D}));  // [L, W S, D]
    const torch::Tensor returned = allToAll(m_world, answers.view({L, W, S, D}).permute({1, 0, 2, 3}).contiguous(),
                                            "the experts' answers");  // [W, L, S, D]: [E, S, D]
    return returned.view({W * L, S, D}).narrow(1, 0, C);
}

}  // namespace widelab
