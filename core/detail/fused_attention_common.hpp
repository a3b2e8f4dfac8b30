// Internal: what the fused attention ops (global and local) share: where the (batch, head)
// blocks of an operand live, so that kernels read heads in place from [B, h, T, d] planes or
// [B, T, h * d] rows, and their input checks.
#pragma once

#include "core/error.hpp"
#include "core/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace attograd::detail {

/// Block (b, h) of an operand starts at offset + b * batch + h * head (in elements); its rows
/// are `row` elements apart and its columns are contiguous.
struct HeadLayout {
    std::int64_t offset = 0, batch = 0, head = 0, row = 0;
    std::int64_t at(std::int64_t b, std::int64_t h) const { return offset + b * batch + h * head; }
};

/// [B, h, T, width]: heads are separate planes.
inline HeadLayout heads_major(std::int64_t heads, std::int64_t t, std::int64_t width) {
    return {.offset = 0, .batch = heads * t * width, .head = t * width, .row = width};
}

/// [B, T, row_width] with head i at columns offset + i * width (a projection's output).
inline HeadLayout heads_last(std::int64_t t, std::int64_t width, std::int64_t row_width,
                             std::int64_t offset) {
    return {.offset = offset, .batch = t * row_width, .head = width, .row = row_width};
}

/// Zeroes the `rows` x `width` block of an operand that starts at `block` with rows `row`
/// elements apart: each (batch, head) block clears its own part of an output the kernel then
/// adds into, inside the parallel loop (a whole-tensor zeros() is a serial pass).
template <class T>
void zero_block(T* block, std::int64_t rows, std::int64_t width, std::int64_t row) {
    for (std::int64_t r = 0; r < rows; ++r) std::fill_n(block + r * row, width, T(0));
}

/// The data of an optional tensor: null when undefined.
template <class T>
const T* data_or_null(const Tensor& t) {
    return t.defined() ? t.data<T>() : nullptr;
}

template <class T>
T* data_or_null(Tensor& t) {
    return t.defined() ? t.data<T>() : nullptr;
}

/// Checks that every input is defined, of rank `rank`, float and of one dtype; messages start
/// with `op`.
inline void check_attention_inputs(const char* op, std::initializer_list<const Tensor*> inputs,
                                   std::int64_t rank) {
    const Tensor& first = **inputs.begin();
    for (const Tensor* t : inputs) {
        AG_CHECK(t->defined(), ValueError, "{}: undefined tensor argument", op);
        AG_CHECK(t->dim() == rank, ShapeError, "{}: expected rank-{} inputs, got {}", op, rank, t->shape());
        AG_CHECK(t->dtype() == first.dtype(), DTypeError, "{}: dtypes differ: {} and {}", op, first.dtype(),
                 t->dtype());
    }
    AG_CHECK(is_floating(first.dtype()), DTypeError, "{}: expected float32 or float64 inputs, got {}", op,
             first.dtype());
}

/// Checks that `scale` is finite in `dtype` (1e300 is finite as a double, inf as a float32).
inline void check_scale(double scale, DType dtype, const char* op) {
    const bool finite =
        dtype == DType::Float32 ? std::isfinite(static_cast<float>(scale)) : std::isfinite(scale);
    AG_CHECK(finite, ValueError, "{}: scale must be finite in {}, got {}", op, dtype, scale);
}

/// Sizes and operand layouts of one fused attention call over B * h (batch, head) blocks.
struct HeadGeometry {
    std::int64_t batch = 0, heads = 0, tq = 0, tk = 0, d = 0, dv = 0;
    HeadLayout q{}, k{}, v{}, out{};
    std::int64_t blocks() const { return batch * heads; }
};

/// Heads side by side: q [B, Tq, h * d], k [B, Tk, h * d], v [B, Tk, h * dv] -> out
/// [B, Tq, h * dv]. Checks the inputs (ShapeError, DTypeError, ValueError naming `op`).
inline HeadGeometry heads_last_geometry(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                        std::int64_t num_heads) {
    check_attention_inputs(op, {&q, &k, &v}, 3);
    const Shape &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
    AG_CHECK(sk[0] == sq[0] && sv[0] == sq[0], ShapeError, "{}: batch sizes differ: q {}, k {}, v {}", op, sq,
             sk, sv);
    AG_CHECK(sk[2] == sq[2], ShapeError, "{}: q and k widths differ: q {}, k {}", op, sq, sk);
    AG_CHECK(sv[1] == sk[1], ShapeError, "{}: k and v lengths differ: k {}, v {}", op, sk, sv);
    AG_CHECK(num_heads >= 1 && sq[2] > 0 && sq[2] % num_heads == 0 && sv[2] % num_heads == 0, ValueError,
             "{}: num_heads {} must divide the widths of q {} and v {}", op, num_heads, sq, sv);
    HeadGeometry g{.batch = sq[0],
                   .heads = num_heads,
                   .tq = sq[1],
                   .tk = sk[1],
                   .d = sq[2] / num_heads,
                   .dv = sv[2] / num_heads};
    g.q = heads_last(g.tq, g.d, sq[2], 0);
    g.k = heads_last(g.tk, g.d, sk[2], 0);
    g.v = heads_last(g.tk, g.dv, sv[2], 0);
    g.out = heads_last(g.tq, g.dv, sv[2], 0);
    return g;
}

/// One packed self-attention projection qkv [B, T, 3 * h * d] (q, k, v side by side, PyTorch's
/// in_proj layout) -> out [B, T, h * d]. Checks the input as above, and ShapeError when the
/// width is not a multiple of 3.
inline HeadGeometry packed_geometry(const char* op, const Tensor& qkv, std::int64_t num_heads) {
    check_attention_inputs(op, {&qkv}, 3);
    const Shape& s = qkv.shape();
    AG_CHECK(s[2] % 3 == 0 && s[2] > 0, ShapeError,
             "{}: qkv [B, T, 3 * E] needs a width divisible by 3, got {}", op, s);
    const std::int64_t e = s[2] / 3;
    AG_CHECK(num_heads >= 1 && e % num_heads == 0, ValueError, "{}: num_heads {} must divide E = {} (qkv {})",
             op, num_heads, e, s);
    HeadGeometry g{
        .batch = s[0], .heads = num_heads, .tq = s[1], .tk = s[1], .d = e / num_heads, .dv = e / num_heads};
    g.q = heads_last(g.tq, g.d, s[2], 0);
    g.k = heads_last(g.tk, g.d, s[2], e);
    g.v = heads_last(g.tk, g.dv, s[2], 2 * e);
    g.out = heads_last(g.tq, g.dv, e, 0);
    return g;
}

}  // namespace attograd::detail
