// Shape ops: reshape, transpose/permute (joining and indexing live in ops_index).
#include "core/ops_shape.hpp"

#include "core/autograd.hpp"
#include "core/detail/broadcast_iter.hpp"

#include <algorithm>
#include <cstring>

namespace attograd {

Tensor reshape(const Tensor& x, const Shape& shape) {
    AG_CHECK(x.defined(), ValueError, "reshape: undefined tensor argument");
    Shape target = shape;
    // A product that wraps around could match an empty tensor's 0 elements. Zero sizes are
    // skipped: the strides of the other sizes must fit all the same.
    std::int64_t nonzero = 1;
    for (auto size : target)
        AG_CHECK(size <= 0 || !__builtin_mul_overflow(nonzero, size, &nonzero), ShapeError,
                 "reshape: shape {} has too many elements", shape);
    std::int64_t known = 1, inferred = -1;
    for (std::size_t i = 0; i < target.size(); ++i) {
        if (target[i] == -1) {
            AG_CHECK(inferred < 0, ShapeError, "reshape: more than one -1 in {}", shape);
            inferred = static_cast<std::int64_t>(i);
        } else {
            AG_CHECK(target[i] >= 0, ShapeError, "reshape: negative size in {}", shape);
            known *= target[i];  // cannot overflow: the non-zero sizes' product fits (checked above)
        }
    }
    if (inferred >= 0) {
        AG_CHECK(known > 0 && x.numel() % known == 0, ShapeError, "reshape: cannot reshape {} into {}",
                 x.shape(), shape);
        target[static_cast<std::size_t>(inferred)] = x.numel() / known;
    }
    AG_CHECK(numel(target) == x.numel(), ShapeError, "reshape: cannot reshape {} ({} elements) into {}",
             x.shape(), x.numel(), shape);
    if (target == x.shape()) return x;
    auto impl = detail::make_impl();
    impl->shape = target;
    impl->dtype = x.dtype();
    impl->storage = x.impl()->storage;  // contiguous: a reshape is a view
    Tensor out(std::move(impl));
    if (autograd::needs_record({&x})) {
        autograd::record("reshape", {x}, out,
                         [in_shape = x.shape()](const Tensor& dy, autograd::Gradients& g) {
                             g.add(0, reshape(dy, in_shape));
                         });
    }
    return out;
}

// Both are reshapes (views), whose backward reshapes dy to the input's shape.
Tensor unsqueeze(const Tensor& x, std::int64_t dim) {
    AG_CHECK(x.defined(), ValueError, "unsqueeze: undefined tensor argument");
    const std::int64_t rank = x.dim();
    AG_CHECK(dim >= -(rank + 1) && dim <= rank, IndexError,
             "unsqueeze: dim {} is out of range [{}, {}] for a tensor of shape {}", dim, -(rank + 1), rank,
             x.shape());
    Shape shape = x.shape();
    shape.insert(shape.begin() + (dim < 0 ? dim + rank + 1 : dim), 1);
    return reshape(x, shape);
}

Tensor squeeze(const Tensor& x) {
    AG_CHECK(x.defined(), ValueError, "squeeze: undefined tensor argument");
    Shape shape;
    for (const std::int64_t size : x.shape())
        if (size != 1) shape.push_back(size);
    return reshape(x, shape);
}

Tensor squeeze(const Tensor& x, std::int64_t dim) {
    AG_CHECK(x.defined(), ValueError, "squeeze: undefined tensor argument");
    const std::int64_t rank = x.dim(), bound = std::max<std::int64_t>(rank, 1);  // 0-d: dim 0 or -1
    AG_CHECK(dim >= -bound && dim < bound, IndexError,
             "squeeze: dim {} is out of range [{}, {}] for a tensor of shape {}", dim, -bound, bound - 1,
             x.shape());
    if (rank == 0) return x;
    const std::int64_t d = dim < 0 ? dim + rank : dim;
    if (x.shape()[static_cast<std::size_t>(d)] != 1) return x;
    Shape shape = x.shape();
    shape.erase(shape.begin() + d);
    return reshape(x, shape);
}

Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims) {
    AG_CHECK(x.defined(), ValueError, "permute: undefined tensor argument");
    const std::int64_t rank = x.dim();
    AG_CHECK(static_cast<std::int64_t>(dims.size()) == rank, IndexError,
             "permute: {} dims given for a tensor of shape {}", dims.size(), x.shape());
    std::vector<std::int64_t> axes(dims.size());
    std::vector<bool> seen(dims.size(), false);
    for (std::size_t i = 0; i < dims.size(); ++i) {
        axes[i] = normalize_axis(dims[i], rank, "permute");
        AG_CHECK(!seen[static_cast<std::size_t>(axes[i])], IndexError, "permute: dims {} repeat an axis",
                 dims);
        seen[static_cast<std::size_t>(axes[i])] = true;
    }
    const Shape in_strides = contiguous_strides(x.shape());
    Shape out_shape(axes.size()), read_strides(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
        out_shape[i] = x.shape()[static_cast<std::size_t>(axes[i])];
        read_strides[i] = in_strides[static_cast<std::size_t>(axes[i])];
    }
    Tensor out = empty(out_shape, {.dtype = x.dtype()});
    dispatch_all(x.dtype(), [&]<class T>(T) {
        const T* px = x.data<T>();
        T* po = out.data<T>();
        const std::array<Shape, 1> strides{read_strides};
        detail::for_each_run(out_shape, strides,
                             [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                                 const T* src = px + off[0];
                                 for (std::int64_t k = 0; k < len; ++k) po[o + k] = src[k * step[0]];
                             });
    });
    if (autograd::needs_record({&x})) {
        std::vector<std::int64_t> inverse(axes.size());
        for (std::size_t i = 0; i < axes.size(); ++i)
            inverse[static_cast<std::size_t>(axes[i])] = static_cast<std::int64_t>(i);
        // dx = dy permuted back by the inverse permutation
        autograd::record("permute", {x}, out, [inverse](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, permute(dy, inverse));
        });
    }
    return out;
}

Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) {
    AG_CHECK(x.defined(), ValueError, "transpose: undefined tensor argument");
    const std::int64_t a = normalize_axis(dim0, x.dim(), "transpose");
    const std::int64_t b = normalize_axis(dim1, x.dim(), "transpose");
    std::vector<std::int64_t> dims(static_cast<std::size_t>(x.dim()));
    for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<std::int64_t>(i);
    if (x.dim() > 0) std::swap(dims[static_cast<std::size_t>(a)], dims[static_cast<std::size_t>(b)]);
    return permute(x, dims);
}

}  // namespace attograd
