#include "Snapshot.h"

#include <algorithm>

namespace widelab {

std::int64_t RoutingStats::totalTokens() const
{
    std::int64_t total = 0;
    for (const std::int64_t tokens : tokensPerExpert)
        total += tokens;
    return total;
}

double RoutingStats::share(std::int64_t expert) const
{
    const std::int64_t total = totalTokens();
    if (total <= 0 || expert < 0 || expert >= static_cast<std::int64_t>(tokensPerExpert.size()))
        return 0.0;
    return static_cast<double>(tokensPerExpert[static_cast<std::size_t>(expert)]) / static_cast<double>(total);
}

std::vector<double> RoutingStats::shares() const
{
    const double total = static_cast<double>(totalTokens());
    std::vector<double> out(tokensPerExpert.size(), 0.0);
    if (total > 0)
        for (std::size_t e = 0; e < out.size(); ++e)
            out[e] = static_cast<double>(tokensPerExpert[e]) / total;
    return out;
}

std::int64_t ValueHistogram::total() const
{
    std::int64_t total = 0;
    for (const std::int64_t count : counts)
        total += count;
    return total;
}

double ValueHistogram::quantile(double fraction) const
{
    const std::int64_t all = total();
    if (all <= 0)
        return 0.0;
    if (!(high > low))
        return low;
    const double target = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(all);
    const double width = (high - low) / static_cast<double>(counts.size());
    double below = 0.0;  // values in the buckets before
    for (std::size_t b = 0; b < counts.size(); ++b) {
        const auto count = static_cast<double>(counts[b]);
        if (count > 0 && below + count >= target)
            return low + (static_cast<double>(b) + (target - below) / count) * width;
        below += count;
    }
    return high;
}

std::string PathWeights::featureName(std::int64_t index) const
{
    if (index < paths)
        return "path " + std::to_string(index + 1);
    return "mean without path " + std::to_string(index - paths + 1);
}

std::vector<std::string> headRoleNames(bool languageModel)
{
    std::vector<std::string> names{"previous token", "next token", "first token", "self", "local", "broad"};
    if (languageModel) {
        names.emplace_back("duplicate token");
        names.emplace_back("induction");
    }
    return names;
}

}  // namespace widelab
