// Absolute position encodings added to a sequence: sinusoidal (fixed) and learned.
#include "nn/positional_encoding.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

void check_options(const PositionalEncodingOptions& o, std::string_view op) {
    AG_CHECK(o.embedding_dim >= 1 && o.max_len >= 1, ValueError,
             "{}: embedding_dim and max_len must be >= 1, got {} and {}", op, o.embedding_dim, o.max_len);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", op, o.dtype);
}

// x [..., T, E] + table[offset : offset + T] ([T, E] broadcast over the leading dimensions).
Tensor add_positions(const Tensor& x, const Tensor& table, std::int64_t offset, std::string_view op) {
    const std::int64_t max_len = table.size(0), e = table.size(1);
    AG_CHECK(x.defined(), ValueError, "{}: undefined input", op);
    AG_CHECK(x.dim() >= 2 && x.size(-1) == e, ShapeError, "{}: x must be [..., T, E] with E = {}, got {}", op,
             e, x.shape());
    AG_CHECK(x.dtype() == table.dtype(), DTypeError, "{}: x must have the table's dtype {}, got {} {}", op,
             table.dtype(), x.dtype(), x.shape());
    AG_CHECK(offset >= 0, ValueError, "{}: offset must be >= 0, got {}", op, offset);
    const std::int64_t t = x.size(-2);
    AG_CHECK(offset + t <= max_len, ShapeError, "{}: positions {}..{} of x {} exceed max_len {}", op, offset,
             offset + t - 1, x.shape(), max_len);
    return x + narrow(table, 0, offset, t);
}

// x [B, T, E] + table[positions] (positions int64 [B, T] or [T]).
Tensor add_positions_at(const Tensor& x, const Tensor& table, const Tensor& positions, std::string_view op) {
    const std::int64_t e = table.size(1);
    AG_CHECK(x.defined() && positions.defined(), ValueError, "{}: undefined input", op);
    AG_CHECK(x.dim() == 3 && x.size(2) == e, ShapeError, "{}: x must be [B, T, E] with E = {}, got {}", op, e,
             x.shape());
    AG_CHECK(x.dtype() == table.dtype(), DTypeError, "{}: x must have the table's dtype {}, got {} {}", op,
             table.dtype(), x.dtype(), x.shape());
    AG_CHECK(positions.dtype() == DType::Int64, DTypeError, "{}: positions must be int64, got {} {}", op,
             positions.dtype(), positions.shape());
    const bool per_sequence =
        positions.dim() == 2 && positions.size(0) == x.size(0) && positions.size(1) == x.size(1);
    AG_CHECK(per_sequence || (positions.dim() == 1 && positions.size(0) == x.size(1)), ShapeError,
             "{}: positions must be [B, T] or [T] for x {}, got {}", op, x.shape(), positions.shape());
    const std::int64_t* p = positions.data<std::int64_t>();
    for (std::int64_t i = 0; i < positions.numel(); ++i) {
        AG_CHECK(p[i] >= 0 && p[i] < table.size(0), IndexError, "{}: position {} outside [0, max_len = {})",
                 op, p[i], table.size(0));
    }
    return x + embedding(table, positions);  // [B, T, E] or [T, E] broadcast over B
}

}  // namespace

Tensor positions_from_end(const Tensor& key_padding_mask) {
    const Tensor& m = key_padding_mask;
    AG_CHECK(m.defined() && m.dtype() == DType::Bool, DTypeError,
             "positions_from_end: key_padding_mask must be bool, got {}",
             m.defined() ? m.dtype() : DType::Bool);
    AG_CHECK(m.dim() == 2, ShapeError, "positions_from_end: key_padding_mask must be [B, T], got {}",
             m.shape());
    const std::int64_t b = m.size(0), t = m.size(1);
    Tensor out = zeros({b, t}, {.dtype = DType::Int64});
    const bool* pad = m.data<bool>();
    std::int64_t* o = out.data<std::int64_t>();
    for (std::int64_t i = 0; i < b; ++i) {
        std::int64_t after = 0;  // real positions to the right of j
        for (std::int64_t j = t - 1; j >= 0; --j) {
            if (pad[i * t + j]) continue;
            o[i * t + j] = after++;
        }
    }
    return out;
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(PositionalEncodingOptions options)
    : options_(options) {
    check_options(options_, type_name());
    const std::int64_t len = options_.max_len, e = options_.embedding_dim;
    // built in float64, then converted
    check_parameter_size(type_name(), fmt::format("max_len {} and embedding_dim {}", len, e), "pe", {len, e},
                         DType::Float64);
    Tensor pe = empty({len, e}, {.dtype = DType::Float64});
    double* p = pe.data<double>();
    for (std::int64_t pos = 0; pos < len; ++pos)
        for (std::int64_t c = 0; c < e; ++c) {
            // columns 2i and 2i + 1 share the frequency 1 / 10000^(2i / E)
            const double angle = static_cast<double>(pos) /
                                 std::pow(10000.0, static_cast<double>(c - c % 2) / static_cast<double>(e));
            p[pos * e + c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    pe_ = register_buffer("pe", to_dtype(pe, options_.dtype));
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
    return fmt::format("embedding_dim={}, max_len={}", options_.embedding_dim, options_.max_len);
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, std::int64_t offset) const {
    return add_positions(x, pe_, offset, type_name());
}

Tensor SinusoidalPositionalEncoding::forward_at(const Tensor& x, const Tensor& positions) const {
    return add_positions_at(x, pe_, positions, type_name());
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(PositionalEncodingOptions options,
                                                       Generator& generator)
    : options_(options) {
    check_options(options_, type_name());
    check_parameter_size(
        type_name(), fmt::format("max_len {} and embedding_dim {}", options_.max_len, options_.embedding_dim),
        "weight", {options_.max_len, options_.embedding_dim}, options_.dtype);
    weight_ = register_parameter(
        "weight", randn({options_.max_len, options_.embedding_dim}, generator, {.dtype = options_.dtype}));
}

std::string LearnedPositionalEmbedding::extra_repr() const {
    return fmt::format("embedding_dim={}, max_len={}", options_.embedding_dim, options_.max_len);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, std::int64_t offset) const {
    return add_positions(x, weight_, offset, type_name());
}

Tensor LearnedPositionalEmbedding::forward_at(const Tensor& x, const Tensor& positions) const {
    return add_positions_at(x, weight_, positions, type_name());
}

}  // namespace attograd::nn
