// Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay and AMSGrad.
#pragma once

#include "optim/optimizer.hpp"

#include <array>

namespace attograd::optim {

/// Options of Adam with PyTorch's defaults.
struct AdamOptions {
    double lr = 1e-3;                            ///< learning rate gamma, >= 0
    std::array<double, 2> betas = {0.9, 0.999};  ///< decay rates of the moment averages, in [0, 1)
    double eps = 1e-8;                           ///< added to the denominator, >= 0
    double weight_decay = 0.0;                   ///< L2 penalty added to the gradient, >= 0
    bool amsgrad = false;                        ///< use the running maximum of v (Reddi et al. 2018)
};

/// Options of AdamW: Adam's, with decoupled weight decay defaulting to 1e-2 as in PyTorch.
struct AdamWOptions {
    double lr = 1e-3;                            ///< learning rate gamma, >= 0
    std::array<double, 2> betas = {0.9, 0.999};  ///< decay rates of the moment averages, in [0, 1)
    double eps = 1e-8;                           ///< added to the denominator, >= 0
    double weight_decay = 1e-2;                  ///< decoupled decay: theta *= 1 - gamma lambda, >= 0
    bool amsgrad = false;                        ///< use the running maximum of v
};

/// Adam (Kingma & Ba 2015), exactly PyTorch's documented `torch.optim.Adam` algorithm, with
/// step t counted per parameter:
///
///     g = grad + lambda * theta                      (L2 weight decay, if lambda != 0)
///     m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
///     v_max = max(v_max, v) and use v_max for v      (amsgrad)
///     theta = theta - gamma / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
///
/// State per parameter: `step` (0-d int64), `exp_avg`, `exp_avg_sq`, and `max_exp_avg_sq` with
/// amsgrad. state_dict() records the options beside it, `decoupled_weight_decay` among them (0;
/// 1 for AdamW, as PyTorch's Adam records it), so that one's state does not load into the
/// other. Throws ValueError naming the option: lr, eps or weight_decay negative (or not
/// finite), a beta outside [0, 1); plus the Optimizer constructor's checks.
///
/// load_state_dict() also refuses state that no run of Adam could have written: a `step` below
/// 1, a negative `exp_avg_sq`, `max_exp_avg_sq` below `exp_avg_sq`, and an `exp_avg` too large
/// for its `exp_avg_sq`: m and v average the same gradients, so by Cauchy-Schwarz
/// m^2 <= (1 - beta1)^2 / ((1 - beta2) (1 - beta1^2 / beta2)) v whenever beta1^2 < beta2
/// (checked with 1 % slack and 1e-12 absolute, for rounding and underflow of g^2).
class Adam : public Optimizer {
public:
    /// Optimises `params` (leaves that require grad); throws as described above.
    Adam(std::vector<Tensor> params, AdamOptions options);

    /// The options as given (the current learning rate is lr(), which schedules change).
    const AdamOptions& options() const { return options_; }

protected:
    /// AdamW's constructor: `decoupled` weight decay.
    Adam(std::vector<Tensor> params, AdamOptions options, std::string name, bool decoupled);

    void update(std::size_t index, Tensor& param, const Tensor& grad) override;
    std::vector<std::string> state_names() const override;
    std::vector<std::pair<std::string, double>> option_values() const override;
    /// exp_avg_sq and max_exp_avg_sq are running means (maxima) of squares: >= 0, and
    /// max_exp_avg_sq >= exp_avg_sq; step >= 1 once there is state.
    void check_loaded_state(const std::string& key_prefix,
                            const std::map<std::string, Tensor>& state) const override;

private:
    AdamOptions options_;
    bool decoupled_;
};

/// AdamW (Loshchilov & Hutter 2019), exactly PyTorch's documented `torch.optim.AdamW`: Adam
/// without the L2 term in the gradient; instead each step first decays the parameter,
/// `theta = theta * (1 - gamma lambda)`, then applies Adam's update. Same state, checks and
/// throws as Adam.
class AdamW : public Adam {
public:
    /// Optimises `params` (leaves that require grad); throws as Adam.
    AdamW(std::vector<Tensor> params, AdamWOptions options);
};

}  // namespace attograd::optim
