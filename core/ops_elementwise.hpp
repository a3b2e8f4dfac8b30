// Elementwise ops: arithmetic with NumPy broadcasting, unary maths and activations.
#pragma once

#include "core/tensor.hpp"

#include <concepts>
#include <optional>

namespace attograd {

// Type promotion (PyTorch's, for the binary ops and comparisons below): int64 or bool with a
// float tensor computes in that float; bool with int64 in int64; two int64 tensors stay int64
// (wrapping on overflow, as PyTorch). A plain number takes the tensor's dtype, except that a
// floating-point number (a C++ double) with an int64 / bool tensor promotes to float32, while
// an integer (any C++ integral type) keeps it int64 — the rule PyTorch applies to Python's
// float and int. Unlike PyTorch, float32 with float64 is a DTypeError ("dtypes differ"): a
// silent float64 result would hide a layer fed the wrong dtype.

/// a + b with NumPy broadcasting: a [..], b [..] -> broadcast shape, float or int64. Backward
/// sums the gradient over broadcast dimensions. Throws ShapeError (no broadcast), DTypeError
/// (float32 with float64, bool with bool).
Tensor add(const Tensor& a, const Tensor& b);
/// a - b, broadcasting as add.
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b (elementwise), broadcasting as add.
Tensor mul(const Tensor& a, const Tensor& b);
/// a / b (elementwise, true division), broadcasting as add. Two int64 tensors divide as float32
/// (PyTorch's `/`). Division by zero follows IEEE (inf/NaN).
Tensor div(const Tensor& a, const Tensor& b);
/// floor(a / b) (Python's `//`, PyTorch's `torch.div(a, b, rounding_mode="floor")`), broadcasting
/// and promoting as add; int64 stays int64. Not differentiable (piecewise constant; the result
/// never requires grad). Throws ValueError on an integer division by zero.
Tensor floor_divide(const Tensor& a, const Tensor& b);
/// Python's `%` (PyTorch's `torch.remainder`): a - floor(a / b) * b, which has the divisor's
/// sign; int64 stays int64. Backward: da = dy, db = -dy * floor(a / b). Throws ValueError on an
/// integer division by zero.
Tensor remainder(const Tensor& a, const Tensor& b);
/// floor_divide / remainder with a plain number as the divisor.
Tensor floor_divide(const Tensor& a, double b);
Tensor remainder(const Tensor& a, double b);

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

/// Elementwise comparisons a == b, a != b, a < b, a <= b, a > b, a >= b with broadcasting and
/// type promotion (see above); bool results, not differentiable. Any dtype. Throws ShapeError
/// (no broadcast), DTypeError (float32 with float64).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
/// Comparisons with a plain number (`gt(x, 0.5)`, `eq(ids, 3)`): compared in x's dtype when x
/// is float (as PyTorch converts the number), in float64 for int64 / bool x (exact below 2^53).
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
/// Comparison operators (`x > 0.5`, `a == b`, `0 < x`): bool tensors, as in PyTorch, so a Tensor
/// is never compared by identity.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(double a, const Tensor& b);
Tensor operator!=(double a, const Tensor& b);
Tensor operator<(double a, const Tensor& b);
Tensor operator<=(double a, const Tensor& b);
Tensor operator>(double a, const Tensor& b);
Tensor operator>=(double a, const Tensor& b);

/// Elementwise max(a, b) (PyTorch's `torch.maximum`), broadcasting and promoting as add: a [..],
/// b [..] -> broadcast shape. NaN propagates. Backward as PyTorch's: the gradient goes to the
/// larger input, split 0.5 / 0.5 where a == b, summed back to each shape. Throws ShapeError (no
/// broadcast), DTypeError (float32 with float64), ValueError (an undefined tensor).
Tensor maximum(const Tensor& a, const Tensor& b);
/// Elementwise min(a, b) (PyTorch's `torch.minimum`), as maximum.
Tensor minimum(const Tensor& a, const Tensor& b);
/// x limited to [min, max] (PyTorch's `torch.clamp`): min(max(x, min), max) elementwise, so
/// min > max gives max everywhere; either bound may be omitted. NaN in x propagates. Backward as
/// PyTorch's: dx = dy where min <= x <= max (the boundary included), 0 outside. A double bound
/// takes a float x's dtype and makes an int64 x float32. Throws ValueError when both bounds are
/// omitted or one is NaN.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);

/// A copy with its own storage; differentiable (gradient passes through).
Tensor clone(const Tensor& x);
/// Converts to `dtype`. Between float types the gradient flows back (converted); to int64 or
/// bool it does not. Returns `x` itself when the dtype already matches.
Tensor to_dtype(const Tensor& x, DType dtype);

// Operators and number overloads: a double takes a float tensor's dtype (an int64 / bool tensor
// becomes float32); an integer takes a float tensor's dtype and keeps an int64 tensor int64.
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
/// a % b: remainder (Python's `%`).
Tensor operator%(const Tensor& a, const Tensor& b);

namespace detail {
/// `value` as the other operand of x's arithmetic: 0-d of x's dtype, float32 for a non-float x.
Tensor number_operand(const Tensor& x, double value, std::string_view op);
/// Integer `value` as the other operand: 0-d of x's dtype when x is float, int64 otherwise.
Tensor integer_operand(const Tensor& x, std::int64_t value, std::string_view op);
/// x op b (or b op x when `number_first`) for op in "+-*/%" or 'f' (floor_divide).
Tensor integer_arith(char op, const Tensor& x, std::int64_t b, bool number_first);
}  // namespace detail

// Integer numbers (`ids + 1`, `x * 2`, `ids % 3`): an int64 tensor stays int64.
template <std::integral I>
Tensor operator+(const Tensor& a, I b) {
    return detail::integer_arith('+', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor operator-(const Tensor& a, I b) {
    return detail::integer_arith('-', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor operator*(const Tensor& a, I b) {
    return detail::integer_arith('*', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor operator/(const Tensor& a, I b) {
    return detail::integer_arith('/', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor operator%(const Tensor& a, I b) {
    return detail::integer_arith('%', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor operator+(I a, const Tensor& b) {
    return detail::integer_arith('+', b, static_cast<std::int64_t>(a), true);
}
template <std::integral I>
Tensor operator-(I a, const Tensor& b) {
    return detail::integer_arith('-', b, static_cast<std::int64_t>(a), true);
}
template <std::integral I>
Tensor operator*(I a, const Tensor& b) {
    return detail::integer_arith('*', b, static_cast<std::int64_t>(a), true);
}
template <std::integral I>
Tensor operator/(I a, const Tensor& b) {
    return detail::integer_arith('/', b, static_cast<std::int64_t>(a), true);
}
/// floor_divide / remainder with an integer divisor (int64 stays int64).
template <std::integral I>
Tensor floor_divide(const Tensor& a, I b) {
    return detail::integer_arith('f', a, static_cast<std::int64_t>(b), false);
}
template <std::integral I>
Tensor remainder(const Tensor& a, I b) {
    return detail::integer_arith('%', a, static_cast<std::int64_t>(b), false);
}

}  // namespace attograd
