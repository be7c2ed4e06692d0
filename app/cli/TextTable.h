// defines: TextTable (aligned columns for terminal output), groupDigits, shortCount, durationText
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

// 12345678 -> "12,345,678"
std::string groupDigits(std::int64_t value);
// 12345678 -> "12.3M"
std::string shortCount(double value);
// 95 -> "1m35s", 3725 -> "1h02m" (a time left, a wall time)
std::string durationText(double seconds);

class TextTable {
public:
    explicit TextTable(std::vector<std::string> header);
    void addRow(std::vector<std::string> cells);
    void addRule();
    // First column left-aligned, the others right-aligned.
    std::string render() const;

private:
    std::vector<std::vector<std::string>> m_rows;  // an empty row is a rule
};

}  // namespace widelab
