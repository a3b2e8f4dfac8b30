// Fused scaled-dot-product attention: forward and backward kernels over (batch, head) blocks
// described by strides, so the three public layouts share one implementation.
#include "core/ops_attention.hpp"

#include "core/autograd.hpp"
#include "core/detail/flash_attention.hpp"
#include "core/detail/fused_attention_common.hpp"
#include "core/detail/gemm.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/sdpa_common.hpp"
#include "core/detail/softmax_row.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attograd {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;

using detail::heads_major;

using detail::apply_dropout;
using Geometry = detail::SdpaGeometry;

// Keys from which a call without need_weights takes the flash path. Below, the kernel that keeps
// the weights is faster (its backward recomputes no scores or exp; bench_global_attention, one
// thread: 0.87x at T = 512, 0.83x at 1024, 0.98x at 2048, faster from 4096 on) and its
// [Tq, Tk] buffer is at most 16 MB per (batch, head) in float32.
constexpr std::int64_t kFlashMinKeys = 2048;

template <class T>
T* scratch(int slot, std::int64_t n) {
    return detail::sdpa_scratch<T>(slot, n);
}

// Scales the scores q k^T of block (b, h) and adds the mask, then softmax over each row in
// place; a row that is all -inf becomes all zero (core/detail/softmax_row.hpp).
template <class T>
void masked_softmax_rows(const Geometry& g, std::int64_t b, std::int64_t h, const T* mask, T* scores) {
    detail::softmax_rows(scores, g.tq, g.tk, static_cast<T>(g.scale),
                         mask != nullptr ? g.mask_row(mask, b, h, 0) : nullptr, g.mask_t, g.mask_s);
}

// Y^T of every (batch, head) block of an operand Y [tk, width] (K, or V in backward) into yt,
// block bh at bh * width * tk as a dense [width, tk], for the products X Y^T: LIBXSMM copies a
// transposed B on every call (core/detail/gemm.hpp), here one copy per batch row when the heads sit
// side by side ([B, T, h * width]: one [tk, h * width] transpose holds all heads), so a 32-key,
// 16-wide head does not pay a transpose call per product. Inside a parallel region: the
// threads share the work (the copies are exact, so the bits do not depend on who copies).
template <class T>
void transpose_blocks(const Geometry& g, const T* y, const detail::HeadLayout& l, std::int64_t width, T* yt) {
    if (l.head == width &&
        l.row >= g.heads * width) {  // (with one key, [B, h, 1, d] has l.head == width too)
#pragma omp for schedule(static)
        for (std::int64_t b = 0; b < g.batch; ++b)
            detail::transpose(g.tk, g.heads * width, y + l.at(b, 0), l.row, yt + b * g.heads * width * g.tk);
    } else {
#pragma omp for schedule(static)
        for (std::int64_t bh = 0; bh < g.blocks(); ++bh)
            detail::transpose(g.tk, width, y + l.at(bh / g.heads, bh % g.heads), l.row,
                              yt + bh * width * g.tk);
    }
}

// Rows from which a head's block read as a product's B is first copied out dense (dense_head).
// With the heads side by side, a block's rows are a whole projection row apart: 3 E floats in
// a packed qkv, 3072 bytes at E = 256, a multiple of 1 KB, so the 256 rows of a 32-wide head
// fall into 8 of L1's 64 sets and the kernel, which re-reads B for every few rows of C, finds
// it in L2 instead. Large step (AMD EPYC Zen 3, AVX2, one thread, 64 blocks of 256 x 32 x 256):
// O = P V 56 -> 84 GFLOP/s, the copy included; dQ = dS K 61 -> 88 with K dense (the copy of
// 32 KB costs ~2-6 µs against a ~50 µs product). Small blocks (the small step's 32 x 16 heads:
// 2 KB, conflict-free) are read in place.
constexpr std::int64_t kDenseHeadMinRows = 64;

// True when the (batch, head) blocks of an operand of layout l and `rows` rows are copied
// dense before they are multiplied (see kDenseHeadMinRows).
bool dense_heads(const detail::HeadLayout& l, std::int64_t rows, std::int64_t width) {
    return l.row != width && rows >= kDenseHeadMinRows;
}

