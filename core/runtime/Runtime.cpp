#include "Runtime.h"

#include "CpuBlockCache.h"
#include "FastPaths.h"
#include "vocab/Format.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>
// A CUDA build of LibTorch (CMakeLists.txt decides) has the device properties.
#ifdef WIDELAB_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <torch/torch.h>

#ifdef WIDELAB_HAVE_DNNL
#include <dnnl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

namespace widelab {

namespace {

// A function of whichever BLAS is loaded, looked up at run time: WideLab links
// LibTorch, not a BLAS, and Debian switches BLAS implementations underneath.
template <typename Function>
Function* blasFunction(const char* name)
{
    return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}

bool sameName(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

}  // namespace

CpuVectors cpuVectors()
{
    CpuVectors cpu;
#if defined(__x86_64__) || defined(__i386__)
    // GCC's checks count a feature only where the OS saves its registers (XGETBV).
    __builtin_cpu_init();
    cpu.avx2Fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    cpu.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd")
                 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")
                 && __builtin_cpu_supports("avx512vl");
#endif
    return cpu;
}

std::string openblasCore()
{
    auto* corename = blasFunction<char*()>("openblas_get_corename");
    const char* name = corename ? corename() : nullptr;
    return name ? std::string(name) : std::string();
}

std::string fittingOpenblasCore(const std::string& chosen, CpuVectors cpu)
{
    // OpenBLAS's x86 kernel sets with AVX2 products, of 0.3.21 and later.
    static const char* const kAvx2Sets[] = {"Haswell", "Zen", "Excavator", "SkylakeX", "Cooperlake", "SapphireRapids"};
    if (chosen.empty() || !cpu.avx2Fma)
        return {};
    for (const char* set : kAvx2Sets) {
        if (sameName(chosen, set))
            return {};
    }
    return cpu.avx512 ? "SkylakeX" : "Haswell";
}

void settleNativeLibraries(char** argv)
{
    bool changed = false;
    if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        changed = true;
    }
    if (!std::getenv("OPENBLAS_THREAD_TIMEOUT") && !std::getenv("GOTO_THREAD_TIMEOUT")) {
        setenv("OPENBLAS_THREAD_TIMEOUT", "16", 1);  // 2^16 cycles: tens of microseconds
        changed = true;
    }
    if (!std::getenv("OPENBLAS_CORETYPE")) {
        if (const std::string fitting = fittingOpenblasCore(openblasCore(), cpuVectors()); !fitting.empty()) {
            setenv("OPENBLAS_CORETYPE", fitting.c_str(), 1);
            changed = true;
        }
    }
    if (changed)
        execv("/proc/self/exe", argv);
    // Only reached when nothing changed or exec failed: carry on with the defaults.
}

int setComputeThreads(int threads)
{
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    if (auto* openblas = blasFunction<void(int)>("openblas_set_num_threads"))
        openblas(threads);
    if (auto* blis = blasFunction<void(long)>("bli_thread_set_num_threads"))
        blis(threads);
    return at::get_num_threads();
}

int blasThreads()
{
    if (auto* openblas = blasFunction<int()>("openblas_get_num_threads"))
        return openblas();
    if (auto* blis = blasFunction<long()>("bli_thread_get_num_threads"))
        return static_cast<int>(blis());
    return 0;
}

int computeThreads() { return at::get_num_threads(); }

std::string oneDnnVersion()
{
#ifdef WIDELAB_HAVE_DNNL
    const dnnl_version_t* v = dnnl_version();  // the library loaded, not the header built against
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
    return {};
#endif
}

std::string runtimeSummary()
{
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const int threads = at::get_num_threads();
    std::string summary = "LibTorch " TORCH_VERSION ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads")
                          + " (OpenMP "
                          + (policy ? std::string(policy) : std::string("default")) + " wait), ";
    const BlasInfo blas = blasLibrary();
    summary += "BLAS: " + blas.name;
    if (const int own = blasThreads(); own > 0) {
        summary += " (" + std::to_string(own) + (own == 1 ? " thread" : " threads");
        if (const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT"); timeout && blas.name == "OpenBLAS")
            summary += std::string(", idle after 2^") + timeout + " cycles";
        if (const std::string core = openblasCore(); !core.empty())
            summary += ", " + core + " kernels";
        summary += ")";
    }
    summary += ", ";
    if (const std::string dnnl = oneDnnVersion(); !dnnl.empty() && fastPathEnabled(FastPath::OneDnnProducts))
        summary += "oneDNN " + dnnl + " for inference's products, ";
    summary += cpuBlockCacheInstalled() ? "CPU block cache, " : "no CPU block cache, ";
    if (const std::string off = disabledFastPaths(); !off.empty())
        summary += "disabled: " + off + ", ";
    summary += torch::cuda::is_available() ? std::to_string(torch::cuda::device_count()) + " CUDA device(s)"
                                           : "no CUDA";
#if WIDELAB_CUDA_KERNELS
    summary += ", CUDA routing kernel built";  // model/FusedRouting.h
#elif defined(WIDELAB_TORCH_CUDA)
    summary += ", no CUDA routing kernel (built without a CUDA compiler)";
#endif
    return summary;
}

BlasInfo blasLibrary()
{
    // Debian switches BLAS through alternatives, so every library is "libblas.so.3"
    // somewhere: the directory it lives in names the implementation.
    std::ifstream maps("/proc/self/maps");
    std::string line;
    BlasInfo found{"unknown", "", false};
    while (std::getline(maps, line)) {
        const auto slash = line.find('/');
        if (slash == std::string::npos)
            continue;
        const std::string file = line.substr(slash);
        const std::string base = file.substr(file.rfind('/') + 1);
        if (file.find("openblas") != std::string::npos)
            return {"OpenBLAS", file, false};
        if (file.find("libmkl") != std::string::npos)
            return {"MKL", file, false};
        if (file.find("blis") != std::string::npos)
            return {"BLIS", file, false};
        if (base.rfind("libblas.so", 0) == 0 && file.find("/blas/") != std::string::npos)
            found = {"reference BLAS", file, true};
    }
    // PyPI's LibTorch links MKL into libtorch_cpu.so: no file of its own is mapped.
    if (found.name == "unknown" && at::hasMKL())
        return {"MKL", "linked into LibTorch", false};
    return found;
}

double measureMatmulPeak(std::int64_t size, int repeats)
{
    torch::NoGradGuard noGrad;
    // Values without the default generator, which a trainer on another thread
    // may be drawing from (the app checks the runtime while a run starts).
    const torch::Tensor a = torch::linspace(-1.0, 1.0, size * size).view({size, size});
    const torch::Tensor b = a.t().contiguous();
    torch::Tensor c = torch::mm(a, b);
    double best = 0.0;
    for (int i = 0; i < repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        torch::mm_out(c, a, b);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * static_cast<double>(size) * size * size / std::max(seconds, 1e-9));
    }
    return best;
}

std::string slowMatmulWarning(double peakFlops, int threads, const BlasInfo& blas)
{
    const double perThread = peakFlops / std::max(1, threads);
    char text[320];
    if (blas.reference) {
        std::snprintf(text, sizeof text,
                      "warning: LibTorch runs on the reference BLAS (%s), %.1f GFLOP/s; install an optimised one "
                      "(Debian: apt install libopenblas0-pthread) for ~50x faster matrix products",
                      blas.file.c_str(), peakFlops / 1e9);
        return text;
    }
    if (perThread < 5e9) {
        std::snprintf(text, sizeof text,
                      "warning: matrix products run at %.1f GFLOP/s (%.1f per thread), far below this CPU's "
                      "capability: is the machine busy, or is a slow BLAS (%s) in use?",
                      peakFlops / 1e9, perThread / 1e9, blas.name.c_str());
        return text;
    }
    return {};
}

std::vector<DeviceInfo> availableDevices()
{
    std::vector<DeviceInfo> devices;
    const unsigned cores = std::thread::hardware_concurrency();
    devices.push_back({"cpu", "CPU (" + std::to_string(cores) + " cores)", 0});
    if (!torch::cuda::is_available())
        return devices;
    const auto count = static_cast<std::size_t>(torch::cuda::device_count());  // size_t in 1.x, DeviceIndex in 2.x
    for (std::size_t i = 0; i < count; ++i) {
        DeviceInfo gpu{"cuda:" + std::to_string(i), "GPU " + std::to_string(i), 0};
#ifdef WIDELAB_TORCH_CUDA
        const cudaDeviceProp* properties = at::cuda::getDeviceProperties(static_cast<int>(i));
        gpu.memoryBytes = static_cast<std::int64_t>(properties->totalGlobalMem);
        gpu.label += std::string(": ") + properties->name + " (" + formatBytes(static_cast<double>(gpu.memoryBytes)) + ")";
#endif
        devices.push_back(gpu);
    }
    return devices;
}

}  // namespace widelab
