// Local attention windows (Luong et al. 2015 §3.2): placement, masks inside the band, Gaussian factor.
#include "nn/local_window.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_shape.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::nn {
namespace {

void check_window_size(std::int64_t tk, std::int64_t window, std::string_view op) {
    AG_CHECK(window >= 0, ValueError, "{}: window D must be >= 0, got {}", op, window);
    AG_CHECK(tk >= 1, ValueError, "{}: local attention needs at least one key, got Tk = {}", op, tk);
}

}  // namespace

LocalMode parse_local_mode(std::string_view name) {
    if (name == "none") return LocalMode::None;
    if (name == "m" || name == "monotonic" || name == "local-m") return LocalMode::Monotonic;
    if (name == "p" || name == "predictive" || name == "local-p") return LocalMode::Predictive;
    throw ValueError(fmt::format("local: unknown mode '{}' (choose none, m or p)", name));
}

std::string_view to_string(LocalMode mode) {
    switch (mode) {
        case LocalMode::None:
            return "none";
        case LocalMode::Monotonic:
            return "local-m";
        case LocalMode::Predictive:
            return "local-p";
    }
    throw InternalError("to_string: unknown LocalMode");
}

Tensor monotonic_window_start(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t window) {
    check_window_size(tk, window, "monotonic_window_start");
    Tensor out = empty({batch, tq}, {.dtype = DType::Int64});
    std::int64_t* po = out.data<std::int64_t>();
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t t = 0; t < tq; ++t) po[b * tq + t] = t * tk / tq - window;
    return out;
}

Tensor predictive_window_start(const Tensor& p, std::int64_t tk, std::int64_t window) {
    check_window_size(tk, window, "predictive_window_start");
    AG_CHECK(p.defined() && p.dim() == 2, ShapeError, "predictive_window_start: p must be [B, Tq], got {}",
             p.defined() ? p.shape() : Shape{});
    Tensor out = empty(p.shape(), {.dtype = DType::Int64});
    std::int64_t* po = out.data<std::int64_t>();
    dispatch_floating(p.dtype(), "predictive_window_start", [&]<class T>(T) {
        const T* pp = p.data<T>();
        const std::int64_t n = p.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) {
            AG_CHECK(std::isfinite(pp[i]), ValueError, "predictive_window_start: p holds a non-finite value");
            const double c = std::floor(static_cast<double>(pp[i]) + 0.5);
            po[i] = static_cast<std::int64_t>(std::clamp(c, 0.0, static_cast<double>(tk - 1))) - window;
        }
    });
    return out;
}

Tensor local_band_mask(const AttentionMasks& masks, const Tensor& window_start, std::int64_t width,
                       std::int64_t tk, DType dtype, std::string_view op) {
    AG_CHECK(window_start.defined() && window_start.dim() == 2 && window_start.dtype() == DType::Int64,
             ShapeError, "{}: window_start must be int64 [B, Tq]", op);
    const std::int64_t batch = window_start.size(0), tq = window_start.size(1);
    check_attention_masks(masks, batch, 1, tq, tk, dtype, op);
    Tensor out = zeros({batch, tq, width}, {.dtype = dtype});
    dispatch_floating(dtype, op, [&]<class T>(T) {
        T* po = out.data<T>();
        const std::int64_t* ps = window_start.data<std::int64_t>();
        const T neg_inf = -std::numeric_limits<T>::infinity();
        // Element i of a bool or float mask as an additive value.
        auto additive = [neg_inf](const Tensor& m, std::int64_t i) -> T {
            if (m.dtype() == DType::Bool) return m.data<bool>()[i] ? neg_inf : T(0);
            return m.data<T>()[i];  // a float mask has the layer's dtype (check_float_mask)
        };
        const bool per_batch = masks.attn_mask.defined() && masks.attn_mask.dim() == 3;
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t t = 0; t < tq; ++t)
                for (std::int64_t j = 0; j < width; ++j) {
                    T& m = po[(b * tq + t) * width + j];
                    const std::int64_t s = ps[b * tq + t] + j;
                    if (s < 0 || s >= tk || (masks.is_causal && s > t)) {
                        m = neg_inf;
                        continue;
                    }
                    if (masks.attn_mask.defined())
                        m += additive(masks.attn_mask, ((per_batch ? b * tq : 0) + t) * tk + s);
                    if (masks.key_padding_mask.defined()) m += additive(masks.key_padding_mask, b * tk + s);
                }
    });
    return out;
}

Tensor gaussian_window(const Tensor& p, const Tensor& window_start, std::int64_t width, double sigma) {
    AG_CHECK(sigma > 0, ValueError, "gaussian_window: sigma must be > 0, got {}", sigma);
    AG_CHECK(p.defined() && p.dim() == 2 && window_start.shape() == p.shape(), ShapeError,
             "gaussian_window: p and window_start must both be [B, Tq], got {} and {}", p.shape(),
             window_start.shape());
    // positions s [B, Tq, W] (constant), then exp(-(s - p)^2 / (2 sigma^2))
    Tensor positions = empty({p.size(0), p.size(1), width}, {.dtype = p.dtype()});
    dispatch_floating(p.dtype(), "gaussian_window", [&]<class T>(T) {
        T* ps = positions.data<T>();
        const std::int64_t* pw = window_start.data<std::int64_t>();
        const std::int64_t rows = p.numel();  // hoisted: numel() walks the shape
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t j = 0; j < width; ++j) ps[r * width + j] = static_cast<T>(pw[r] + j);
    });
    Tensor diff = positions - reshape(p, {p.size(0), p.size(1), 1});
    return exp(diff * diff * (-1.0 / (2.0 * sigma * sigma)));
}

}  // namespace attograd::nn
