// Internal: for source files that inline Eigen's AVX-512 packet math. GCC 12 reports its own
// AVX-512 intrinsics' `_mm_undefined_ps` self-initialisation as uninitialised once they are
// inlined (GCC bug 105593, as -Wmaybe-uninitialized in CMakeLists.txt); the warning points into
// <avx512fintrin.h>, not at our code. Silences it for the rest of the including source file.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
