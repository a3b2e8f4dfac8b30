// Joining, slicing and indexing: concat, stack, narrow, slice, index_select, gather, embedding,
// masked_fill, where, triu and tril, each with its backward (scatter-add wherever indices may repeat).
#include "core/ops_index.hpp"

#include "core/autograd.hpp"
#include "core/detail/broadcast_iter.hpp"
#include "core/detail/parallel.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_reduce.hpp"
#include "core/ops_shape.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <variant>

namespace attograd {
namespace {

void check_defined(const Tensor& t, std::string_view op, std::string_view name) {
    AG_CHECK(t.defined(), ValueError, "{}: undefined tensor argument '{}'", op, name);
}

void check_int64(const Tensor& index, std::string_view op, std::string_view name) {
    AG_CHECK(index.dtype() == DType::Int64, DTypeError, "{}: {} must be int64, got {} {}", op, name,
             index.dtype(), index.shape());
}

// Every entry of `index` must lie in [0, bound).
void check_range(const Tensor& index, std::int64_t bound, std::string_view op, std::string_view what) {
    const auto* p = index.data<std::int64_t>();
    const std::int64_t n = index.numel();  // hoisted: numel() walks the shape
    for (std::int64_t j = 0; j < n; ++j)
        AG_CHECK(p[j] >= 0 && p[j] < bound, IndexError, "{}: index {} at position {} is out of range for {}",
                 op, p[j], j, what);
}

// Copies `rows` runs of `len` elements: run r reads src from element src_offset + r * src_stride
// and writes dst from element dst_offset + r * dst_stride. Same dtype, any dtype.
void copy_runs(const Tensor& src, std::int64_t src_offset, std::int64_t src_stride, Tensor& dst,
               std::int64_t dst_offset, std::int64_t dst_stride, std::int64_t rows, std::int64_t len) {
    if (len == 0) return;
    const std::size_t elem = dtype_size(src.dtype());
    const auto* s = static_cast<const std::byte*>(src.raw_data());
    auto* d = static_cast<std::byte*>(dst.raw_data());
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(d + static_cast<std::size_t>(dst_offset + r * dst_stride) * elem,
                    s + static_cast<std::size_t>(src_offset + r * src_stride) * elem,
                    static_cast<std::size_t>(len) * elem);
}

// As copy_runs, adding into dst (floating dtypes).
void add_runs(const Tensor& src, std::int64_t src_offset, std::int64_t src_stride, Tensor& dst,
              std::int64_t dst_offset, std::int64_t dst_stride, std::int64_t rows, std::int64_t len) {
    dispatch_floating(dst.dtype(), "backward", [&]<class T>(T) {
        const T* s = src.data<T>() + src_offset;
        T* d = dst.data<T>() + dst_offset;
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t i = 0; i < len; ++i) d[r * dst_stride + i] += s[r * src_stride + i];
    });
}

// Joins parts laid out as [outer, chunks[i]] into out [outer, sum(chunks)] (concat and stack).
Tensor join(const std::vector<Tensor>& parts, const Shape& out_shape, std::int64_t outer,
            const std::vector<std::int64_t>& chunks, const char* op) {
    Tensor out = empty(out_shape, {.dtype = parts[0].dtype()});
    std::int64_t row = 0;
    for (auto c : chunks) row += c;
    for (std::size_t i = 0, offset = 0; i < parts.size(); offset += static_cast<std::size_t>(chunks[i]), ++i)
        copy_runs(parts[i], 0, chunks[i], out, static_cast<std::int64_t>(offset), row, outer, chunks[i]);
    if (autograd::needs_record(parts)) {
        std::vector<Shape> shapes;
        shapes.reserve(parts.size());
        for (const Tensor& p : parts) shapes.push_back(p.shape());
        autograd::record(op, parts, out,
                         [shapes, chunks, outer, row](const Tensor& dy, autograd::Gradients& g) {
                             // d part_i = dy's columns [offset_i, offset_i + chunk_i) of every row
                             std::int64_t offset = 0;
                             for (std::size_t i = 0; i < shapes.size(); offset += chunks[i], ++i) {
                                 if (!g.needs(i)) continue;
                                 Tensor part = empty(shapes[i], {.dtype = dy.dtype()});
                                 copy_runs(dy, offset, row, part, 0, chunks[i], outer, chunks[i]);
                                 g.add(i, part);
                             }
                         });
    }
    return out;
}

// out[o, j, :] = x[o, index[j], :]: rows over threads (the embedding of the large training step
// copies 2 MB here, which alone took ~0.1-0.3 ms while the other core waited).
template <class T>
void gather_rows(const T* x, const std::int64_t* idx, std::int64_t k, const AxisSplit& s, T* out) {
    const std::int64_t rows = s.outer * k;
    detail::parallel_for(rows, detail::threads_for(rows * s.inner, detail::kMinParallelWork),
                         [&](std::int64_t row) {
                             const std::int64_t o = row / k, j = row % k;
                             std::copy_n(x + (o * s.size + idx[j]) * s.inner, s.inner, out + row * s.inner);
                         });
}

// dx[o, index[j], :] += dy[o, j, :], repeated indices adding up: column blocks over threads,
// every row in order within each, so no two threads add into one element and each element's
// sum keeps its order on any thread count.
template <class T>
void scatter_add_rows(const T* dy, const std::int64_t* idx, std::int64_t k, const AxisSplit& s, T* dx) {
    constexpr std::int64_t kColumns = 64;
    const std::int64_t blocks = (s.inner + kColumns - 1) / kColumns;
    const auto add_columns = [&](std::int64_t block) {
        const std::int64_t first = block * kColumns, width = std::min(kColumns, s.inner - first);
        for (std::int64_t o = 0; o < s.outer; ++o)
            for (std::int64_t j = 0; j < k; ++j) {
                T* dst = dx + (o * s.size + idx[j]) * s.inner + first;
                const T* src = dy + (o * k + j) * s.inner + first;
                for (std::int64_t i = 0; i < width; ++i) dst[i] += src[i];
            }
    };
    detail::parallel_for(blocks, detail::threads_for(s.outer * k * s.inner, detail::kMinParallelWork),
                         add_columns);
}

// out[o, j, :] = x[o, index[j], :] over the [outer, size, inner] view of x, shaped `out_shape`
// (index_select and embedding). Backward scatter-adds: dx[o, index[j], :] += dy[o, j, :].
Tensor select_rows(const Tensor& x, const AxisSplit& s, const Tensor& index, const Shape& out_shape,
                   const char* op) {
    Tensor out = empty(out_shape, {.dtype = x.dtype()});
    const std::int64_t k = index.numel();
    const auto* idx = index.data<std::int64_t>();
    dispatch_all(x.dtype(), [&]<class T>(T) { gather_rows(x.data<T>(), idx, k, s, out.data<T>()); });
    if (autograd::needs_record({&x})) {
        autograd::record(op, {x}, out, [index, s](const Tensor& dy, autograd::Gradients& g) {
            Tensor dx = g.accumulator(0);  // scatter-added in place
            dispatch_floating(dy.dtype(), "backward", [&]<class T>(T) {
                scatter_add_rows(dy.data<T>(), index.data<std::int64_t>(), index.numel(), s, dx.data<T>());
            });
        });
    }
    return out;
}

// dst[i] = (mask[i] == when) ? value : src[i], over `shape` (src and dst contiguous of that
// shape; the bool mask broadcast to it).
template <class T>
void fill_where(const T* src, const Tensor& mask, const Shape& shape, bool when, T value, T* dst) {
    const bool* pm = mask.data<bool>();
    const std::array<Shape, 1> strides{broadcast_strides(mask.shape(), shape)};
    detail::for_each_run(shape, strides,
                         [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                             const bool* m = pm + off[0];
                             for (std::int64_t i = 0; i < len; ++i)
                                 dst[o + i] = m[i * step[0]] == when ? value : src[o + i];
                         });
}

// `src` (a float gradient) with zeros where the mask equals `when`.
Tensor zero_where(const Tensor& src, const Tensor& mask, bool when) {
    Tensor out = empty(src.shape(), {.dtype = src.dtype()});
    dispatch_floating(src.dtype(), "backward", [&]<class T>(T) {
        fill_where(src.data<T>(), mask, src.shape(), when, T(0), out.data<T>());
    });
    return out;
}

// `value` as an element of `dtype`; throws ValueError when it cannot be represented.
void check_fill_value(double value, DType dtype, std::string_view op) {
    if (dtype == DType::Int64)
        AG_CHECK(std::isfinite(value) && value == std::trunc(value) && std::abs(value) < 0x1p63, ValueError,
                 "{}: value {} cannot be stored in an int64 tensor", op, value);
    if (dtype == DType::Bool)
        AG_CHECK(value == 0.0 || value == 1.0, ValueError, "{}: value {} cannot be stored in a bool tensor",
                 op, value);
}

}  // namespace

