// Hard attention: one key per query, sampled while training (two estimators), argmax in eval.
#include "nn/hard_attention.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_reduce.hpp"
#include "core/ops_shape.hpp"
#include "core/ops_softmax.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace attograd::nn {
namespace {

// The key chosen in each row of scores [rows, n] (-1 when every key is masked), and the Gumbel
// noise added to choose it (Gumbel straight-through only).
struct Choice {
    std::vector<std::int64_t> key;
    Tensor noise;
};

template <class T>
Choice choose(const Tensor& scores, bool training, HardEstimator estimator, Generator& gen) {
    const std::int64_t n = scores.shape().back(), rows = scores.numel() / std::max<std::int64_t>(n, 1);
    const T* ps = scores.data<T>();
    const T neg_inf = -std::numeric_limits<T>::infinity();
    Choice c{std::vector<std::int64_t>(static_cast<std::size_t>(rows), -1), Tensor()};
    const bool gumbel = training && estimator == HardEstimator::GumbelStraightThrough;
    T* pg = nullptr;
    if (gumbel) {
        c.noise = empty(scores.shape(), {.dtype = scores.dtype()});
        pg = c.noise.template data<T>();
    }
    std::vector<double> probs(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* s = ps + r * n;
        std::int64_t& key = c.key[static_cast<std::size_t>(r)];
        if (training && estimator == HardEstimator::Reinforce) {
            // Inverse-CDF sample from softmax(s) (computed stably, in double).
            double top = -std::numeric_limits<double>::infinity(), total = 0.0;
            for (std::int64_t i = 0; i < n; ++i) top = std::max(top, static_cast<double>(s[i]));
            if (top == -std::numeric_limits<double>::infinity()) continue;
            for (std::int64_t i = 0; i < n; ++i)
                total += probs[static_cast<std::size_t>(i)] = std::exp(static_cast<double>(s[i]) - top);
            double target = gen.uniform() * total;
            for (std::int64_t i = 0; i < n && key < 0; ++i) {
                target -= probs[static_cast<std::size_t>(i)];
                if (target < 0 && probs[static_cast<std::size_t>(i)] > 0) key = i;
            }
            for (std::int64_t i = n - 1; key < 0 && i >= 0; --i)  // rounding left target >= 0
                if (probs[static_cast<std::size_t>(i)] > 0) key = i;
            continue;
        }
        // Argmax of s (eval) or of s + g, g ~ Gumbel(0, 1) (the Gumbel-max trick).
        T best = neg_inf;
        for (std::int64_t i = 0; i < n; ++i) {
            T v = s[i];
            if (gumbel) {
                double u = gen.uniform();
                while (u <= 0.0) u = gen.uniform();
                pg[r * n + i] = static_cast<T>(-std::log(-std::log(u)));
                v += pg[r * n + i];
            }
            if (v > best) {
                best = v;
                key = i;
            }
        }
    }
    return c;
}

}  // namespace

HardEstimator parse_hard_estimator(std::string_view name) {
    if (name == "gumbel" || name == "gumbel-st") return HardEstimator::GumbelStraightThrough;
    if (name == "reinforce") return HardEstimator::Reinforce;
    throw ValueError(
        fmt::format("hard estimator: unknown estimator '{}' (choose gumbel-st or reinforce)", name));
}

std::string_view to_string(HardEstimator estimator) {
    return estimator == HardEstimator::Reinforce ? "reinforce" : "gumbel-st";
}

