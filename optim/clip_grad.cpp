// clip_grad_norm: one pass to measure the global norm, one to scale the gradients.
#include "optim/clip_grad.hpp"

#include "core/error.hpp"
#include "core/ops_reduce.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::optim {
namespace {

// acc + sum |g|^p over the elements (p = inf: max(acc, max |g|)), in double, vectorised.
double accumulate_norm(const Tensor& grad, double p, double acc) {
    return dispatch_floating(grad.dtype(), "clip_grad_norm", [&]<class T>(T) {
        if (grad.numel() == 0) return acc;
        const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> g(grad.data<T>(), grad.numel());
        if (std::isinf(p))  // maxCoeff does not propagate NaN: look for it
            return g.isNaN().any() ? std::numeric_limits<double>::quiet_NaN()
                                   : std::max(acc, static_cast<double>(g.abs().maxCoeff()));
        if (p == 2.0) return acc + g.template cast<double>().square().sum();
        if (p == 1.0) return acc + g.template cast<double>().abs().sum();
        // Other orders are rare: a scalar loop (Eigen's vectorised pow trips GCC 12 bug 105593).
        const std::int64_t n = grad.numel();  // hoisted: numel() walks the shape
        for (std::int64_t k = 0; k < n; ++k) acc += std::pow(std::abs(static_cast<double>(g(k))), p);
        return acc;
    });
}

// g * coef, written in place when the parameter alone holds the gradient buffer.
void scale_grad(const Tensor& param, double coef) {
    auto& held = param.impl()->grad;
    const bool exclusive = held.use_count() == 1 && held->storage.use_count() == 1;
    Tensor grad(held);
    Tensor out = exclusive ? grad : empty(grad.shape(), {.dtype = grad.dtype()});
    dispatch_floating(grad.dtype(), "clip_grad_norm", [&]<class T>(T) {
        const T* g = grad.data<T>();
        T* o = out.data<T>();
        for (std::int64_t k = 0, n = grad.numel(); k < n; ++k) o[k] = static_cast<T>(g[k] * coef);
    });
    if (!exclusive) Tensor(param).set_grad(out);
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type) {
    AG_CHECK(std::isfinite(max_norm) && max_norm >= 0.0, ValueError,
             "clip_grad_norm: max_norm must be a finite number >= 0, got {}", max_norm);
    AG_CHECK(norm_type > 0.0, ValueError, "clip_grad_norm: norm_type must be > 0 (or infinity), got {}",
             norm_type);
    double acc = 0.0;
    bool any = false;
    for (std::size_t i = 0; i < params.size(); ++i) {
        AG_CHECK(params[i].defined(), ValueError, "clip_grad_norm: parameter {} is an undefined tensor", i);
        const Tensor grad = params[i].grad();
        if (!grad.defined()) continue;
        any = true;
        acc = accumulate_norm(grad, norm_type, acc);
    }
    if (!any) return 0.0;
    const double total = std::isinf(norm_type) || norm_type == 1.0 ? acc
                         : norm_type == 2.0                        ? std::sqrt(acc)
                                                                   : std::pow(acc, 1.0 / norm_type);
    if (!std::isfinite(total)) {
        const bool all_grads_finite = std::all_of(params.begin(), params.end(), [](const Tensor& p) {
            return !p.grad().defined() || all_finite(p.grad());
        });
        throw ValueError(fmt::format(
            "clip_grad_norm: the total norm of order {} of the gradients is {}, so they cannot be clipped "
            "({})",
            norm_type, total,
            all_grads_finite ? "every gradient is finite, but the sum of their powers overflows a double"
                             : "a gradient holds NaN or Inf"));
    }
    const double coef = max_norm / (total + 1e-6);
    if (coef < 1.0)
        for (const Tensor& p : params)
            if (p.impl()->grad) scale_grad(p, coef);
    return total;
}

}  // namespace attograd::optim
