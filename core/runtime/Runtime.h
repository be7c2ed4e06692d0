// defines: settleNativeLibraries, CpuVectors, cpuVectors, openblasCore, fittingOpenblasCore,
// setComputeThreads, computeThreads, runtimeSummary, blasLibrary, measureMatmulPeak,
// slowMatmulWarning: the LibTorch runtime settings WideLab makes explicit, and what
// its matrix products run on
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

// Settings the native libraries read once, as they load, so that a program must
// have them before it starts. Call first thing in main(): unless the user set
// them, this sets
// - OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=16. LibTorch's OpenMP
//   workers and OpenBLAS's own threads each spin while idle, and an idle pool's
//   spinning takes the cores the other one computes on: on two cores a training
//   step of a small model ran 2-3x slower with spinning OpenMP workers, and with
//   OpenBLAS's threads spinning (its default: 2^28 cycles, a tenth of a second,
//   after each product) some models trained 1.3-1.5x and a mixture of experts
//   inferred 1.45x slower than with them asleep after 2^16 cycles
//   (docs/performance.md);
// - OPENBLAS_CORETYPE, where the loaded OpenBLAS does not know this processor
//   and fell back to kernels below what it runs (fittingOpenblasCore): Debian
//   12's OpenBLAS 0.3.21 takes a 5th-generation Xeon for a Prescott and
//   multiplied fp32 at 48 GFLOP/s on two cores, where its Skylake-X kernels
//   reach 160-230;
// and re-executes the program with the same arguments (once); it returns only
// when no re-execution happened (all already set, or exec failed).
void settleNativeLibraries(char** argv);

// The vector instructions this CPU and its OS run, as far as choosing BLAS
// kernels goes.
struct CpuVectors {
    bool avx2Fma = false;  // AVX2 and FMA (Haswell's set)
    bool avx512 = false;   // AVX-512 F, CD, BW, DQ and VL (Skylake-X's set)
};
CpuVectors cpuVectors();

// The kernel set the loaded OpenBLAS chose (openblas_get_corename: "Haswell",
// "SkylakeX", "Prescott", ...), or "" when no OpenBLAS is loaded.
std::string openblasCore();

// The OPENBLAS_CORETYPE to ask for when OpenBLAS chose `chosen` on a CPU that
// runs `cpu`: "SkylakeX" or "Haswell" where `chosen` uses no AVX2 but the CPU
// has it (OpenBLAS's fallback for a processor newer than it knows), else ""
// (its choice stands).
std::string fittingOpenblasCore(const std::string& chosen, CpuVectors cpu);

// Sets the thread count of every pool that computes: LibTorch's intra-op pool
// (and with it OpenMP's and MKL's) and the BLAS's own (OpenBLAS, BLIS), which
// otherwise follow OMP_NUM_THREADS or OPENBLAS_NUM_THREADS as the process
// started; 0 means every core. Returns LibTorch's count in use.
int setComputeThreads(int threads);
int computeThreads();
// The BLAS's own thread count, or 0 when the BLAS has no pool WideLab can see.
int blasThreads();
// The oneDNN that multiplies inference's projections on the CPU
// (model/InferenceProduct.h), "2.6.3", or "" when the build found none.
std::string oneDnnVersion();
// A device training can run on, as `train.device` names it.
struct DeviceInfo {
    std::string id;          // "cpu", "cuda:0", ...
    std::string label;       // "CPU (2 cores)", "GPU 0: NVIDIA H100 80GB HBM3 (79.1 GiB)"
    std::int64_t memoryBytes = 0;  // GPUs: total memory, when the linked LibTorch can tell
};

// The CPU and each GPU the linked LibTorch can use.
std::vector<DeviceInfo> availableDevices();

// One line: LibTorch version, threads, OpenMP wait policy, BLAS, oneDNN for
// inference's products when built with it, whether the CPU block cache
// (CpuBlockCache.h) is installed, and whether CUDA is usable.
std::string runtimeSummary();

// The BLAS library this process has loaded, from /proc/self/maps: "OpenBLAS",
// "reference BLAS", "MKL", "BLIS", or "unknown" (e.g. not Linux), with the file.
struct BlasInfo {
    std::string name;
    std::string file;
    bool reference = false;  // Netlib's reference BLAS: correct, but ~50x slower than OpenBLAS
};
BlasInfo blasLibrary();

// The best fp32 FLOP/s of `repeats` [size x size] x [size x size] CPU products
// (2 * size^3 FLOPs each) on the current threads, after one untimed product.
double measureMatmulPeak(std::int64_t size = 1024, int repeats = 5);

// A warning when matrix products run far below what this CPU should do (under
// 5 GFLOP/s per thread, the reference BLAS's speed), or when the reference BLAS
// is loaded; empty when all is well.
std::string slowMatmulWarning(double peakFlops, int threads, const BlasInfo& blas);

}  // namespace widelab
