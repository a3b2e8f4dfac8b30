// Python-style indexing, x.index({...}): integers, Slice and Ellipsis compose select and slice;
// int64 index tensors gather as PyTorch's advanced indexing (backward: index_select's scatter-add).
#include "core/ops_index.hpp"
#include "core/ops_shape.hpp"

#include <algorithm>
#include <numeric>
#include <variant>

namespace attograd {
namespace {

using TensorPtr = std::shared_ptr<const Tensor>;

/// One dimension of x picked by index tensor `indices`.
struct Advanced {
    std::int64_t dim;
    Tensor indices;
};

/// int64 [S] flat row numbers into the advanced dimensions of `shape`, taken row-major: entry p
/// is sum_j wrap(I_j[p]) * stride_j, the index tensors broadcast to S together; a negative
/// index counts from the end. Throws IndexError naming the index and the dimension.
Tensor flat_rows(const std::vector<Advanced>& advanced, const Shape& shape, const Shape& S,
                 const Shape& x_shape) {
    const auto rank = static_cast<std::int64_t>(S.size());
    // Each index tensor's strides over S: 0 along broadcast (size-1 or missing) dimensions.
    std::vector<std::vector<std::int64_t>> strides;
    std::vector<std::int64_t> dim_stride(advanced.size());
    std::int64_t stride = 1;
    for (std::size_t j = advanced.size(); j-- > 0;) {
        dim_stride[j] = stride;
        stride *= shape[static_cast<std::size_t>(advanced[j].dim)];
    }
    for (const Advanced& a : advanced) {
        const Shape& own = a.indices.shape();
        std::vector<std::int64_t> s(static_cast<std::size_t>(rank), 0);
        std::int64_t step = 1;
        for (std::int64_t d = std::ssize(own) - 1; d >= 0; --d) {
            const auto out_d = static_cast<std::size_t>(rank - std::ssize(own) + d);
            s[out_d] = own[static_cast<std::size_t>(d)] == 1 ? 0 : step;
            step *= own[static_cast<std::size_t>(d)];
        }
        strides.push_back(std::move(s));
    }
    const std::int64_t count = numel(S);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count), 0);
    std::vector<std::int64_t> coord(static_cast<std::size_t>(rank), 0);
    for (std::int64_t p = 0; p < count; ++p) {
        std::int64_t row = 0;
        for (std::size_t j = 0; j < advanced.size(); ++j) {
            std::int64_t offset = 0;
            for (std::size_t d = 0; d < coord.size(); ++d) offset += coord[d] * strides[j][d];
            const std::int64_t i = advanced[j].indices.data<std::int64_t>()[offset];
            const std::int64_t n = shape[static_cast<std::size_t>(advanced[j].dim)];
            AG_CHECK(i >= -n && i < n, IndexError,
                     "index: index {} is out of range for dimension {} of size {} (shape {})", i,
                     advanced[j].dim, n, x_shape);
            row += (i < 0 ? i + n : i) * dim_stride[j];
        }
        rows[static_cast<std::size_t>(p)] = row;
        for (std::int64_t d = rank - 1; d >= 0; --d) {  // next coordinate of S, row-major
            if (++coord[static_cast<std::size_t>(d)] < S[static_cast<std::size_t>(d)]) break;
            coord[static_cast<std::size_t>(d)] = 0;
        }
    }
    return index_tensor(rows, {count});
}

