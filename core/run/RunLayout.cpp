#include "RunLayout.h"

#include <cstdio>

namespace widelab::runlayout {

std::string checkpointFileName(std::int64_t step)
{
    char name[40];
    std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(step));
    return name;
}

std::optional<std::int64_t> stepOfCheckpoint(std::string_view fileName)
{
    constexpr std::string_view prefix = "step-", suffix = ".pt";
    if (!fileName.starts_with(prefix) || !fileName.ends_with(suffix))
        return std::nullopt;
    const std::string_view digits = fileName.substr(prefix.size(), fileName.size() - prefix.size() - suffix.size());
    // Eight digits at least (as written); eighteen at most, which any int64 step fits.
    if (digits.size() < 8 || digits.size() > 18)
        return std::nullopt;
    std::int64_t step = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9')
            return std::nullopt;
        step = step * 10 + (c - '0');
    }
    return step;
}

}  // namespace widelab::runlayout
