#include "TextTable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace widelab {

TextTable::TextTable(std::vector<std::string> header) { m_rows.push_back(std::move(header)); addRule(); }

void TextTable::addRow(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }

void TextTable::addRule() { m_rows.emplace_back(); }

std::string TextTable::render() const
{
    std::vector<std::size_t> widths;
    for (const auto& row : m_rows) {
        widths.resize(std::max(widths.size(), row.size()));
        for (std::size_t i = 0; i < row.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());
    }
    std::size_t lineWidth = 0;
    for (const auto w : widths)
        lineWidth += w + 2;

    // Appended piece by piece: GCC 12 warns falsely on temporaries such as
    // pad + cell (bug 105329), with LibTorch 2.x's headers in the unit.
    std::string out;
    for (const auto& row : m_rows) {
        if (row.empty()) {
            out.append(lineWidth > 2 ? lineWidth - 2 : 0, '-');
            out += '\n';
            continue;
        }
        for (std::size_t i = 0; i < row.size(); ++i) {
            const std::size_t pad = widths[i] - row[i].size();
            if (i > 0)
                out.append(pad, ' ');
            out += row[i];
            if (i == 0)
                out.append(pad, ' ');
            if (i + 1 < row.size())
                out += "  ";
        }
        out += '\n';
    }
    return out;
}

std::string durationText(double seconds)
{
    const auto s = static_cast<long long>(seconds + 0.5);
    char text[32];
    if (s >= 3600)
        std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else
        std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
    return text;
}

}  // namespace widelab