HardAttention hard_attention(const Tensor& scores, bool training, HardEstimator estimator, double temperature,
                             Generator& generator) {
    AG_CHECK(scores.defined() && scores.dim() >= 1, ValueError, "hard_attention: scores must have rank >= 1");
    AG_CHECK(temperature > 0, ValueError, "hard_attention: temperature must be > 0, got {}", temperature);
    const Choice choice = dispatch_floating(scores.dtype(), "hard_attention", [&]<class T>(T) {
        const T* ps = scores.data<T>();
        const std::int64_t n = scores.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i)
            AG_CHECK(!std::isnan(ps[i]), ValueError, "hard_attention: scores {} hold NaN", scores.shape());
        return choose<T>(scores, training, estimator, generator);
    });
    const std::int64_t n = scores.shape().back();
    const auto rows = static_cast<std::int64_t>(choice.key.size());
    Tensor hard = zeros(scores.shape(), {.dtype = scores.dtype()});
    dispatch_floating(scores.dtype(), "hard_attention", [&]<class T>(T) {
        T* ph = hard.data<T>();
        for (std::int64_t r = 0; r < rows; ++r)
            if (choice.key[static_cast<std::size_t>(r)] >= 0)
                ph[r * n + choice.key[static_cast<std::size_t>(r)]] = T(1);
    });
    if (!training) return {hard, Tensor()};
    if (estimator == HardEstimator::GumbelStraightThrough) {
        // Forward: exactly the one-hot (y - y is exactly 0). Backward: the gradient of y.
        const Tensor y = softmax((scores + choice.noise) / temperature, -1);
        return {hard + (y - y.detach()), Tensor()};
    }
    // REINFORCE: log p(key) = log_softmax(scores)[key]. Fully masked rows are set to 0 first
    // (their log-softmax would be NaN) and their log-probability is zeroed.
    Shape row_shape(scores.shape().begin(), scores.shape().end() - 1);
    Shape column_shape = row_shape;
    column_shape.push_back(1);
    std::vector<std::int64_t> index(choice.key.size());
    std::vector<double> valid(choice.key.size());
    Tensor dead_rows = empty(column_shape, {.dtype = DType::Bool});
    for (std::size_t r = 0; r < choice.key.size(); ++r) {
        index[r] = std::max<std::int64_t>(choice.key[r], 0);
        valid[r] = choice.key[r] >= 0 ? 1.0 : 0.0;
        dead_rows.data<bool>()[r] = choice.key[r] < 0;
    }
    const Tensor log_p = log_softmax(masked_fill(scores, dead_rows, 0.0), -1);
    const Tensor chosen = reshape(gather(log_p, -1, index_tensor(index, column_shape)), row_shape);
    return {hard, chosen * tensor(valid, row_shape, {.dtype = scores.dtype()})};
}

Tensor reinforce_surrogate(const Tensor& log_prob, const Tensor& reward, double baseline) {
    AG_CHECK(log_prob.defined() && reward.defined(), ValueError, "reinforce_surrogate: undefined argument");
    AG_CHECK(log_prob.dim() == 2, ShapeError, "reinforce_surrogate: log_prob must be [B, Tq], got {}",
             log_prob.shape());
    const bool per_sequence = reward.shape() == Shape{log_prob.size(0)};
    AG_CHECK(per_sequence || reward.shape() == log_prob.shape(), ShapeError,
             "reinforce_surrogate: reward must be [B] = [{}] or [B, Tq] = {}, got {}", log_prob.size(0),
             log_prob.shape(), reward.shape());
    AG_CHECK(reward.dtype() == log_prob.dtype(), DTypeError,
             "reinforce_surrogate: reward is {}, log_prob is {}", reward.dtype(), log_prob.dtype());
    const Tensor advantage = (per_sequence ? reshape(reward.detach(), {-1, 1}) : reward.detach()) - baseline;
    // L = -sum((r - b) log p) / B  =>  dL/dtheta = -E[(r - b) grad log p]
    return sum(advantage * log_prob) *
           (-1.0 / static_cast<double>(std::max<std::int64_t>(log_prob.size(0), 1)));
}

RewardBaseline::RewardBaseline(double decay)
    : decay_(decay), value_(scalar(0.0, {.dtype = DType::Float64})), updates_(index_tensor({0}, {})) {
    AG_CHECK(decay >= 0 && decay < 1, ValueError, "RewardBaseline: decay must be in [0, 1), got {}", decay);
}

namespace {
double mean_reward(const Tensor& reward) {
    AG_CHECK(reward.defined() && reward.numel() > 0, ValueError, "RewardBaseline: empty reward");
    return mean(to_dtype(reward.detach(), DType::Float64)).item();
}
}  // namespace

double RewardBaseline::baseline_for(const Tensor& reward) const {
    return updates_.data<std::int64_t>()[0] > 0 ? value() : mean_reward(reward);
}

double RewardBaseline::update(const Tensor& reward) {
    const double batch_mean = mean_reward(reward);
    std::int64_t& updates = updates_.data<std::int64_t>()[0];
    const double value = updates > 0 ? decay_ * this->value() + (1 - decay_) * batch_mean : batch_mean;
    // Module::to may have made the buffer float32; it then holds the value rounded, as it is saved.
    if (value_.dtype() == DType::Float64) {
        value_.data<double>()[0] = value;
    } else {
        value_.data<float>()[0] = static_cast<float>(value);
    }
    // Only "updated yet or not" matters, so the count saturates instead of overflowing (a
    // hand-edited checkpoint may hold any non-negative count).
    if (updates < std::numeric_limits<std::int64_t>::max()) ++updates;
    return this->value();
}

}  // namespace attograd::nn
