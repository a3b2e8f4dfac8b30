// Finite-difference gradient checking (float64, central differences).
#include "core/gradcheck.hpp"

#include "core/autograd.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_reduce.hpp"

#include <cmath>

namespace attograd {
namespace {

Shape unravel(std::int64_t flat, const Shape& shape) {
    Shape index(shape.size());
    for (auto d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        index[du] = flat % shape[du];
        flat /= shape[du];
    }
    return index;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options) {
    bool any = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        AG_CHECK(inputs[i].dtype() == DType::Float64 || !inputs[i].requires_grad(), DTypeError,
                 "gradcheck: input {} is {} {}; gradients are checked in float64", i, inputs[i].dtype(),
                 inputs[i].shape());
        any = any || inputs[i].requires_grad();
    }
    AG_CHECK(any, ValueError, "gradcheck: no input requires grad");

    const Tensor first = fn(inputs);
    Generator gen(options.seed);
    const Tensor weights = randn(first.shape(), gen, {.dtype = DType::Float64});
    auto objective = [&] { return sum(mul(fn(inputs), weights)); };

    for (const Tensor& in : inputs) const_cast<Tensor&>(in).zero_grad();
    objective().backward();

    GradcheckResult result;
    double worst_excess = -1.0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Tensor in = inputs[i];
        if (!in.requires_grad()) continue;
        const Tensor analytic_grad = in.grad();
        auto* values = in.data<double>();
        NoGradGuard no_grad;
        for (std::int64_t k = 0; k < in.numel(); ++k) {
            const double saved = values[k];
            values[k] = saved + options.eps;
            const double plus = objective().item();
            values[k] = saved - options.eps;
            const double minus = objective().item();
            values[k] = saved;
            const double numeric = (plus - minus) / (2 * options.eps);
            const double analytic = analytic_grad.defined() ? analytic_grad.data<double>()[k] : 0.0;
            const double error = std::abs(analytic - numeric);
            const double allowed = options.atol + options.rtol * std::abs(numeric);
            const bool finite = std::isfinite(analytic) && std::isfinite(numeric);
            result.max_abs_error = std::max(result.max_abs_error, finite ? error : INFINITY);
            const double excess = finite ? error - allowed : INFINITY;
            if (excess > 0 && excess > worst_excess) {
                worst_excess = excess;
                result.ok = false;
                result.report = fmt::format(
                    "gradcheck: input {} {} element {}: analytic {:.10g}, numeric {:.10g}, error {:.3g} > "
                    "allowed {:.3g}",
                    i, in.shape(), unravel(k, in.shape()), analytic, numeric, error, allowed);
            }
        }
    }
    if (result.ok) result.report = fmt::format("gradcheck: ok, max abs error {:.3g}", result.max_abs_error);
    return result;
}

}  // namespace attograd
