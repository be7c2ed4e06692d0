#include "Snapshot.h"

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
