// SGD: PyTorch's documented update, one fused pass over each parameter.
#include "optim/sgd.hpp"

#include "core/error.hpp"

#include <cmath>

namespace attograd::optim {
namespace {

bool non_negative(double v) { return std::isfinite(v) && v >= 0.0; }

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params), options.lr, "SGD"), options_(options) {
    check_option(non_negative(options.momentum), "momentum", "a finite number >= 0", options.momentum);
    check_option(std::isfinite(options.dampening), "dampening", "finite", options.dampening);
    check_option(non_negative(options.weight_decay), "weight_decay", "a finite number >= 0",
                 options.weight_decay);
    AG_CHECK(!options.nesterov || (options.momentum > 0.0 && options.dampening == 0.0), ValueError,
             "SGD: nesterov requires momentum > 0 and dampening == 0, got momentum {} and dampening {}",
             options.momentum, options.dampening);
}

std::vector<std::string> SGD::state_names() const {
    if (options_.momentum == 0.0) return {};
    return {"momentum_buffer"};
}

std::vector<std::pair<std::string, double>> SGD::option_values() const {
    return {{"momentum", options_.momentum},
            {"dampening", options_.dampening},
            {"weight_decay", options_.weight_decay},
            {"nesterov", options_.nesterov ? 1.0 : 0.0}};
}

void SGD::update(std::size_t index, Tensor& param, const Tensor& grad) {
    auto& s = state(index);
    const bool use_momentum = options_.momentum != 0.0;
    const bool first = use_momentum && s.empty();
    if (first) s.emplace("momentum_buffer", empty(param.shape(), {.dtype = param.dtype()}));
    dispatch_floating(param.dtype(), "SGD.step", [&]<class T>(T) {
        T* p = param.data<T>();
        const T* g = grad.data<T>();
        T* buf = use_momentum ? s.at("momentum_buffer").data<T>() : nullptr;
        const T lambda = static_cast<T>(options_.weight_decay), mu = static_cast<T>(options_.momentum);
        const T keep = static_cast<T>(1.0 - options_.dampening), gamma = static_cast<T>(lr());
        const bool nesterov = options_.nesterov;
        // Every multiply-add spelled as std::fma: left to the compiler, the vectorised body and the
        // scalar tail of the loop were contracted differently, so equal gradients gave a
        // parameter's elements values 1 ulp apart by position (nesterov, float32).
        for (std::int64_t k = 0, n = param.numel(); k < n; ++k) {
            T d = g[k];
            if (lambda != 0) d = std::fma(lambda, p[k], d);  // g = g + lambda theta
            if (buf) {
                const T b = first ? d : std::fma(mu, buf[k], keep * d);  // b = mu b + (1 - tau) g
                buf[k] = b;
                d = nesterov ? std::fma(mu, b, d) : b;
            }
            p[k] = std::fma(-gamma, d, p[k]);
        }
    });
}

}  // namespace attograd::optim