// Block (b, h) of an operand as a dense [rows, width] array: copied into this thread's scratch
// `slot` when dense_heads(), else the block in place (its rows l.row apart). The ld of a product
// reading it is then width or l.row: dense_ld.
template <class T>
const T* dense_head(const detail::HeadLayout& l, const T* y, std::int64_t b, std::int64_t h,
                    std::int64_t rows, std::int64_t width, int slot) {
    const T* block = y + l.at(b, h);
    if (!dense_heads(l, rows, width)) return block;
    T* dense = scratch<T>(slot, rows * width);
    for (std::int64_t r = 0; r < rows; ++r) std::copy_n(block + r * l.row, width, dense + r * width);
    return dense;
}

std::int64_t dense_ld(const detail::HeadLayout& l, std::int64_t rows, std::int64_t width) {
    return dense_heads(l, rows, width) ? width : l.row;
}

// The products of forward_block, resolved once per call (core/detail/gemm.hpp): S = Q K^T (from K^T
// when transpose_blocks made it) and O = Pd V (V dense when dense_heads).
template <class T>
struct ForwardProducts {
    detail::GemmKernel<T> scores, output;
    ForwardProducts(const Geometry& g, bool from_kt)
        : scores(g.tq, g.tk, g.d, g.q.row, false, from_kt ? g.tk : g.k.row, !from_kt, g.tk, false),
          output(g.tq, g.dv, g.tk, g.tk, false, dense_ld(g.v, g.tk, g.dv), false, g.out.row, false) {}
};

// scores P = softmax(scale q k^T + mask) -> weights; output = dropout(P) v. Every product
// writes its whole block (core/detail/gemm.hpp), so no output needs zeroing first.
// Block bh of forward_kernel; kt (may be null) holds every block's K^T (transpose_blocks).
template <class T>
void forward_block(const Geometry& g, const ForwardProducts<T>& products, std::int64_t bh, const T* q,
                   const T* k, const T* kt, const T* v, const T* mask, T* out, T* weights) {
    const std::int64_t b = bh / g.heads, h = bh % g.heads;
    T* o = out + g.out.at(b, h);
    T* p = weights + bh * g.tq * g.tk;
    if (g.tk == 0) {  // no keys: a zero output
        detail::zero_block(o, g.tq, g.dv, g.out.row);
        return;
    }
    // S [Tq, Tk] = Q K^T, scaled inside the softmax
    products.scores(q + g.q.at(b, h), kt != nullptr ? kt + bh * g.d * g.tk : k + g.k.at(b, h), p);
    masked_softmax_rows(g, b, h, mask, p);
    const T* pv = p;
    if (g.dropout_active()) {
        T* dropped = scratch<T>(0, g.tq * g.tk);
        apply_dropout(p, dropped, g.tq * g.tk, g.dropout_p, g.seeds[static_cast<std::size_t>(bh)]);
        pv = dropped;
    }
    // O [Tq, dv] = Pd V
    products.output(pv, dense_head(g.v, v, b, h, g.tk, g.dv, 2), o);
}

template <class T>
void forward_kernel(const Geometry& g, const T* q, const T* k, const T* v, const T* mask, T* out,
                    T* weights) {
    // K^T of every block up front when the GEMM layer would copy it per product (LIBXSMM)
    Tensor kt_buffer = g.tk > 0 && detail::gemm_copies_transposed_b()
                           ? empty({g.blocks() * g.d * g.tk}, {.dtype = dtype_of<T>()})
                           : Tensor();
    T* kt = detail::data_or_null<T>(kt_buffer);
    const ForwardProducts<T> products(g, kt != nullptr);
    const int grab = g.blocks_per_grab();
#pragma omp parallel if (g.parallel())
    {
        if (kt != nullptr) transpose_blocks(g, k, g.k, g.d, kt);
#pragma omp for schedule(dynamic, grab)
        for (std::int64_t bh = 0; bh < g.blocks(); ++bh)
            forward_block(g, products, bh, q, k, kt, v, mask, out, weights);
    }
}
// Gradients of one call. dout (upstream gradient of the output) and dweights (of the weights)
// may each be null; so may dq, dk, dv (not needed). Each block zeroes its parts of dq, dk, dv
// before adding into them (see forward_kernel); with dout null, dv is all zero.
template <class T>
struct BackwardArgs {
    const T *q, *k, *v, *weights, *dout, *dweights;
    T *dq, *dk, *dv;
};

