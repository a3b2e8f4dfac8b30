// Makes OpenBLAS use its AVX-512/AVX2 kernels on CPUs its runtime detection does not know.
#pragma once

#include <unistd.h>
#include <cstdlib>
#include <string>
#include <string_view>

// Resolved at run time when OpenBLAS is loaded (linked directly, or under LibTorch); null
// otherwise.
extern "C" char* openblas_get_corename() __attribute__((weak));
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace bench {

/// OpenBLAS's kernel family ("SkylakeX", "Haswell", ...), or "absent".
inline std::string openblas_core() { return openblas_get_corename ? openblas_get_corename() : "absent"; }

/// Sets OpenBLAS's own thread pool size (it ignores OpenMP's and LibTorch's settings).
inline void set_openblas_threads(int threads) {
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);
}

/// Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not recognise recent Xeons (this machine: family
/// 6, model 207) and falls back to its generic SSE3 "Prescott" kernels, 5-8x slower than its
/// AVX-512 ones. When that happened and the user did not choose (OPENBLAS_CORETYPE unset), this
/// re-runs the program with OPENBLAS_CORETYPE naming the kernels the CPU can run; OpenBLAS reads
/// it only while loading, hence the exec. Returns normally when nothing needs doing.
inline void use_fast_openblas_kernels(char** argv) {
    if (openblas_get_corename == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
    if (std::string_view(openblas_get_corename()) != "Prescott") return;
    __builtin_cpu_init();
    const char* core = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
    if (core == nullptr) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);  // returns only on failure: carry on with the slow kernels
}

}  // namespace bench
