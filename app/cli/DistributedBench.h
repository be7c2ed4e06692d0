// defines: DistributedBenchOptions, distributedBench: `widelab-cli bench CONFIG
// --nproc N`, training on N processes against one at the same global batch
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace widelab {

struct DistributedBenchOptions {
    int processes = 2;
    std::int64_t batch = 16;      // the global batch
    std::int64_t sequence = 128;  // the longest ListOps example (image tasks: the model's own size)
    std::int64_t steps = 20;      // measured, after the warm-up
    std::int64_t warmup = 3;
    bool json = false;
};

// Trains the document's model for warm-up plus steps three times, each a real
// `widelab-cli train` into a temporary directory: on one process, on N, and on N
// with the gradients' overlap off (WIDELAB_DISABLE=gradient_overlap). Reports
// the medians over the measured steps: tokens/s and their ratio to one
// process, and the share of the all-reduce that overlapping it with backward
// hides (1 - the wait after backward with overlap / the wait without). The
// numbers are those of metrics.jsonl (docs/distributed.md). Throws
// std::runtime_error naming the run that failed, with its error output.
int distributedBench(const std::string& source, const DistributedBenchOptions& options, std::ostream& out);

}  // namespace widelab