// The products of backward_kernel, resolved once per call (core/detail/gemm.hpp); dO, K and Q dense
// when dense_heads (the output gradient has the output's layout).
template <class T>
struct BackwardProducts {
    detail::GemmKernel<T> dv, dp, dq, dk;
    BackwardProducts(const Geometry& g, bool from_vt)
        : dv(g.tk, g.dv, g.tq, g.tk, true, dense_ld(g.out, g.tq, g.dv), false, g.v.row, false),
          dp(g.tq, g.tk, g.dv, dense_ld(g.out, g.tq, g.dv), false, from_vt ? g.tk : g.v.row, !from_vt, g.tk,
             false),
          dq(g.tq, g.d, g.tk, g.tk, false, dense_ld(g.k, g.tk, g.d), false, g.q.row, false),
          dk(g.tk, g.d, g.tq, g.tk, true, dense_ld(g.q, g.tq, g.d), false, g.k.row, false) {}
};

// dV = Pd^T dO; dP = (dO V^T) * M / (1 - p) + dweights; dS = P * (dP - rowsum(dP * P));
// dQ = scale dS K; dK = scale dS^T Q.
template <class T>
void backward_kernel(const Geometry& g, const BackwardArgs<T>& a) {
    const T scale = static_cast<T>(g.scale);
    // V^T of every block up front when the GEMM layer would copy it per product (LIBXSMM)
    Tensor vt_buffer = a.dout != nullptr && g.tk > 0 && detail::gemm_copies_transposed_b()
                           ? empty({g.blocks() * g.dv * g.tk}, {.dtype = dtype_of<T>()})
                           : Tensor();
    T* vt = detail::data_or_null<T>(vt_buffer);
    const BackwardProducts<T> products(g, vt != nullptr);
    const int grab = g.blocks_per_grab();
#pragma omp parallel if (g.parallel())
    {
        if (vt != nullptr) transpose_blocks(g, a.v, g.v, g.dv, vt);
#pragma omp for schedule(dynamic, grab)
        for (std::int64_t bh = 0; bh < g.blocks(); ++bh) {
            const std::int64_t b = bh / g.heads, h = bh % g.heads;
            const std::int64_t plane = g.tq * g.tk;
            const auto seed = g.dropout_active() ? g.seeds[static_cast<std::size_t>(bh)] : 0;
            const T* P = a.weights + bh * plane;
            T* dP = scratch<T>(0, plane);
            T* dv = a.dv != nullptr ? a.dv + g.v.at(b, h) : nullptr;
            if (a.dout != nullptr) {
                const T* dO = dense_head(g.out, a.dout, b, h, g.tq, g.dv, 2);
                if (dv != nullptr) {
                    const T* pd = P;
                    if (g.dropout_active()) {
                        T* dropped = scratch<T>(1, plane);
                        apply_dropout(P, dropped, plane, g.dropout_p, seed);
                        pd = dropped;
                    }
                    // dV [Tk, dv] = Pd^T dO
                    products.dv(pd, dO, dv);
                }
                // dPd [Tq, Tk] = dO V^T
                products.dp(dO, vt != nullptr ? vt + bh * g.dv * g.tk : a.v + g.v.at(b, h), dP);
                if (g.dropout_active()) apply_dropout(dP, dP, plane, g.dropout_p, seed);
            } else {
                if (dv != nullptr) detail::zero_block(dv, g.tk, g.dv, g.v.row);
                std::fill_n(dP, plane, T(0));
            }
            if (a.dweights != nullptr)
                MatrixMap<T>(dP, g.tq, g.tk) += ConstMatrixMap<T>(a.dweights + bh * plane, g.tq, g.tk);
            // dP becomes scale * dS, so that the two products below need no scaling
            detail::softmax_rows_backward(P, dP, g.tq, g.tk, scale);
            // dQ [Tq, d] = scale dS K; dK [Tk, d] = scale dS^T Q
            if (a.dq != nullptr)
                products.dq(dP, dense_head(g.k, a.k, b, h, g.tk, g.d, 3), a.dq + g.q.at(b, h));
            if (a.dk != nullptr)
                products.dk(dP, dense_head(g.q, a.q, b, h, g.tq, g.d, 4), a.dk + g.k.at(b, h));
        }
    }
}

