// SGD: stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay.
#pragma once

#include "optim/optimizer.hpp"

namespace attograd::optim {

/// Options of SGD with PyTorch's defaults (PyTorch 1.13 has no default lr; 1e-3 is the
/// default of PyTorch 2.x).
struct SGDOptions {
    double lr = 1e-3;           ///< learning rate gamma, >= 0
    double momentum = 0.0;      ///< momentum factor mu, >= 0
    double dampening = 0.0;     ///< dampening tau of the gradient added to the momentum buffer
    double weight_decay = 0.0;  ///< L2 penalty lambda, added to the gradient, >= 0
    bool nesterov = false;      ///< Nesterov momentum (needs momentum > 0 and dampening 0)
};

/// Stochastic gradient descent, exactly PyTorch's documented `torch.optim.SGD` algorithm:
///
///     g = grad + lambda * theta                      (if lambda != 0)
///     b = g (first step), else b = mu * b + (1 - tau) * g       (if mu != 0)
///     g = g + mu * b (nesterov), else g = b                      (if mu != 0)
///     theta = theta - gamma * g
///
/// The first momentum buffer is g itself, not (1 - tau) g. Nesterov follows Sutskever et al.
/// 2013 as PyTorch rewrites it. State per parameter: `momentum_buffer` (when momentum != 0).
/// Throws ValueError naming the option: lr, momentum or weight_decay negative (or not finite),
/// nesterov without momentum > 0 and dampening == 0; plus the Optimizer constructor's checks.
class SGD : public Optimizer {
public:
    /// Optimises `params` (leaves that require grad); throws as described above.
    SGD(std::vector<Tensor> params, SGDOptions options);

    /// The options as given (the current learning rate is lr(), which schedules change).
    const SGDOptions& options() const { return options_; }

protected:
    void update(std::size_t index, Tensor& param, const Tensor& grad) override;
    std::vector<std::string> state_names() const override;
    std::vector<std::pair<std::string, double>> option_values() const override;

private:
    SGDOptions options_;
};

}  // namespace attograd::optim
