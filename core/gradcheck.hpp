// Finite-difference gradient checking (float64, central differences).
#pragma once

#include "core/tensor.hpp"

#include <functional>
#include <string>
#include <vector>

namespace attograd {

/// Tolerances of gradcheck. An element passes when |analytic - numeric| <= atol + rtol * |numeric|
/// (PyTorch's `torch.autograd.gradcheck` criterion).
struct GradcheckOptions {
    double eps = 1e-6;       ///< central-difference step
    double atol = 1e-5;      ///< absolute tolerance
    double rtol = 1e-3;      ///< relative tolerance
    std::uint64_t seed = 0;  ///< seed of the random output weighting R
};

/// Outcome of gradcheck; `report` names the worst input and element.
struct GradcheckResult {
    bool ok = true;              ///< every checked element within atol + rtol * |numeric|
    double max_abs_error = 0.0;  ///< worst |analytic - numeric| over all checked elements
    std::string report;          ///< e.g. "input 1 element [0, 2]: analytic 0.5 numeric 0.25 ..."
};

/// Checks the tape's gradient of `fn` against central differences. The scalar checked is
/// sum(fn(inputs) * R) for a fixed random R, so every output element is weighted differently.
/// Every input that requires grad is checked, element by element (inputs fn reads through
/// captures, such as module parameters, may be listed too). Inputs must be float64: throws
/// DTypeError otherwise, ValueError when no input requires grad.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace attograd
