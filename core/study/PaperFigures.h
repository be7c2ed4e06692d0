// defines: PaperEntry, PaperFigure, parsePaperFigure, paperFigureDirectories,
// loadPaperFigures: the papers' own figures (a table of a paper, transcribed in
// resources/studies/papers/*.json) that a study is drawn beside
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace widelab {

// One cell of a paper's table.
struct PaperEntry {
    std::string label;          // the paper's row and column: "Linformer, 6-8"
    nlohmann::json settings;    // dotted key -> value a study member has for the cell to be its setting
    double value = 0.0;         // in the measure's units: the paper's number times the figure's scale
    double spread = std::numeric_limits<double>::quiet_NaN();  // the paper's ± in the same units; NaN: none given
};

// One table (or the part of one) a study can be compared with.
struct PaperFigure {
    std::string name;      // the file's name without .json
    std::string paper;     // "Wide Attention (Brown et al., 2022)"
    std::string source;    // "Table 4: test accuracy on ListOps"
    std::string measure;   // the study measure it gives (a studyMeasures() column)
    std::string note;      // how the paper's setting differs from a study at laptop scale
    std::vector<PaperEntry> entries;
};

// A figure file:
//   {"paper": "...", "source": "...", "measure": "test_accuracy", "scale": 0.01, "note": "...",
//    "when": {"task.kind": "listops"},                       // every cell's settings (optional)
//    "columns": [{"label": "6-8", "settings": {"model.layers": 6, "model.heads": 8}}, ...],
//    "rows": [{"label": "Linformer", "settings": {"model.attention": "linformer"},
//              "values": [[29.9, 8.9], 36.9, null, ...]}, ...]}
// A value is a number, [number, spread], or null (the paper reports none). A
// cell's settings are `when`, its row's and its column's together. Throws
// ConfigError listing every problem with its key path; `origin` names the file.
PaperFigure parsePaperFigure(const std::string& text, const std::string& name, const std::string& origin = "");

// Where figure files may be: the folder "papers" of each of studyDirectories().
std::vector<std::filesystem::path> paperFigureDirectories();

// Every figure of the first of those folders that holds any, by file name; throws
// ConfigError naming the file that does not read.
std::vector<PaperFigure> loadPaperFigures();

}  // namespace widelab
