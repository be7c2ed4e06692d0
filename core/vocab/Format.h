// defines: shortCount, formatBytes, groupDigits, tableNumber: the one way WideLab
// writes a count or a size for a reader, in the terminal, the log and the app alike
#pragma once

#include <cstdint>
#include <string>

namespace widelab {

// Three significant digits with k, M, B, T (thousand, million, billion,
// trillion): 12345678 -> "12.3M", 999999 -> "1M", 1500 -> "1.5k", 812 -> "812".
std::string shortCount(double value);

// One decimal in binary units, B below 1 KiB: 629145600 -> "600.0 MiB",
// 1288490189 -> "1.2 GiB", 512 -> "512 B".
std::string formatBytes(double bytes);

// 12345678 -> "12,345,678".
std::string groupDigits(std::int64_t value);

// A number in a table column of `decimals` places: whole numbers with their
// digits grouped (2512345 -> "2,512,345"), others fixed (36.125, 1 -> "36.1").
std::string tableNumber(double value, int decimals);

}  // namespace widelab
