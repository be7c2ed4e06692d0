// defines: setComputeThreads, computeThreads, runtimeSummary: the LibTorch runtime
// settings WideLab makes explicit (LibTorch defaults to one thread on these machines)
#pragma once

#include <string>

namespace widelab {

// Sets the intra-op thread count; 0 means every core. Returns the count in use.
int setComputeThreads(int threads);
int computeThreads();
// One line: LibTorch version, threads, and whether CUDA is usable.
std::string runtimeSummary();

}  // namespace widelab
