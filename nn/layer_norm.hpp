// LayerNorm: normalisation over the last dimensions with a learned scale and shift.
#pragma once

#include "nn/module.hpp"

namespace attograd::nn {

/// Options of LayerNorm, with PyTorch's defaults.
struct LayerNormOptions {
    Shape normalized_shape;          ///< the trailing dimensions normalised over, e.g. {E}
    double eps = 1e-5;               ///< added to the variance
    bool elementwise_affine = true;  ///< learn `weight` (and `bias`)
    bool bias = true;              ///< learn `bias` too (PyTorch >= 2.1); ignored without elementwise_affine
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// PyTorch's `nn.LayerNorm` (Ba, Kiros & Hinton 2016): x [..., d...] -> same shape, each slice
/// over `normalized_shape` [d...] normalised with its mean and biased variance, then scaled by
/// `weight` [d...] (initialised to 1) and shifted by `bias` [d...] (initialised to 0).
/// Prints as `LayerNorm(normalized_shape=[4], eps=1e-05, elementwise_affine=true)`.
class LayerNorm : public Module {
public:
    /// Throws ValueError on an empty normalized_shape, a negative size or a negative eps,
    /// DTypeError on a non-float dtype, ResourceError naming normalized_shape when the weight
    /// would be too large (check_parameter_size).
    explicit LayerNorm(LayerNormOptions options);

    /// x [..., d...] -> same shape (see attograd::layer_norm). Throws ShapeError when the
    /// trailing dimensions of x are not normalized_shape.
    Tensor forward(const Tensor& x) const;

    std::string type_name() const override { return "LayerNorm"; }
    std::string extra_repr() const override;

    const LayerNormOptions& options() const { return options_; }  ///< the options it was built with
    /// The scale [d...]; undefined without elementwise_affine.
    Tensor weight() const { return weight_; }
    /// The shift [d...]; undefined without elementwise_affine or bias.
    Tensor bias() const { return bias_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    LayerNormOptions options_;
    Tensor weight_;
    Tensor bias_;
};

}  // namespace attograd::nn
