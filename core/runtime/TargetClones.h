// defines: WIDELAB_TARGET_CLONES: a function built once per instruction set
// named, the CPU picking one at load time; WIDELAB_TARGET, InstructionSet,
// cpuRuns, instructionSetName, bestInstructionSet: a function built for one
// set and called by name, so that every build of a kernel can be run and
// tested on one machine
#pragma once

// GCC's ifunc clones (glibc and ELF only): WIDELAB_TARGET_CLONES("avx2",
// "default") builds the function for AVX2 and for the baseline. Elsewhere the
// function is built once, for the baseline.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__)
#define WIDELAB_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define WIDELAB_TARGET_CLONES(...)
#endif

#include <initializer_list>

namespace widelab {

// The instruction sets WideLab's own CPU kernels are built for, best first
// (Avx2: AVX2 with FMA).
enum class InstructionSet { Avx512, Avx2, Baseline };

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
// WIDELAB_TARGET("avx2,fma"): the function is built for AVX2 and FMA (call it
// only where cpuRuns(InstructionSet::Avx2)). InstructionSet::Avx2 means both:
// CPUs with AVX2 have FMA too, but it is a flag of its own, which GCC's
// target("avx2") leaves off and a virtual machine may hide.
#define WIDELAB_TARGET(name) __attribute__((target(name)))
#define WIDELAB_HAS_TARGET 1

inline bool cpuRuns(InstructionSet set)
{
    switch (set) {
    case InstructionSet::Avx512: return __builtin_cpu_supports("avx512f");
    case InstructionSet::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case InstructionSet::Baseline: return true;
    }
    return false;
}
#else
#define WIDELAB_TARGET(name)
#define WIDELAB_HAS_TARGET 0

inline bool cpuRuns(InstructionSet set) { return set == InstructionSet::Baseline; }
#endif

inline const char* instructionSetName(InstructionSet set)
{
    switch (set) {
    case InstructionSet::Avx512: return "AVX-512";
    case InstructionSet::Avx2: return "AVX2 with FMA";
    case InstructionSet::Baseline: return "the baseline";
    }
    return "";
}

inline InstructionSet bestInstructionSet()
{
    for (const InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2})
        if (cpuRuns(set))
            return set;
    return InstructionSet::Baseline;
}

}  // namespace widelab