// Validates the options against the geometry and fills in the mask strides, scale and seeds.
void prepare(Geometry& g, const Tensor& q, const SdpaOptions& o, const char* op) {
    const Tensor& m = o.attn_mask;
    if (m.defined()) {
        AG_CHECK(m.dtype() == q.dtype(), DTypeError,
                 "{}: attn_mask must be an additive float mask of the inputs' dtype {}, got {}", op,
                 q.dtype(), m.dtype());
        AG_CHECK(!m.requires_grad(), ValueError, "{}: attn_mask receives no gradient; detach it first", op);
        check_additive_mask(m, "attn_mask", op);
        const Shape target{g.batch, g.heads, g.tq, g.tk};
        const bool ranks_ok = m.dim() <= 4;
        Shape padded(4, 1);
        if (ranks_ok) std::copy(m.shape().begin(), m.shape().end(), padded.end() - m.dim());
        bool fits = ranks_ok;
        for (std::size_t i = 0; i < 4 && fits; ++i) fits = padded[i] == 1 || padded[i] == target[i];
        AG_CHECK(fits, ShapeError, "{}: attn_mask {} does not broadcast to the scores [B, h, Tq, Tk] = {}",
                 op, m.shape(), target);
        const Shape strides = broadcast_strides(padded, target);
        g.mask_b = strides[0];
        g.mask_h = strides[1];
        g.mask_t = strides[2];
        g.mask_s = strides[3];
    }
    g.scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(g.d)));
    detail::check_scale(g.scale, q.dtype(), op);
    AG_CHECK(o.dropout_p >= 0.0 && o.dropout_p <= 1.0, ValueError, "{}: dropout_p must be in [0, 1], got {}",
             op, o.dropout_p);
    g.dropout_p = o.dropout_p;
    if (o.training && o.dropout_p > 0.0) {
        Generator& gen = o.generator != nullptr ? *o.generator : default_generator();
        g.seeds.resize(static_cast<std::size_t>(g.blocks()));
        for (auto& seed : g.seeds) seed = gen.next();
    }
}

// Gradient buffers for the inputs that need one (every block writes its parts); a packed qkv
// gets one tensor for all three.
struct InputGrads {
    Tensor dq, dk, dv;
    InputGrads(bool packed, const Tensor& q, const Tensor& k, const Tensor& v,
               const autograd::Gradients& grads, bool with_v) {
        if (packed) {
            dq = dk = dv = empty(q.shape(), {.dtype = q.dtype()});
            return;
        }
        if (grads.needs(0)) dq = empty(q.shape(), {.dtype = q.dtype()});
        if (grads.needs(1)) dk = empty(k.shape(), {.dtype = k.dtype()});
        if (with_v && grads.needs(2)) dv = empty(v.shape(), {.dtype = v.dtype()});
    }
    void add_to(autograd::Gradients& grads, bool packed) const {
        if (packed) {
            grads.add(0, dq);
            return;
        }
        if (dq.defined()) grads.add(0, dq);
        if (dk.defined()) grads.add(1, dk);
        if (dv.defined()) grads.add(2, dv);
    }
};

