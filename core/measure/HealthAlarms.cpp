#include "HealthAlarms.h"

#include <cmath>
#include <cstdio>

namespace widelab {
namespace {

std::string expertName(std::int64_t block, std::int64_t expert)
{
    return "expert " + std::to_string(expert + 1) + " of block " + std::to_string(block + 1);
}

std::string percent(double share)
{
    char text[16];
    std::snprintf(text, sizeof text, "%.0f%%", 100.0 * share);
    return text;
}

std::string decimal(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

}  // namespace

bool HealthAlarms::set(const std::tuple<std::string, std::int64_t, std::int64_t, std::string>& key, bool on)
{
    bool& raised = m_raised[key];
    if (raised == on)
        return false;
    raised = on;
    return true;
}

std::vector<HealthEvent> HealthAlarms::update(const std::vector<RoutingStats>& routing,
                                              const std::vector<PathWeights>& paths, std::int64_t step)
{
    std::vector<HealthEvent> alarms;
    const std::string at = std::to_string(step);
    auto add = [&](const char* kind, bool raised, std::int64_t block, std::int64_t index, std::string text,
                   std::string sublayer = {}) {
        alarms.push_back({kind, raised ? "warning" : "info", block, index, std::move(sublayer), std::move(text)});
    };
    for (const RoutingStats& stats : routing) {
        const std::int64_t b = stats.block;
        std::vector<int>& idle = m_idle[b];
        idle.resize(stats.tokensPerExpert.size(), 0);
        std::int64_t total = 0;
        for (const std::int64_t tokens : stats.tokensPerExpert)
            total += tokens;
        for (std::size_t i = 0; i < stats.tokensPerExpert.size(); ++i) {
            const auto e = static_cast<std::int64_t>(i);
            const std::int64_t tokens = stats.tokensPerExpert[i];
            if (tokens > 0) {
                if (idle[i] >= m_options.deadAfter && set({"dead expert", b, e, ""}, false))
                    add("dead expert", false, b, e, expertName(b, e) + " receives tokens again at step " + at);
                idle[i] = 0;
            } else if (++idle[i] == m_options.deadAfter && set({"dead expert", b, e, ""}, true)) {
                add("dead expert", true, b, e,
                    expertName(b, e) + " received no tokens in the last " + std::to_string(m_options.deadAfter)
                        + " measurements (to step " + at + ")");
            }
            const double share = total > 0 ? static_cast<double>(tokens) / static_cast<double>(total) : 0.0;
            const bool collapsed = share > m_options.collapseShare;
            if (set({"collapse", b, e, ""}, collapsed)) {
                add("collapse", collapsed, b, e,
                    collapsed ? expertName(b, e) + " takes " + percent(share) + " of the block's tokens at step " + at
                                    + " (above " + percent(m_options.collapseShare) + ": routing is collapsing)"
                              : expertName(b, e) + " is back to " + percent(share) + " of the block's tokens at step "
                                    + at);
            }
        }
        if (std::isfinite(stats.zLoss) && stats.zLoss > 0.0) {
            auto lowest = m_lowestZLoss.find(b);
            if (lowest == m_lowestZLoss.end())
                lowest = m_lowestZLoss.emplace(b, stats.zLoss).first;
            lowest->second = std::min(lowest->second, stats.zLoss);
            const double low = lowest->second;
            const bool growing = stats.zLoss > m_options.zLossGrowth * low && stats.zLoss > low + 1.0;
            const bool calm = stats.zLoss < 0.5 * (1.0 + m_options.zLossGrowth) * low;
            const auto key = std::make_tuple(std::string("z-loss"), b, std::int64_t{-1}, std::string());
            if ((growing || calm) && set(key, growing)) {
                add("z-loss", growing, b, -1,
                    growing ? "the router z-loss of block " + std::to_string(b + 1) + " has grown to "
                                  + decimal(stats.zLoss) + " at step " + at + " (lowest " + decimal(low)
                                  + "): the router's logits are growing"
                            : "the router z-loss of block " + std::to_string(b + 1) + " is back to "
                                  + decimal(stats.zLoss) + " at step " + at);
            }
        }
    }
    for (const PathWeights& p : paths) {
        if (p.paths < 1)
            continue;
        const double start = 1.0 / std::sqrt(2.0 * static_cast<double>(p.paths));
        for (std::size_t i = 0; i < p.alpha.size(); ++i) {
            const auto f = static_cast<std::int64_t>(i);
            const double weight = std::abs(static_cast<double>(p.alpha[i]));
            const bool low = weight < m_options.pathWeightFloor * start;
            const bool recovered = weight > 2.0 * m_options.pathWeightFloor * start;
            if (!low && !recovered)
                continue;
            const std::string feature = f < p.paths ? "path " + std::to_string(f + 1)
                                                    : "the mean without path " + std::to_string(f - p.paths + 1);
            const std::string where = feature + " of block " + std::to_string(p.block + 1) + "'s " + p.sublayer;
            if (set({"path weight", p.block, f, p.sublayer}, low)) {
                add("path weight", low, p.block, f,
                    low ? "the weight of " + where + " has fallen to " + decimal(p.alpha[i]) + " at step " + at
                              + " (it started at " + decimal(start) + "): the path is switching off"
                        : "the weight of " + where + " is back to " + decimal(p.alpha[i]) + " at step " + at,
                    p.sublayer);
            }
        }
    }
    return alarms;
}

}  // namespace widelab
