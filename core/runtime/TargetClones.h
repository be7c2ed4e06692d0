// defines: WIDELAB_TARGET_CLONES: a function built once per instruction set
// named, the CPU picking one at load time
#pragma once

// GCC's ifunc clones (glibc and ELF only): WIDELAB_TARGET_CLONES("avx2",
// "default") builds the function for AVX2 and for the baseline. Elsewhere the
// function is built once, for the baseline.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__)
#define WIDELAB_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define WIDELAB_TARGET_CLONES(...)
#endif
