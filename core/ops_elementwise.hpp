// Elementwise ops: arithmetic with NumPy broadcasting, unary maths and activations.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// a + b with NumPy broadcasting: a [..], b [..] -> broadcast shape. Backward sums the
/// gradient over broadcast dimensions. Throws ShapeError (no broadcast), DTypeError (dtypes
/// differ or not float).
Tensor add(const Tensor& a, const Tensor& b);
/// a - b, broadcasting as add.
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b (elementwise), broadcasting as add.
Tensor mul(const Tensor& a, const Tensor& b);
/// a / b (elementwise), broadcasting as add. Division by zero follows IEEE (inf/NaN).
Tensor div(const Tensor& a, const Tensor& b);

/// -x.
Tensor neg(const Tensor& x);
/// e^x.
Tensor exp(const Tensor& x);
/// Natural log; log(0) = -inf as in PyTorch.
Tensor log(const Tensor& x);
/// Square root.
Tensor sqrt(const Tensor& x);
/// x^exponent elementwise; d/dx = exponent * x^(exponent-1).
Tensor pow(const Tensor& x, double exponent);
/// |x|; the gradient at 0 is 0 (PyTorch's convention).
Tensor abs(const Tensor& x);
/// tanh(x); saturates to +-1 without NaN for any finite x.
Tensor tanh(const Tensor& x);
/// 1 / (1 + e^-x), computed without overflow for any finite x.
Tensor sigmoid(const Tensor& x);
/// max(x, 0); gradient 0 at x = 0 (PyTorch's convention).
Tensor relu(const Tensor& x);
/// Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016; PyTorch's
/// default `approximate='none'`).
Tensor gelu(const Tensor& x);

/// Elementwise comparisons with broadcasting; bool results, not differentiable.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);

/// A copy with its own storage; differentiable (gradient passes through).
Tensor clone(const Tensor& x);
/// Converts to `dtype`. Between float types the gradient flows back (converted); to int64 or
/// bool it does not. Returns `x` itself when the dtype already matches.
Tensor to_dtype(const Tensor& x, DType dtype);

// Operators and scalar overloads (the scalar becomes a 0-d tensor of the other side's dtype).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace attograd