// The flash path (core/detail/flash_attention.hpp): no [Tq, Tk] weights; the output entry saves the
// output and the log-sum-exp of each query's scores, and backward recomputes the scores tile
// by tile.
SdpaResult run_flash(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, bool packed,
                     const Geometry& g, const Shape& out_shape, const Tensor& mask) {
    Tensor out = empty(out_shape, {.dtype = q.dtype()});  // every tile writes its part
    Tensor lse = empty({g.blocks(), g.tq}, {.dtype = q.dtype()});
    dispatch_floating(q.dtype(), op, [&]<class T>(T) {
        detail::flash_forward<T>(g, q.data<T>(), k.data<T>(), v.data<T>(), detail::data_or_null<T>(mask),
                                 out.data<T>(), lse.data<T>());
    });
    if (!autograd::needs_record({&q, &k, &v})) return {out, Tensor()};
    const std::vector<Tensor> inputs = packed ? std::vector<Tensor>{q} : std::vector<Tensor>{q, k, v};
    autograd::record(
        op, inputs, out,
        [packed, q, k, v, g, mask, lse, o = out.detach()](const Tensor& dy, autograd::Gradients& grads) {
            InputGrads d(packed, q, k, v, grads, true);
            dispatch_floating(q.dtype(), "attention backward", [&]<class T>(T) {
                detail::flash_backward<T>(g, {.q = q.data<T>(),
                                              .k = k.data<T>(),
                                              .v = v.data<T>(),
                                              .mask = detail::data_or_null<T>(mask),
                                              .out = o.data<T>(),
                                              .lse = lse.data<T>(),
                                              .dout = dy.data<T>(),
                                              .dq = detail::data_or_null<T>(d.dq),
                                              .dk = detail::data_or_null<T>(d.dk),
                                              .dv = detail::data_or_null<T>(d.dv)});
            });
            d.add_to(grads, packed);
        });
    return {out, Tensor()};
}

// Runs the kernels for q, k, v (one tensor when `packed`) and records the tape entries:
// one for the output and one for the weights (whose backward runs only when they are used).
// Without need_weights, long sequences take the flash path (see kFlashMinKeys).
SdpaResult run(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, bool packed, Geometry g,
               const Shape& out_shape, const SdpaOptions& options) {
    prepare(g, q, options, op);
    const Tensor mask = options.attn_mask;
    if (!options.need_weights && g.tk >= kFlashMinKeys)
        return run_flash(op, q, k, v, packed, g, out_shape, mask);
    Tensor out = empty(out_shape, {.dtype = q.dtype()});  // every block writes its part
    Tensor weights = empty({g.batch, g.heads, g.tq, g.tk}, {.dtype = q.dtype()});
    dispatch_floating(q.dtype(), op, [&]<class T>(T) {
        forward_kernel<T>(g, q.data<T>(), k.data<T>(), v.data<T>(), detail::data_or_null<T>(mask),
                          out.data<T>(), weights.data<T>());
    });
    const Tensor returned = options.need_weights ? weights : Tensor();
    if (!autograd::needs_record({&q, &k, &v})) return {out, returned};

    auto backward = [packed, q, k, v](const Geometry& geo, const Tensor& p, const Tensor& dout,
                                      const Tensor& dweights, autograd::Gradients& grads, bool with_v) {
        InputGrads d(packed, q, k, v, grads, with_v);
        dispatch_floating(q.dtype(), "attention backward", [&]<class T>(T) {
            backward_kernel<T>(geo, {.q = q.data<T>(),
                                     .k = k.data<T>(),
                                     .v = v.data<T>(),
                                     .weights = p.data<T>(),
                                     .dout = detail::data_or_null<T>(dout),
                                     .dweights = detail::data_or_null<T>(dweights),
                                     .dq = detail::data_or_null<T>(d.dq),
                                     .dk = detail::data_or_null<T>(d.dk),
                                     .dv = detail::data_or_null<T>(d.dv)});
        });
        d.add_to(grads, packed);
    };
    const std::vector<Tensor> inputs = packed ? std::vector<Tensor>{q} : std::vector<Tensor>{q, k, v};
    // Through the weights alone: dS = P * (dW - rowsum(dW * P)); v gets no gradient. This entry
    // holds the weights weakly (it produces them: a strong reference would keep it alive), and
    // it is recorded first so that the output's entry, which holds them strongly, comes later
    // on the tape, as every consumer does, and a sweep releases both in one pass.
    if (options.need_weights) {
        std::weak_ptr<detail::TensorImpl> weak_weights = weights.impl();
        autograd::record("attention_weights", inputs, weights,
                         [backward, g, weak_weights](const Tensor& dw, autograd::Gradients& grads) {
                             const Tensor p(weak_weights.lock());
                             AG_ASSERT(p.defined(), "attention weights released before their backward");
                             backward(g, p, Tensor(), dw, grads, false);
                         });
    }
    // dV = Pd^T dO, dS = P * (dPd M / (1 - p) - rowsum(...)), dQ = scale dS K, dK = scale dS^T Q
    autograd::record(op, inputs, out, [backward, g, weights](const Tensor& dy, autograd::Gradients& grads) {
        backward(g, weights, dy, Tensor(), grads, true);
    });
    return {out, returned};
}

}  // namespace

