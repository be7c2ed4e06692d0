#include "Format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace widelab {

std::string shortCount(double value)
{
    if (!std::isfinite(value))
        return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
    static const char* const suffixes[] = {"", "k", "M", "B", "T"};
    int index = 0;
    // 999.5 and up prints as 1000 at three digits: move on to the next suffix.
    while (std::abs(value) >= 999.5 && index < 4) {
        value /= 1000.0;
        ++index;
    }
    char text[48];
    std::snprintf(text, sizeof text, index == 0 ? "%.0f%s" : "%.3g%s", value, suffixes[index]);
    return text;
}

std::string formatBytes(double bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int index = 0;
    // 1023.95 and up prints as 1024.0 at one decimal: move on to the next unit.
    while (std::abs(bytes) >= (index == 0 ? 1024.0 : 1023.95) && index < 4) {
        bytes /= 1024.0;
        ++index;
    }
    char text[48];
    std::snprintf(text, sizeof text, index == 0 ? "%.0f %s" : "%.1f %s", bytes, units[index]);
    return text;
}

std::string tableNumber(double value, int decimals)
{
    if (decimals <= 0 && std::isfinite(value) && std::abs(value) < 9e15)
        return groupDigits(std::llround(value));
    std::ostringstream text;
    text.setf(std::ios::fixed);
    text.precision(std::max(decimals, 0));
    text << value;
    return text.str();
}

std::string groupDigits(std::int64_t value)
{
    // Through unsigned, so that the magnitude of INT64_MIN is representable.
    const std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    const std::string digits = std::to_string(magnitude);
    // Built forwards, a comma before each group of three from the right
    // (inserting into the string instead draws a false GCC 12 -Wrestrict).
    std::string grouped = value < 0 ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            grouped += ',';
        grouped += digits[i];
    }
    return grouped;
}

}  // namespace widelab
