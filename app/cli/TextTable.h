// defines: TextTable (aligned columns for terminal output), durationText; with
// vocab/Format.h's groupDigits and shortCount, how the terminal writes numbers
#pragma once

#include "vocab/Format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

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