Tensor concat(const std::vector<Tensor>& tensors, std::int64_t axis) {
    AG_CHECK(!tensors.empty(), ValueError, "concat: needs at least one tensor, got an empty list");
    for (const Tensor& t : tensors) check_defined(t, "concat", "tensors");
    const Tensor& first = tensors[0];
    AG_CHECK(first.dim() >= 1, ShapeError, "concat: 0-d tensors cannot be concatenated (use stack)");
    const std::int64_t a = normalize_axis(axis, first.dim(), "concat");
    const auto au = static_cast<std::size_t>(a);
    Shape out_shape = first.shape();
    out_shape[au] = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        AG_CHECK(t.dtype() == first.dtype(), DTypeError, "concat: tensor {} is {} {} but tensor 0 is {} {}",
                 i, t.dtype(), t.shape(), first.dtype(), first.shape());
        bool same = t.dim() == first.dim();
        for (std::size_t d = 0; same && d < out_shape.size(); ++d)
            same = d == au || t.shape()[d] == out_shape[d];
        AG_CHECK(same, ShapeError,
                 "concat: tensor {} has shape {} but tensor 0 has {}; sizes must match except along axis {}",
                 i, t.shape(), first.shape(), axis);
        out_shape[au] += t.shape()[au];
    }
    const AxisSplit s = split_at_axis(first.shape(), a);
    std::vector<std::int64_t> chunks;
    chunks.reserve(tensors.size());
    for (const Tensor& t : tensors) chunks.push_back(t.shape()[au] * s.inner);
    return join(tensors, out_shape, s.outer, chunks, "concat");
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t axis) {
    AG_CHECK(!tensors.empty(), ValueError, "stack: needs at least one tensor, got an empty list");
    for (const Tensor& t : tensors) check_defined(t, "stack", "tensors");
    const Tensor& first = tensors[0];
    const std::int64_t a = normalize_axis(axis, first.dim() + 1, "stack");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        AG_CHECK(t.dtype() == first.dtype(), DTypeError, "stack: tensor {} is {} {} but tensor 0 is {} {}", i,
                 t.dtype(), t.shape(), first.dtype(), first.shape());
        AG_CHECK(t.shape() == first.shape(), ShapeError,
                 "stack: tensor {} has shape {} but tensor 0 has {}; all shapes must be equal", i, t.shape(),
                 first.shape());
    }
    Shape out_shape = first.shape();
    out_shape.insert(out_shape.begin() + a, static_cast<std::int64_t>(tensors.size()));
    // Each part is [outer, prod(shape[a:])]; the new axis interleaves them.
    const AxisSplit s = split_at_axis(out_shape, a);
    return join(tensors, out_shape, s.outer, std::vector<std::int64_t>(tensors.size(), s.inner), "stack");
}

