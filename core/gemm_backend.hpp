// Which kernel library this process's matrix products run on.
#pragma once

namespace attograd {

/// The library matrix products run on in this process: "LIBXSMM" or "Eigen". Eigen in a build
/// without LIBXSMM (-DATTOGRAD_USE_LIBXSMM=OFF), and in a process that found LIBXSMM's file
/// `/tmp/.libxsmm.UID` not its own (a link another user put there, which LIBXSMM would follow:
/// LIBXSMM is then never called). Never throws.
const char* gemm_library();

}  // namespace attograd
