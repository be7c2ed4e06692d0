#include "FastPaths.h"

#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

namespace widelab {
namespace {

// Every path with its name in WIDELAB_DISABLE, in the order the runtime summary lists them.
struct Named {
    FastPath path;
    const char* name;
};
constexpr Named kPaths[] = {
    {FastPath::FusedAttention, "fused_attention"},   {FastPath::FusedAdamW, "fused_adamw"},
    {FastPath::GradientOverlap, "gradient_overlap"}, {FastPath::GroupedExperts, "grouped_experts"},
    {FastPath::BlockedAttention, "blocked_attention"}, {FastPath::AmxAttention, "amx_attention"},
    {FastPath::FusedRouting, "fused_routing"},
    {FastPath::BatchedProduct, "batched_product"},   {FastPath::FusedActivation, "fused_activation"},
    {FastPath::NormToBf16, "norm_to_bf16"},          {FastPath::ResidualNorm, "residual_norm"},
    {FastPath::FusedExpertRows, "fused_expert_rows"}, {FastPath::ClsRowOnly, "cls_row_only"},
    {FastPath::OneDnnProducts, "onednn_products"},
};

const char* name(FastPath path)
{
    for (const Named& named : kPaths)
        if (named.path == path)
            return named.name;
    return "";
}

bool listed(const std::string& list, const std::string& item)
{
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        if (list.compare(start, end - start, item) == 0)
            return true;
        start = end + 1;
    }
    return false;
}

const std::string& disabledList()
{
    static const std::string list = [] {
        const char* value = std::getenv("WIDELAB_DISABLE");
        return std::string(value ? value : "");
    }();
    return list;
}

}  // namespace

bool fastPathEnabled(FastPath path) { return !listed(disabledList(), name(path)); }

bool fusedAttentionRuns(bool onCpu, double dropout)
{
    return TORCH_VERSION_MAJOR >= 2 && fastPathEnabled(FastPath::FusedAttention) && (!onCpu || dropout <= 0.0);
}

std::string disabledFastPaths()
{
    std::string names;
    for (const auto& [path, pathName] : kPaths) {
        if (fastPathEnabled(path))
            continue;
        if (!names.empty())  // appended piece by piece: GCC 12 warns falsely on "a" + b (bug 105329)
            names += ',';
        names += pathName;
    }
    return names;
}

}  // namespace widelab
