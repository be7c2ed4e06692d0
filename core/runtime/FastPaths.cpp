#include "FastPaths.h"

#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

namespace widelab {
namespace {

const char* name(FastPath path)
{
    switch (path) {
    case FastPath::FusedAttention: return "fused_attention";
    case FastPath::FusedAdamW: return "fused_adamw";
    case FastPath::GradientOverlap: return "gradient_overlap";
    case FastPath::GroupedExperts: return "grouped_experts";
    case FastPath::BlockedAttention: return "blocked_attention";
    }
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
    for (const FastPath path :
         {FastPath::FusedAttention, FastPath::FusedAdamW, FastPath::GradientOverlap, FastPath::GroupedExperts,
          FastPath::BlockedAttention}) {
        if (fastPathEnabled(path))
            continue;
        if (!names.empty())  // appended piece by piece: GCC 12 warns falsely on "a" + b (bug 105329)
            names += ',';
        names += name(path);
    }
    return names;
}

}  // namespace widelab
