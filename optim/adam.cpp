// Adam and AdamW: PyTorch's documented updates, one fused pass over each parameter.
#include "optim/adam.hpp"

#include "core/detail/parallel.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace attograd::optim {
namespace {

bool non_negative(double v) { return std::isfinite(v) && v >= 0.0; }
bool unit_interval(double v) { return v >= 0.0 && v < 1.0; }

// The coefficients of one step, the same for every element of a parameter.
template <class T>
struct AdamStep {
    T beta1, one_minus_beta1, beta2, one_minus_beta2;
    T l2;     // Adam's weight decay (0 for AdamW)
    T decay;  // AdamW's 1 - gamma lambda (1 for Adam)
    T bias_correction2_sqrt, eps;
    T neg_step_size;  // -gamma / (1 - beta1^t)
};

// One Adam / AdamW step over n elements: a plain loop the compiler vectorises, exact square root
// and division included (this file is built with -fno-math-errno, so std::sqrt needs no libm
// call). Eigen was not used here: its fast-math packet sqrt is rsqrt and a Newton step (inexact,
// and NaN for +inf), and its select() that worked around that is not vectorised in Eigen 3.4
// (that made the small training step's Adam 50 us instead of 5). Every multiply-add is spelled
// as std::fma so that the vectorised body and the scalar tail round alike. Elementwise, so a
// large parameter's blocks are split over the threads (core/detail/parallel.hpp) with the same bits on
// any thread count: a [768, 256] weight was ~0.1 ms of serial work in the large training step.
template <class T, bool AMSGrad>
void adam_kernel(T* p, const T* g, T* m, T* v, T* v_max, std::int64_t n, const AdamStep<T>& c) {
    constexpr std::int64_t block = 512;
    const auto update_block = [&](std::int64_t start) {
        const std::int64_t stop = std::min(start + block, n);
        for (std::int64_t k = start; k < stop; ++k) {
            const T theta = p[k];
            const T grad = c.l2 != T(0) ? std::fma(c.l2, theta, g[k]) : g[k];     // Adam: g + lambda theta
            const T exp_avg = std::fma(c.beta1, m[k], c.one_minus_beta1 * grad);  // beta1 m + (1 - beta1) g
            const T exp_avg_sq =
                std::fma(c.beta2, v[k], c.one_minus_beta2 * grad * grad);  // beta2 v + (1 - beta2) g^2
            m[k] = exp_avg;
            v[k] = exp_avg_sq;
            T second = exp_avg_sq;
            if constexpr (AMSGrad) {
                second = std::max(v_max[k], exp_avg_sq);  // v_max = max(v_max, v)
                v_max[k] = second;
            }
            // sqrt(inf) = inf, so where g^2 overflowed m / inf = 0 leaves theta as in PyTorch
            const T denom = std::sqrt(second) / c.bias_correction2_sqrt + c.eps;
            // theta (1 - gamma lambda) - gamma / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
            p[k] = std::fma(theta, c.decay, c.neg_step_size * (exp_avg / denom));
        }
    };
    // ~10 flops and a square root per element
    detail::parallel_for((n + block - 1) / block, detail::threads_for(n * 4, detail::kMinParallelWork),
                         [&](std::int64_t i) { update_block(i * block); });
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::move(params), options, "Adam", false) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, std::string name, bool decoupled)
    : Optimizer(std::move(params), options.lr, std::move(name)), options_(options), decoupled_(decoupled) {
    check_option(unit_interval(options.betas[0]), "betas[0]", "in [0, 1)", options.betas[0]);
    check_option(unit_interval(options.betas[1]), "betas[1]", "in [0, 1)", options.betas[1]);
    check_option(non_negative(options.eps), "eps", "a finite number >= 0", options.eps);
    check_option(non_negative(options.weight_decay), "weight_decay", "a finite number >= 0",
                 options.weight_decay);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam(std::move(params),
           {.lr = o.lr, .betas = o.betas, .eps = o.eps, .weight_decay = o.weight_decay, .amsgrad = o.amsgrad},
           "AdamW", true) {}

std::vector<std::string> Adam::state_names() const {
    if (options_.amsgrad) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"step", "exp_avg", "exp_avg_sq"};
}

std::vector<std::pair<std::string, double>> Adam::option_values() const {
    return {{"betas.0", options_.betas[0]},
            {"betas.1", options_.betas[1]},
            {"eps", options_.eps},
            {"weight_decay", options_.weight_decay},
            {"amsgrad", options_.amsgrad ? 1.0 : 0.0},
            {"decoupled_weight_decay", decoupled_ ? 1.0 : 0.0}};
}

