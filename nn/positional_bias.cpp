// Relative positions inside attention: the choice of RoPE or ALiBi, and ALiBi's biases.
#include "nn/positional_bias.hpp"

#include "core/error.hpp"

#include <cmath>
#include <cstdlib>

namespace attograd::nn {

Positional parse_positional(std::string_view name) {
    if (name == "none") return Positional::None;
    if (name == "rotary" || name == "rope") return Positional::Rotary;
    if (name == "alibi") return Positional::ALiBi;
    throw ValueError(fmt::format("positional: unknown positional '{}' (choose none, rotary or alibi)", name));
}

std::string_view to_string(Positional positional) {
    switch (positional) {
        case Positional::None:
            return "none";
        case Positional::Rotary:
            return "rotary";
        case Positional::ALiBi:
            return "alibi";
    }
    throw InternalError("to_string: unknown Positional");
}

std::vector<double> alibi_slopes(std::int64_t heads) {
    AG_CHECK(heads >= 1, ValueError, "alibi_slopes: heads must be >= 1, got {}", heads);
    // m_h = start^h with start = 2^(-8 / n), h = 1..n
    const auto power_of_two = [](std::int64_t n) {
        std::vector<double> out;
        const double start = std::exp2(-8.0 / static_cast<double>(n));
        for (std::int64_t h = 1; h <= n; ++h) out.push_back(std::pow(start, static_cast<double>(h)));
        return out;
    };
    std::int64_t p = 1;
    while (p * 2 <= heads) p *= 2;
    std::vector<double> out = power_of_two(p);
    const std::vector<double> finer = power_of_two(2 * p);
    for (std::int64_t i = 0; static_cast<std::int64_t>(out.size()) < heads; ++i)
        out.push_back(finer[static_cast<std::size_t>(2 * i)]);
    return out;
}

Tensor alibi_bias(std::int64_t heads, std::int64_t tq, std::int64_t tk, DType dtype) {
    AG_CHECK(tq >= 0 && tk >= 0, ValueError, "alibi_bias: lengths must be >= 0, got Tq {} and Tk {}", tq, tk);
    const std::vector<double> slopes = alibi_slopes(heads);
    Tensor out = empty({1, heads, tq, tk}, {.dtype = dtype});
    dispatch_floating(dtype, "alibi_bias", [&]<class T>(T) {
        T* p = out.data<T>();
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t t = 0; t < tq; ++t)
                for (std::int64_t s = 0; s < tk; ++s)
                    *p++ = static_cast<T>(-slopes[static_cast<std::size_t>(h)] *
                                          static_cast<double>(std::abs(t - s)));
    });
    return out;
}

Tensor alibi_band(const Tensor& window_start, std::int64_t width, std::int64_t heads, DType dtype) {
    AG_CHECK(heads >= 1 && width >= 1, ValueError, "alibi_band: heads and width must be >= 1, got {} and {}",
             heads, width);
    AG_CHECK(window_start.defined() && window_start.dtype() == DType::Int64, DTypeError,
             "alibi_band: window_start must be int64 [B * h, Tq]");
    AG_CHECK(window_start.dim() == 2 && window_start.size(0) % heads == 0, ShapeError,
             "alibi_band: window_start must be [B * h, Tq] with h = {} dividing its rows, got {}", heads,
             window_start.shape());
    const std::vector<double> slopes = alibi_slopes(heads);
    const std::int64_t rows = window_start.size(0), tq = window_start.size(1);
    Tensor out = empty({rows, tq, width}, {.dtype = dtype});
    dispatch_floating(dtype, "alibi_band", [&]<class T>(T) {
        const std::int64_t* start = window_start.data<std::int64_t>();
        T* p = out.data<T>();
        for (std::int64_t n = 0; n < rows; ++n) {
            const double m = slopes[static_cast<std::size_t>(n % heads)];
            for (std::int64_t t = 0; t < tq; ++t) {
                const std::int64_t s0 = start[n * tq + t];
                for (std::int64_t j = 0; j < width; ++j)
                    *p++ = static_cast<T>(-m * static_cast<double>(std::abs(t - s0 - j)));
            }
        }
    });
    return out;
}

}  // namespace attograd::nn