Tensor narrow(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t length) {
    check_defined(x, "narrow", "x");
    AG_CHECK(x.dim() >= 1, ShapeError, "narrow: needs a tensor of rank >= 1, got a 0-d tensor");
    const std::int64_t a = normalize_axis(axis, x.dim(), "narrow");
    const AxisSplit s = split_at_axis(x.shape(), a);
    const std::int64_t begin = start < 0 ? start + s.size : start;
    AG_CHECK(begin >= 0 && begin <= s.size, IndexError,
             "narrow: start {} is out of range for axis {} of size {} (shape {})", start, axis, s.size,
             x.shape());
    AG_CHECK(length >= 0 && begin + length <= s.size, IndexError,
             "narrow: start {} + length {} is out of range for axis {} of size {} (shape {})", begin, length,
             axis, s.size, x.shape());
    Shape out_shape = x.shape();
    out_shape[static_cast<std::size_t>(a)] = length;
    Tensor out = empty(out_shape, {.dtype = x.dtype()});
    copy_runs(x, begin * s.inner, s.size * s.inner, out, 0, length * s.inner, s.outer, length * s.inner);
    if (autograd::needs_record({&x})) {
        autograd::record("narrow", {x}, out, [s, begin, length](const Tensor& dy, autograd::Gradients& g) {
            // dx[rows begin .. begin + length along the axis] += dy, in place: a loop over the
            // steps of a sequence adds one step each, not a full-size gradient each
            Tensor dx = g.accumulator(0);
            add_runs(dy, 0, length * s.inner, dx, begin * s.inner, s.size * s.inner, s.outer,
                     length * s.inner);
        });
    }
    return out;
}

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end, std::int64_t step) {
    check_defined(x, "slice", "x");
    AG_CHECK(x.dim() >= 1, ShapeError, "slice: needs a tensor of rank >= 1, got a 0-d tensor");
    AG_CHECK(step >= 1, ValueError, "slice: step must be positive, got {}", step);
    const std::int64_t n = x.shape()[static_cast<std::size_t>(normalize_axis(axis, x.dim(), "slice"))];
    const auto clamp = [n](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
    const std::int64_t begin = clamp(start);
    const std::int64_t length = std::max<std::int64_t>(clamp(end) - begin, 0);
    if (step == 1) return narrow(x, axis, begin, length);
    // every step-th position of [begin, begin + length): one gather, scatter-added back in backward
    std::vector<std::int64_t> positions;
    for (std::int64_t i = begin; i < begin + length; i += step) positions.push_back(i);
    const auto count = static_cast<std::int64_t>(positions.size());
    return index_select(x, axis, index_tensor(positions, {count}));
}

Tensor select(const Tensor& x, std::int64_t axis, std::int64_t index) {
    check_defined(x, "select", "x");
    AG_CHECK(x.dim() >= 1, ShapeError, "select: needs a tensor of rank >= 1, got a 0-d tensor");
    const std::int64_t a = normalize_axis(axis, x.dim(), "select");
    const std::int64_t n = x.shape()[static_cast<std::size_t>(a)];
    AG_CHECK(index >= -n && index < n, IndexError,
             "select: index {} is out of range for axis {} of size {} (shape {})", index, axis, n, x.shape());
    Shape out_shape = x.shape();
    out_shape.erase(out_shape.begin() + a);
    return reshape(narrow(x, a, index < 0 ? index + n : index, 1), out_shape);
}

Tensor index_select(const Tensor& x, std::int64_t axis, const Tensor& index) {
    check_defined(x, "index_select", "x");
    check_defined(index, "index_select", "index");
    check_int64(index, "index_select", "index");
    AG_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 1-D, got shape {}", index.shape());
    AG_CHECK(x.dim() >= 1, ShapeError, "index_select: needs a tensor of rank >= 1, got a 0-d tensor");
    const std::int64_t a = normalize_axis(axis, x.dim(), "index_select");
    const AxisSplit s = split_at_axis(x.shape(), a);
    check_range(index, s.size, "index_select",
                fmt::format("axis {} of size {} (input shape {})", axis, s.size, x.shape()));
    Shape out_shape = x.shape();
    out_shape[static_cast<std::size_t>(a)] = index.numel();
    return select_rows(x, s, index, out_shape, "index_select");
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
    check_defined(weight, "embedding", "weight");
    check_defined(indices, "embedding", "indices");
    AG_CHECK(is_floating(weight.dtype()), DTypeError, "embedding: weight must be float32 or float64, got {}",
             weight.dtype());
    AG_CHECK(weight.dim() == 2, ShapeError,
             "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape {}", weight.shape());
    check_int64(indices, "embedding", "indices");
    const std::int64_t vocab = weight.shape()[0];
    check_range(indices, vocab, "embedding", fmt::format("{} embeddings (weight {})", vocab, weight.shape()));
    Shape out_shape = indices.shape();
    out_shape.push_back(weight.shape()[1]);
    return select_rows(weight, split_at_axis(weight.shape(), 0), indices, out_shape, "embedding");
}

Tensor gather(const Tensor& x, std::int64_t axis, const Tensor& index) {
    check_defined(x, "gather", "x");
    check_defined(index, "gather", "index");
    check_int64(index, "gather", "index");
    AG_CHECK(x.dim() >= 1 && index.dim() == x.dim(), ShapeError,
             "gather: index {} must have the same rank (>= 1) as input {}", index.shape(), x.shape());
    const std::int64_t a = normalize_axis(axis, x.dim(), "gather");
    const auto au = static_cast<std::size_t>(a);
    for (std::size_t d = 0; d < x.shape().size(); ++d)
        AG_CHECK(d == au || index.shape()[d] <= x.shape()[d], ShapeError,
                 "gather: index {} is larger than input {} in dimension {}", index.shape(), x.shape(), d);
    const std::int64_t n = x.shape()[au];
    check_range(index, n, "gather", fmt::format("axis {} of size {} (input shape {})", axis, n, x.shape()));
    // Offsets of x along every dimension but the axis; the axis offset comes from the index.
    std::array<Shape, 1> strides{contiguous_strides(x.shape())};
    const std::int64_t axis_stride = strides[0][au];
    strides[0][au] = 0;
    Tensor out = empty(index.shape(), {.dtype = x.dtype()});
    const auto* idx = index.data<std::int64_t>();
    dispatch_all(x.dtype(), [&]<class T>(T) {
        const T* px = x.data<T>();
        T* po = out.data<T>();
        detail::for_each_run(index.shape(), strides,
                             [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                                 for (std::int64_t i = 0; i < len; ++i)
                                     po[o + i] = px[off[0] + i * step[0] + idx[o + i] * axis_stride];
                             });
    });
    if (autograd::needs_record({&x})) {
        autograd::record(
            "gather", {x}, out,
            [index, strides, axis_stride, in_shape = x.shape()](const Tensor& dy, autograd::Gradients& g) {
                // dx[.., index[..], ..] += dy[..] (scatter-add: repeated indices add)
                Tensor dx = zeros(in_shape, {.dtype = dy.dtype()});
                const auto* idx = index.data<std::int64_t>();
                dispatch_floating(dy.dtype(), "backward", [&]<class T>(T) {
                    const T* pd = dy.data<T>();
                    T* px = dx.data<T>();
                    detail::for_each_run(
                        index.shape(), strides,
                        [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                            for (std::int64_t i = 0; i < len; ++i)
                                px[off[0] + i * step[0] + idx[o + i] * axis_stride] += pd[o + i];
                        });
                });
                g.add(0, dx);
            });
    }
    return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
    check_defined(x, "masked_fill", "x");
    check_defined(mask, "masked_fill", "mask");
    AG_CHECK(mask.dtype() == DType::Bool, DTypeError, "masked_fill: mask must be bool, got {} {}",
             mask.dtype(), mask.shape());
    AG_CHECK(broadcast_shapes(x.shape(), mask.shape(), "masked_fill") == x.shape(), ShapeError,
             "masked_fill: mask {} does not broadcast to the input's shape {}", mask.shape(), x.shape());
    check_fill_value(value, x.dtype(), "masked_fill");
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_all(x.dtype(), [&]<class T>(T) {
        fill_where(x.data<T>(), mask, x.shape(), true, static_cast<T>(value), out.data<T>());
    });
    if (autograd::needs_record({&x})) {
        // dx = dy where the mask is false, 0 where it is true
        autograd::record("masked_fill", {x}, out, [mask](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, zero_where(dy, mask, true));
        });
    }
    return out;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
    check_defined(condition, "where", "condition");
    check_defined(a, "where", "a");
    check_defined(b, "where", "b");
    AG_CHECK(condition.dtype() == DType::Bool, DTypeError, "where: condition must be bool, got {} {}",
             condition.dtype(), condition.shape());
    if (a.dtype() != b.dtype()) {
        // PyTorch's promotion: int64 / bool with a float -> that float, bool with int64 -> int64
        AG_CHECK(!is_floating(a.dtype()) || !is_floating(b.dtype()), DTypeError,
                 "where: dtypes of a and b differ: {} {} and {} {}", a.dtype(), a.shape(), b.dtype(),
                 b.shape());
        const DType common =
            is_floating(a.dtype()) ? a.dtype() : (is_floating(b.dtype()) ? b.dtype() : DType::Int64);
        return where(condition, to_dtype(a, common), to_dtype(b, common));
    }
    const Shape out_shape =
        broadcast_shapes(broadcast_shapes(condition.shape(), a.shape(), "where"), b.shape(), "where");
    Tensor out = empty(out_shape, {.dtype = a.dtype()});
    const std::array<Shape, 3> strides{broadcast_strides(condition.shape(), out_shape),
                                       broadcast_strides(a.shape(), out_shape),
                                       broadcast_strides(b.shape(), out_shape)};
    dispatch_all(a.dtype(), [&]<class T>(T) {
        const bool* pc = condition.data<bool>();
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        detail::for_each_run(
            out_shape, strides, [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                for (std::int64_t i = 0; i < len; ++i)
                    po[o + i] =
                        pc[off[0] + i * step[0]] ? pa[off[1] + i * step[1]] : pb[off[2] + i * step[2]];
            });
    });
    if (autograd::needs_record({&a, &b})) {
        autograd::record(
            "where", {a, b}, out,
            [condition, sa = a.shape(), sb = b.shape()](const Tensor& dy, autograd::Gradients& g) {
                // da = dy where condition (summed to a's shape), db = dy elsewhere
                if (g.needs(0)) g.add(0, sum_to(zero_where(dy, condition, false), sa));
                if (g.needs(1)) g.add(1, sum_to(zero_where(dy, condition, true), sb));
            });
    }
    return out;
}

