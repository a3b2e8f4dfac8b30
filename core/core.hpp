// Umbrella header of core/: tensors, the tape, ops, gradcheck, formatting, checkpoints, atomic writes.
#pragma once

#include "core/atomic_file.hpp"
#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/gemm_backend.hpp"
#include "core/gradcheck.hpp"
#include "core/input_file.hpp"
#include "core/ops.hpp"
#include "core/protected_path.hpp"
#include "core/serialization.hpp"
#include "core/tensor.hpp"