void Adam::check_loaded_state(const std::string& key_prefix,
                              const std::map<std::string, Tensor>& state) const {
    const std::string who = fmt::format("{}.load_state_dict", name());
    AG_CHECK(state.at("step").item() >= 1, ValueError,
             "{}: '{}.step' is {}, but a parameter with moment estimates was updated at least once", who,
             key_prefix, state.at("step").item());
    const auto v = state.at("exp_avg_sq").to_vector<double>();
    const auto negative = std::find_if(v.begin(), v.end(), [](double x) { return x < 0.0; });
    AG_CHECK(
        negative == v.end(), ValueError,
        "{}: '{}.exp_avg_sq' holds {} at index {}; a second moment (a running mean of squared gradients) is "
        ">= 0, so this state was not written by Adam",
        who, key_prefix, *negative, negative - v.begin());
    // m_t = (1 - b1) sum_k b1^(t-k) g_k, v_t = (1 - b2) sum_k b2^(t-k) g_k^2; Cauchy-Schwarz with
    // weights b2^(t-k) gives m^2 <= (1 - b1)^2 / (1 - b2) * sum_j (b1^2 / b2)^j * v.
    const double beta1 = options_.betas[0], beta2 = options_.betas[1];
    if (beta1 * beta1 < beta2) {
        const double bound = (1.0 - beta1) * (1.0 - beta1) / ((1.0 - beta2) * (1.0 - beta1 * beta1 / beta2));
        const auto m = state.at("exp_avg").to_vector<double>();
        for (std::size_t i = 0; i < m.size(); ++i) {
            const double limit = 1.01 * std::sqrt(bound * v[i]) + 1e-12;
            AG_CHECK(std::abs(m[i]) <= limit, ValueError,
                     "{}: '{}.exp_avg' is {} at index {}, but its exp_avg_sq ({}) allows at most {:.6g} in "
                     "magnitude (both average the same gradients), so this state was not written by Adam",
                     who, key_prefix, m[i], i, v[i], limit);
        }
    }
    if (const auto it = state.find("max_exp_avg_sq"); it != state.end()) {
        const auto v_max = it->second.to_vector<double>();
        for (std::size_t i = 0; i < v.size(); ++i) {
            AG_CHECK(
                v_max[i] >= v[i], ValueError,
                "{}: '{}.max_exp_avg_sq' is {} at index {}, below exp_avg_sq ({}); amsgrad keeps the maximum",
                who, key_prefix, v_max[i], i, v[i]);
        }
    }
}

void Adam::update(std::size_t index, Tensor& param, const Tensor& grad) {
    auto& s = state(index);
    if (s.empty()) {
        s.emplace("step", index_tensor({0}, {}));
        for (const auto& name : state_names())
            if (name != "step") s.emplace(name, zeros_like(param));
    }
    std::int64_t& step = s.at("step").data<std::int64_t>()[0];
    ++step;
    const double gamma = lr(), lambda = options_.weight_decay;
    const double beta1 = options_.betas[0], beta2 = options_.betas[1];
    const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)));
    const double step_size = gamma / bias_correction1;

    dispatch_floating(param.dtype(), "Adam.step", [&]<class T>(T) {
        const AdamStep<T> c{.beta1 = static_cast<T>(beta1),
                            .one_minus_beta1 = static_cast<T>(1.0 - beta1),
                            .beta2 = static_cast<T>(beta2),
                            .one_minus_beta2 = static_cast<T>(1.0 - beta2),
                            .l2 = static_cast<T>(decoupled_ ? 0.0 : lambda),
                            .decay = static_cast<T>(decoupled_ ? 1.0 - gamma * lambda : 1.0),
                            .bias_correction2_sqrt = static_cast<T>(bias_correction2_sqrt),
                            .eps = static_cast<T>(options_.eps),
                            .neg_step_size = static_cast<T>(-step_size)};
        T* p = param.data<T>();
        const T* g = grad.data<T>();
        T* m = s.at("exp_avg").data<T>();
        T* v = s.at("exp_avg_sq").data<T>();
        if (options_.amsgrad)
            adam_kernel<T, true>(p, g, m, v, s.at("max_exp_avg_sq").data<T>(), param.numel(), c);
        else
            adam_kernel<T, false>(p, g, m, v, nullptr, param.numel(), c);
    });
}

}  // namespace attograd::optim