void check_additive_mask(const Tensor& mask, std::string_view name, std::string_view op) {
    if (!mask.defined() || !is_floating(mask.dtype())) return;
    dispatch_floating(mask.dtype(), op, [&]<class T>(T) {
        const T* p = mask.data<T>();
        const std::int64_t n = mask.numel();
        for (std::int64_t i = 0; i < n; ++i)
            AG_CHECK(
                !std::isnan(p[i]) && p[i] != std::numeric_limits<T>::infinity(), ValueError,
                "{}: {} holds {} at index {} of {}; a float mask must hold finite values or -inf (masked)",
                op, name, p[i], i, mask.shape());
    });
}

SdpaResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const SdpaOptions& options) {
    constexpr const char* op = "scaled_dot_product_attention";
    detail::check_attention_inputs(op, {&q, &k, &v}, 4);
    const Shape &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
    AG_CHECK(sk[0] == sq[0] && sv[0] == sq[0] && sk[1] == sq[1] && sv[1] == sq[1], ShapeError,
             "{}: batch and head sizes differ: q {}, k {}, v {}", op, sq, sk, sv);
    AG_CHECK(sk[3] == sq[3], ShapeError, "{}: q and k widths differ: q {}, k {}", op, sq, sk);
    AG_CHECK(sv[2] == sk[2], ShapeError, "{}: k and v lengths differ: k {}, v {}", op, sk, sv);
    AG_CHECK(sq[3] > 0, ShapeError, "{}: q and k need a positive width, got q {}", op, sq);
    Geometry g{{.batch = sq[0], .heads = sq[1], .tq = sq[2], .tk = sk[2], .d = sq[3], .dv = sv[3]}};
    g.q = heads_major(g.heads, g.tq, g.d);
    g.k = heads_major(g.heads, g.tk, g.d);
    g.v = heads_major(g.heads, g.tk, g.dv);
    g.out = heads_major(g.heads, g.tq, g.dv);
    const Shape out_shape{g.batch, g.heads, g.tq, g.dv};
    return run(op, q, k, v, false, std::move(g), out_shape, options);
}

SdpaResult scaled_dot_product_attention_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                              std::int64_t num_heads, const SdpaOptions& options) {
    constexpr const char* op = "scaled_dot_product_attention_heads";
    Geometry g{detail::heads_last_geometry(op, q, k, v, num_heads)};
    const Shape out_shape{g.batch, g.tq, g.heads * g.dv};
    return run(op, q, k, v, false, std::move(g), out_shape, options);
}

SdpaResult scaled_dot_product_attention_packed(const Tensor& qkv, std::int64_t num_heads,
                                               const SdpaOptions& options) {
    constexpr const char* op = "scaled_dot_product_attention_packed";
    Geometry g{detail::packed_geometry(op, qkv, num_heads)};
    const Shape out_shape{g.batch, g.tq, g.heads * g.dv};
    return run(op, qkv, qkv, qkv, true, std::move(g), out_shape, options);
}

}  // namespace attograd