/// x indexed by `advanced` (after the slices): the advanced dimensions are gathered together
/// into the broadcast index shape S, which stands where they stood when they are adjacent and
/// first otherwise (PyTorch's and NumPy's rule).
Tensor gather_advanced(const Tensor& x, const std::vector<Advanced>& advanced, const Shape& x_shape) {
    Shape S;
    for (const Advanced& a : advanced) S = broadcast_shapes(S, a.indices.shape(), "index");
    std::vector<std::int64_t> order, rest_dims;
    Shape rest;
    std::int64_t gathered = 1;
    for (const Advanced& a : advanced) {
        order.push_back(a.dim);
        gathered *= x.shape()[static_cast<std::size_t>(a.dim)];
    }
    for (std::int64_t d = 0; d < x.dim(); ++d) {
        if (std::find(order.begin(), order.end(), d) != order.end()) continue;
        rest_dims.push_back(d);
        rest.push_back(x.shape()[static_cast<std::size_t>(d)]);
    }
    const Tensor rows = flat_rows(advanced, x.shape(), S, x_shape);
    order.insert(order.end(), rest_dims.begin(), rest_dims.end());
    // [x's advanced dims..., rest...] -> [rows, rest] -> picked rows [S..., rest...]
    const Tensor table = reshape(permute(x, order), {gathered, numel(rest)});
    Shape out_shape = S;
    out_shape.insert(out_shape.end(), rest.begin(), rest.end());
    Tensor out = reshape(index_select(table, 0, rows), out_shape);
    const std::int64_t first = advanced.front().dim;
    const bool adjacent = advanced.back().dim - first + 1 == std::ssize(advanced);
    if (!adjacent || first == 0) return out;
    // Adjacent: S moves to where the advanced dimensions were, after the `first` rest dims.
    const auto s = std::ssize(S);
    std::vector<std::int64_t> move(static_cast<std::size_t>(out.dim()));
    std::iota(move.begin(), move.begin() + first, s);
    std::iota(move.begin() + first, move.begin() + first + s, 0);
    std::iota(move.begin() + first + s, move.end(), s + first);
    return permute(out, move);
}

}  // namespace

Tensor index(const Tensor& x, std::initializer_list<indexing::TensorIndex> indices) {
    AG_CHECK(x.defined(), ValueError, "index: undefined tensor argument 'x'");
    std::int64_t named = 0, ellipses = 0;
    for (const auto& item : indices) {
        if (std::holds_alternative<indexing::EllipsisIndex>(item.item()))
            ++ellipses;
        else
            ++named;
        if (const auto* t = std::get_if<TensorPtr>(&item.item())) {
            AG_CHECK((*t)->defined(), ValueError, "index: undefined index tensor");
            AG_CHECK((*t)->dtype() == DType::Int64, DTypeError,
                     "index: an index tensor must be int64, got {} {} (bool masks are not supported)",
                     (*t)->dtype(), (*t)->shape());
        }
    }
    AG_CHECK(ellipses <= 1, IndexError, "index: at most one Ellipsis, got {}", ellipses);
    AG_CHECK(named <= x.dim(), IndexError, "index: {} indices for a tensor of rank {} (shape {})", named,
             x.dim(), x.shape());
    Tensor out = x;
    std::vector<Advanced> advanced;
    std::int64_t axis = 0;  // the dimension of `out` the next item applies to
    for (const auto& item : indices) {
        if (const auto* i = std::get_if<std::int64_t>(&item.item())) {
            const std::int64_t n = out.size(axis);
            AG_CHECK(*i >= -n && *i < n, IndexError,
                     "index: index {} is out of range for dimension {} of size {} (shape {})", *i, axis, n,
                     x.shape());
            // PyTorch selects first, beside index tensors too (x[1, :, idx] is x[1][:, idx],
            // where NumPy would count the integer as an index array).
            out = select(out, axis, *i);  // removes the dimension: axis stays
        } else if (const auto* s = std::get_if<indexing::Slice>(&item.item())) {
            AG_CHECK(s->step >= 1, ValueError, "index: slice step must be positive, got {}", s->step);
            const bool whole = !s->start && !s->stop && s->step == 1;  // `:` keeps the tensor as it is
            if (!whole)
                out = slice(out, axis, s->start.value_or(0), s->stop.value_or(out.size(axis)), s->step);
            ++axis;
        } else if (const auto* t = std::get_if<TensorPtr>(&item.item())) {
            advanced.push_back({axis++, **t});
        } else {
            axis += x.dim() - named;  // the dimensions no item names
        }
    }
    return advanced.empty() ? out : gather_advanced(out, advanced, x.shape());
}

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
    return attograd::index(*this, indices);
}

}  // namespace attograd
