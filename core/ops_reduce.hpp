// Reductions: sum, mean, max / min and vector norms over axes, and sum_to for broadcast gradients.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// Sum of every element -> 0-d tensor.
Tensor sum(const Tensor& x);
/// Sum over `axes` (negative allowed; duplicates rejected): x [..] -> reduced shape, with the
/// reduced dimensions kept as size 1 when `keepdim`. Throws IndexError on a bad axis.
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);
/// Mean of every element -> 0-d tensor (NaN for an empty tensor, as in PyTorch).
Tensor mean(const Tensor& x);
/// Mean over `axes`, as sum.
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);

/// Result of max or min over an axis (PyTorch's `(values, indices)`).
struct MaxResult {
    Tensor values;   ///< the maxima (differentiable; the gradient goes to the first maximum)
    Tensor indices;  ///< int64 position of the first maximum along the axis
};
/// Max over one axis (PyTorch's `torch.max(x, dim, keepdim)`): x [.., n, ..] float -> values and
/// indices [.., ..] (or [.., 1, ..] with keepdim); NaN propagates (the first NaN wins). Throws
/// ShapeError when the axis is empty, IndexError on a bad axis, DTypeError when x is not float.
MaxResult max(const Tensor& x, std::int64_t axis, bool keepdim = false);
/// Min over one axis, as max (the first minimum; its gradient goes there).
MaxResult min(const Tensor& x, std::int64_t axis, bool keepdim = false);
/// Max of every element (PyTorch's `torch.max(x)`): x [..] float -> 0-d. The gradient is shared
/// evenly among the elements equal to the maximum (PyTorch's backward); NaN propagates. Throws
/// ShapeError on an empty tensor, DTypeError when x is not float.
Tensor max(const Tensor& x);
/// Min of every element, as max(x).
Tensor min(const Tensor& x);
/// Index of the maximum along `axis` (int64, not differentiable).
Tensor argmax(const Tensor& x, std::int64_t axis, bool keepdim = false);
/// Index of the minimum along `axis` (int64, not differentiable).
Tensor argmin(const Tensor& x, std::int64_t axis, bool keepdim = false);

/// Vector p-norm over `dims` (PyTorch's `torch.linalg.vector_norm`): p = 1 gives sum |x|,
/// p = 2 sqrt(sum x^2), p = inf (`std::numeric_limits<double>::infinity()`) max |x|. An empty
/// `dims` reduces every dimension (PyTorch's `dim=None`); otherwise x [..] -> x's shape without
/// `dims` (kept as size 1 when `keepdim`). Accumulated in double; NaN propagates. One tape entry,
/// backward as PyTorch's: dx = dy * sign(x) for p = 1, dy * x / n for p = 2 (0 where n = 0, so
/// the zero vector has gradient 0, not NaN), and for p = inf dy * sign(x) shared evenly among
/// the elements with |x| = n. Throws ValueError (p not 1, 2 or inf), DTypeError (not float),
/// IndexError (bad or repeated dim), ShapeError (p = inf over an empty reduction, which has no
/// maximum).
Tensor norm(const Tensor& x, double p = 2.0, const std::vector<std::int64_t>& dims = {},
            bool keepdim = false);

/// True when no element of `x` is NaN or infinite (PyTorch's `torch.isfinite(x).all()`, as a
/// bool); integer tensors and empty ones are finite. Not differentiable. Throws ValueError on an
/// undefined tensor.
bool all_finite(const Tensor& x);

/// Sums `grad` down to `shape`, the inverse of broadcasting `shape` up to grad's shape (one
/// helper for every broadcast backward). Differentiable. Throws ShapeError when `shape` does
/// not broadcast to grad's shape.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace attograd
