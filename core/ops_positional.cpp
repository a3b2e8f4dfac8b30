// Positional ops: rotary position embeddings (RoPE) applied to whole projections.
#include "core/ops_positional.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"

#include <cmath>
#include <vector>

namespace attograd {
namespace {

// y = R(sign * t theta) x over the first `rotated` columns of rows [T, W] (t = row index mod T),
// the other columns copied. cos / sin tables [T, head_dim / 2] are computed in double.
Tensor rotate(const Tensor& x, std::int64_t head_dim, double base, std::int64_t rotated, double sign) {
    const std::int64_t w = x.size(-1), t_len = x.size(-2), rows = x.numel() / std::max<std::int64_t>(w, 1);
    const std::int64_t half = head_dim / 2;
    std::vector<double> cos_t(static_cast<std::size_t>(t_len * half)), sin_t(cos_t.size());
    for (std::int64_t t = 0; t < t_len; ++t)
        for (std::int64_t j = 0; j < half; ++j) {
            const double angle = static_cast<double>(t) * std::pow(base, -2.0 * static_cast<double>(j) /
                                                                             static_cast<double>(head_dim));
            cos_t[static_cast<std::size_t>(t * half + j)] = std::cos(angle);
            sin_t[static_cast<std::size_t>(t * half + j)] = sign * std::sin(angle);
        }
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), "rotary_embedding", [&]<class T>(T) {
        const T* px = x.data<T>();
        T* po = out.data<T>();
        for (std::int64_t r = 0; r < rows; ++r) {
            const T* xr = px + r * w;
            T* yr = po + r * w;
            const std::size_t table = static_cast<std::size_t>((r % t_len) * half);
            for (std::int64_t p = 0; p < rotated / 2; ++p) {  // pair p = columns 2p, 2p + 1
                const std::size_t j = table + static_cast<std::size_t>(p % half);
                const T c = static_cast<T>(cos_t[j]), s = static_cast<T>(sin_t[j]);
                const T a = xr[2 * p], b = xr[2 * p + 1];
                yr[2 * p] = a * c - b * s;
                yr[2 * p + 1] = a * s + b * c;
            }
            for (std::int64_t col = rotated; col < w; ++col) yr[col] = xr[col];
        }
    });
    return out;
}

}  // namespace

Tensor rotary_embedding(const Tensor& x, std::int64_t head_dim, double base, std::int64_t rotated_width) {
    constexpr const char* kOp = "rotary_embedding";
    AG_CHECK(x.defined(), ValueError, "{}: undefined input", kOp);
    AG_CHECK(is_floating(x.dtype()), DTypeError, "{}: x must be float32 or float64, got {} {}", kOp,
             x.dtype(), x.shape());
    AG_CHECK(x.dim() >= 2, ShapeError, "{}: x must be [..., T, W], got {}", kOp, x.shape());
    AG_CHECK(head_dim >= 2 && head_dim % 2 == 0, ValueError, "{}: head_dim must be even and >= 2, got {}",
             kOp, head_dim);
    AG_CHECK(std::isfinite(base) && base > 0, ValueError, "{}: base must be finite and > 0, got {}", kOp,
             base);
    const std::int64_t w = x.size(-1);
    const std::int64_t rotated = rotated_width == 0 ? w : rotated_width;
    AG_CHECK(rotated >= 0 && rotated <= w && rotated % head_dim == 0, ValueError,
             "{}: rotated_width {} must be a multiple of head_dim {} within the width of x {}", kOp, rotated,
             head_dim, x.shape());
    Tensor out = rotate(x, head_dim, base, rotated, 1.0);
    if (autograd::needs_record({&x})) {
        // dx = R(-t theta) dy: the rotation's transpose is its inverse
        autograd::record(kOp, {x}, out, [head_dim, base, rotated](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, rotate(dy, head_dim, base, rotated, -1.0));
        });
    }
    return out;
}

}  // namespace attograd
