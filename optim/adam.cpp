// Adam and AdamW: PyTorch's documented updates, one fused pass over each parameter.
#include "optim/adam.hpp"

#include "core/error.hpp"
#include "core/parallel.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

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

// One Adam / AdamW step over n elements. The data is walked once, in blocks that stay in L1
// while Eigen's vectorised expressions (sqrt included) make their passes over each block.
// Elementwise, so a large parameter's blocks are split over the threads (core/parallel.hpp)
// with the same bits on any thread count: a [768, 256] weight was ~0.1 ms of serial work in the
// large training step.
template <class T, bool AMSGrad>
void adam_kernel(T* p, const T* g, T* m, T* v, T* v_max, std::int64_t n, const AdamStep<T>& c) {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    constexpr std::int64_t block = 512;
    // ~10 flops and a square root per element
    const auto update_block = [&](std::int64_t start) {
        alignas(64) T buffer[block];
        const std::int64_t len = std::min(block, n - start);
        Eigen::Map<Array> theta(p + start, len), exp_avg(m + start, len), exp_avg_sq(v + start, len);
        Eigen::Map<Array> grad(buffer, len);
        grad = Eigen::Map<const Array>(g + start, len);
        if (c.l2 != T(0)) grad += c.l2 * theta;                               // Adam: g = g + lambda theta
        exp_avg = exp_avg * c.beta1 + c.one_minus_beta1 * grad;               // m = beta1 m + (1 - beta1) g
        exp_avg_sq = exp_avg_sq * c.beta2 + c.one_minus_beta2 * grad * grad;  // v = beta2 v + (1 - beta2) g^2
        if constexpr (AMSGrad) {
            Eigen::Map<Array> max_sq(v_max + start, len);
            max_sq = max_sq.max(exp_avg_sq);  // v_max = max(v_max, v)
        }
        const Eigen::Map<const Array> second((AMSGrad ? v_max : v) + start, len);  // v, or v_max
        // Eigen's fast-math packet sqrt (rsqrt and a Newton step, the default EIGEN_FAST_MATH)
        // turns +inf into NaN: where g^2 overflowed, the vectorised body of a parameter went NaN
        // and its scalar tail stayed put. sqrt(inf) = inf, so m / inf = 0 leaves theta as in
        // PyTorch. (EIGEN_FAST_MATH=0 would also take away the vectorised tanh.)
        constexpr T kInf = std::numeric_limits<T>::infinity();
        const auto root = (second == kInf).select(kInf, second.sqrt());
        // theta = theta (1 - gamma lambda) - gamma / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
        theta = theta * c.decay + c.neg_step_size * (exp_avg / (root / c.bias_correction2_sqrt + c.eps));
    };
    // ~10 flops and a square root per element
    const int threads = detail::threads_for(n * 4, detail::kMinParallelWork);
    if (threads <= 1) {
        // Not an `omp parallel if (false)`: entering even a serial region costs more than a
        // small parameter's update (the small training step has seven parameters).
        for (std::int64_t start = 0; start < n; start += block) update_block(start);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t start = 0; start < n; start += block) update_block(start);
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
            {"amsgrad", options_.amsgrad ? 1.0 : 0.0}};
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
