// Absolute position encodings added to a sequence: sinusoidal (fixed) and learned.
#include "nn/positional_encoding.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"

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

}  // namespace

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(PositionalEncodingOptions options)
    : options_(options) {
    check_options(options_, type_name());
    const std::int64_t len = options_.max_len, e = options_.embedding_dim;
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

LearnedPositionalEmbedding::LearnedPositionalEmbedding(PositionalEncodingOptions options,
                                                       Generator& generator)
    : options_(options) {
    check_options(options_, type_name());
    weight_ = register_parameter(
        "weight", randn({options_.max_len, options_.embedding_dim}, generator, {.dtype = options_.dtype}));
}

std::string LearnedPositionalEmbedding::extra_repr() const {
    return fmt::format("embedding_dim={}, max_len={}", options_.embedding_dim, options_.max_len);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, std::int64_t offset) const {
    return add_positions(x, weight_, offset, type_name());
}

}  // namespace attograd::nn
