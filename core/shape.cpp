// Shapes, strides, axis normalisation and NumPy broadcasting rules.
#include "core/shape.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <ostream>

namespace attograd {

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << fmt::format("{}", shape); }

std::int64_t numel(const Shape& shape) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
}

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    std::int64_t stride = 1;
    for (auto i = static_cast<std::int64_t>(shape.size()) - 1; i >= 0; --i) {
        strides[i] = stride;
        stride *= shape[i];
    }
    return strides;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view op) {
    const std::int64_t bound = std::max<std::int64_t>(rank, 1);  // 0-d tensors accept axis 0 / -1
    AG_CHECK(axis >= -bound && axis < bound, IndexError,
             "{}: axis {} is out of range for a tensor of rank {}", op, axis, rank);
    return axis < 0 ? axis + bound : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
    const std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        AG_CHECK(da == db || da == 1 || db == 1, ShapeError,
                 "{}: shapes {} and {} do not broadcast (dimension {}: {} vs {})", op, a, b, i, da, db);
        out[i] = da == 1 ? db : da;
    }
    return out;
}

Shape broadcast_strides(const Shape& shape, const Shape& out) {
    Shape strides(out.size(), 0);
    const std::size_t offset = out.size() - shape.size();
    std::int64_t stride = 1;  // the contiguous stride of dimension i, innermost first
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[offset + i] = shape[i] == 1 ? 0 : stride;
        stride *= shape[i];
    }
    return strides;
}

AxisSplit split_at_axis(const Shape& shape, std::int64_t axis) {
    AxisSplit split;
    if (shape.empty()) return split;
    const auto a = static_cast<std::size_t>(axis);
    for (std::size_t d = 0; d < a; ++d) split.outer *= shape[d];
    split.size = shape[a];
    for (std::size_t d = a + 1; d < shape.size(); ++d) split.inner *= shape[d];
    return split;
}

}  // namespace attograd
