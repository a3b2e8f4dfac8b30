// Linear: the fully connected layer y = x W^T + b.
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

namespace attograd::nn {

/// Options of Linear, with PyTorch's defaults.
struct LinearOptions {
    std::int64_t in_features = 0;   ///< width of the input's last dimension
    std::int64_t out_features = 0;  ///< width of the output's last dimension
    bool bias = true;               ///< learn an additive bias
    DType dtype = DType::Float32;   ///< parameter dtype (float32 or float64)
};

/// PyTorch's `nn.Linear`: y = x W^T + b, x [..., in_features] -> [..., out_features].
/// Parameters `weight` [out_features, in_features] and `bias` [out_features] (absent when
/// `bias = false`), initialised as PyTorch does: weight by kaiming_uniform(a = sqrt(5)), which
/// is U(-1/sqrt(in_features), 1/sqrt(in_features)), and bias from the same interval (0 when
/// in_features is 0). Prints as `Linear(in_features=4, out_features=8, bias=true)`.
class Linear : public Module {
public:
    /// Draws the initial parameters from `generator`. Throws ValueError on negative sizes,
    /// DTypeError on a non-float dtype, ResourceError naming in_features and out_features when
    /// the weight would be too large (check_parameter_size).
    explicit Linear(LinearOptions options, Generator& generator = default_generator());

    /// x [..., in_features] -> [..., out_features], one GEMM (see attograd::linear). Throws
    /// ShapeError / DTypeError when x does not fit.
    Tensor forward(const Tensor& x) const;

    std::string type_name() const override { return "Linear"; }
    std::string extra_repr() const override;

    const LinearOptions& options() const { return options_; }  ///< the options it was built with
    /// The weight [out_features, in_features] (a handle sharing the parameter's storage).
    Tensor weight() const { return weight_; }
    /// The bias [out_features]; undefined when the layer has none.
    Tensor bias() const { return bias_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    LinearOptions options_;
    Tensor weight_;
    Tensor bias_;
};

}  // namespace attograd::nn
