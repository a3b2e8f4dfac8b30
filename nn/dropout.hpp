// Dropout: zeroes random elements while training.
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

namespace attograd::nn {

/// Options of Dropout, with PyTorch's defaults.
struct DropoutOptions {
    double p = 0.5;  ///< probability of zeroing an element, in [0, 1]
};

/// PyTorch's `nn.Dropout` (Srivastava et al. 2014, inverted scaling): in training mode each
/// element is zeroed with probability p and the rest are scaled by 1 / (1 - p); in eval mode
/// the input passes unchanged. No parameters. Prints as `Dropout(p=0.5)`.
class Dropout : public Module {
public:
    /// Masks are drawn from `generator`, which must outlive the module. Throws ValueError
    /// unless 0 <= p <= 1.
    explicit Dropout(DropoutOptions options = {}, Generator& generator = default_generator());

    /// x [..] -> same shape (see attograd::dropout).
    Tensor forward(const Tensor& x) const;

    std::string type_name() const override { return "Dropout"; }
    std::string extra_repr() const override;

    const DropoutOptions& options() const { return options_; }  ///< the options it was built with

private:
    DropoutOptions options_;
    Generator* generator_;
};

}  // namespace attograd::nn
