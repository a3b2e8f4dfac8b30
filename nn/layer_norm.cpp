// LayerNorm: normalisation over the last dimensions with a learned scale and shift.
#include "nn/layer_norm.hpp"

#include "core/ops_norm.hpp"
#include "nn/parameter_size.hpp"

#include <algorithm>
#include <cmath>

namespace attograd::nn {

LayerNorm::LayerNorm(LayerNormOptions options) : options_(std::move(options)) {
    const Shape& shape = options_.normalized_shape;
    AG_CHECK(!shape.empty() && std::ranges::all_of(shape, [](std::int64_t s) { return s >= 0; }), ValueError,
             "LayerNorm: normalized_shape must be non-empty with sizes >= 0, got {}", shape);
    AG_CHECK(std::isfinite(options_.eps) && options_.eps >= 0, ValueError,
             "LayerNorm: eps must be finite and >= 0, got {}", options_.eps);
    AG_CHECK(is_floating(options_.dtype), DTypeError, "LayerNorm: dtype must be float32 or float64, got {}",
             options_.dtype);
    if (!options_.elementwise_affine) return;
    check_parameter_size("LayerNorm", fmt::format("normalized_shape {}", shape), "weight", shape,
                         options_.dtype);
    weight_ = register_parameter("weight", ones(shape, {.dtype = options_.dtype}));
    if (options_.bias) bias_ = register_parameter("bias", zeros(shape, {.dtype = options_.dtype}));
}

Tensor LayerNorm::forward(const Tensor& x) const {
    if (options_.elementwise_affine) check_input_dtype(x, options_.dtype, "LayerNorm", "input");
    return layer_norm(x, options_.normalized_shape, weight_, bias_, options_.eps);
}

std::string LayerNorm::extra_repr() const {
    std::string out = fmt::format("normalized_shape={}, eps={}, elementwise_affine={}",
                                  options_.normalized_shape, options_.eps, options_.elementwise_affine);
    if (options_.elementwise_affine && !options_.bias) out += ", bias=false";
    return out;
}

}  // namespace attograd::nn
