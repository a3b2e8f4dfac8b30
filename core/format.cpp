// fmt formatting of tensors.
#include "core/format.hpp"

#include <fmt/ranges.h>

namespace attograd {
namespace {

constexpr std::int64_t kEdgeItems = 3;

void render(std::string& out, const Tensor& t, std::size_t dim, std::int64_t offset, const Shape& strides) {
    const Shape& shape = t.shape();
    if (dim == shape.size()) {
        dispatch_all(t.dtype(), [&]<class T>(T) {
            const T v = static_cast<const T*>(t.raw_data())[offset];
            if constexpr (std::is_same_v<T, bool>)
                out += v ? "true" : "false";
            else if constexpr (std::is_integral_v<T>)
                out += fmt::format("{}", v);
            else
                out += fmt::format("{:.4g}", v);
        });
        return;
    }
    out += '[';
    const std::int64_t n = shape[dim];
    const bool truncate = n > 2 * kEdgeItems;
    for (std::int64_t i = 0; i < n; ++i) {
        if (truncate && i == kEdgeItems) {
            out += "..., ";
            i = n - kEdgeItems;
        }
        render(out, t, dim + 1, offset + i * strides[dim], strides);
        if (i + 1 < n) out += dim + 1 == shape.size() ? ", " : ",\n" + std::string(dim + 8, ' ');
    }
    out += ']';
}

}  // namespace

std::string to_string(const Tensor& t) {
    if (!t.defined()) return "tensor(undefined)";
    std::string out = "tensor(";
    render(out, t, 0, 0, contiguous_strides(t.shape()));
    out += fmt::format(", shape={}, dtype={}{})", t.shape(), t.dtype(),
                       t.requires_grad() ? ", requires_grad=true" : "");
    return out;
}

}  // namespace attograd