namespace {

// x with the elements of each [m, n] matrix outside the kept triangle set to 0: j - i >= diagonal
// kept (upper) or j - i <= diagonal kept (lower).
Tensor triangle(const Tensor& x, std::int64_t diagonal, bool upper, const char* op) {
    check_defined(x, op, "x");
    AG_CHECK(x.dim() >= 2, ShapeError, "{}: expected at least 2 dimensions, got {}", op, x.shape());
    const std::int64_t m = x.size(-2), n = x.size(-1);
    const std::int64_t matrices = m * n == 0 ? 0 : x.numel() / (m * n);
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_all(x.dtype(), [&]<class T>(T) {
        const T* px = x.data<T>();
        T* po = out.data<T>();
        for (std::int64_t b = 0; b < matrices; ++b)
            for (std::int64_t i = 0; i < m; ++i)
                for (std::int64_t j = 0; j < n; ++j) {
                    const std::int64_t k = (b * m + i) * n + j;
                    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
                    po[k] = keep ? px[k] : T(0);
                }
    });
    if (autograd::needs_record({&x})) {
        // dx = dy on the kept triangle, 0 elsewhere
        autograd::record(op, {x}, out, [diagonal, upper, op](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, triangle(dy, diagonal, upper, op));
        });
    }
    return out;
}

}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, double b) {
    return where(condition, a, detail::number_operand(a, b, "where"));
}
Tensor where(const Tensor& condition, double a, const Tensor& b) {
    return where(condition, detail::number_operand(b, a, "where"), b);
}

Tensor where(const Tensor& condition, double a, double b) { return where(condition, scalar(a), scalar(b)); }
Tensor where(const Tensor& condition, std::int64_t a, std::int64_t b) {
    return where(condition, index_tensor({a}, {}), index_tensor({b}, {}));
}

Tensor triu(const Tensor& x, std::int64_t diagonal) { return triangle(x, diagonal, true, "triu"); }
Tensor tril(const Tensor& x, std::int64_t diagonal) { return triangle(x, diagonal, false, "tril"); }

}  // namespace attograd
