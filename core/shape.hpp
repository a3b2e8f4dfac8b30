// Shapes, strides, axis normalisation and NumPy broadcasting rules.
#pragma once

#include <fmt/ranges.h>  // formats a Shape as [2, 3]

#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <vector>

namespace attograd {

/// Sizes of a tensor's dimensions, outermost first (row-major).
using Shape = std::vector<std::int64_t>;

/// Prints a shape as fmt does, `[2, 3]` (`[]` for 0-d). Shape is a std::vector, so argument-dependent
/// lookup does not find this: it is found inside namespace attograd, after `using namespace attograd`
/// or `using attograd::operator<<`.
std::ostream& operator<<(std::ostream& os, const Shape& shape);

/// Number of elements (1 for a 0-d shape).
std::int64_t numel(const Shape& shape);

/// Row-major contiguous strides in elements.
Shape contiguous_strides(const Shape& shape);

/// Maps a possibly negative axis to [0, rank); throws IndexError naming `op` when out of range.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view op);

/// NumPy broadcasting of two shapes (align right; sizes equal or one of them 1).
/// Throws ShapeError naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

/// Strides that read a tensor of `shape` as if it had shape `out` (0 on broadcast dims).
/// `shape` must broadcast to `out`.
Shape broadcast_strides(const Shape& shape, const Shape& out);

/// A row-major shape seen as [outer, size, inner] around one axis: `outer` is the product of
/// the sizes before it, `inner` of those after it. Kernels that work along an axis read
/// element (o, k, i) at offset (o * size + k) * inner + i.
struct AxisSplit {
    std::int64_t outer = 1;  ///< product of the sizes before the axis
    std::int64_t size = 1;   ///< the axis's size
    std::int64_t inner = 1;  ///< product of the sizes after the axis
};

/// Splits `shape` around `axis` (already normalised; a 0-d shape gives 1, 1, 1).
AxisSplit split_at_axis(const Shape& shape, std::int64_t axis);

}  // namespace attograd
