// Linear: the fully connected layer y = x W^T + b.
#include "nn/linear.hpp"

#include "core/ops_linear.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>

namespace attograd::nn {

Linear::Linear(LinearOptions options, Generator& generator) : options_(options) {
    AG_CHECK(options.in_features >= 0 && options.out_features >= 0, ValueError,
             "Linear: in_features and out_features must be >= 0, got {} and {}", options.in_features,
             options.out_features);
    AG_CHECK(is_floating(options.dtype), DTypeError, "Linear: dtype must be float32 or float64, got {}",
             options.dtype);
    check_parameter_size(
        "Linear",
        fmt::format("in_features {} and out_features {}", options.in_features, options.out_features),
        "weight", {options.out_features, options.in_features}, options.dtype);
    // kaiming_uniform(a = sqrt 5): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in)
    const double bound =
        options.in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in_features)) : 0.0;
    weight_ = register_parameter("weight", uniform({options.out_features, options.in_features}, -bound, bound,
                                                   generator, {.dtype = options.dtype}));
    if (options.bias)
        bias_ = register_parameter(
            "bias", uniform({options.out_features}, -bound, bound, generator, {.dtype = options.dtype}));
}

Tensor Linear::forward(const Tensor& x) const {
    check_input_dtype(x, options_.dtype, "Linear", "input");
    return linear(x, weight_, bias_);
}

std::string Linear::extra_repr() const {
    return fmt::format("in_features={}, out_features={}, bias={}", options_.in_features,
                       options_.out_features, options_.bias);
}

}  // namespace attograd::nn
