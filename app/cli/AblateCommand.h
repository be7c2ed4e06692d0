// defines: AblateArguments, ablateCommand: `widelab-cli ablate`, an ablation scan
// of a saved run (measure/AblationScan.h) as a table or JSON
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct AblateArguments {
    std::vector<std::string> positional;
    std::string part = "heads";  // --heads, --experts, --paths or --sublayers
    std::string mode = "zero";
    std::string checkpoint = "latest";
    std::int64_t batches = 0;
    std::string text, image, device;
    std::int64_t threads = -1;
    bool json = false;
};

// Progress on `err`; the result on `out`. Throws RunUsageError for wrong arguments.
int ablateCommand(const AblateArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
