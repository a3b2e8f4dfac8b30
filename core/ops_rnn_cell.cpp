// The fused GRU cell step over pre-activations, forward and backward together.
#include "core/ops_rnn.hpp"

#include "core/autograd.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/rnn_cell_kernel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace attograd {
namespace {

constexpr const char* kOp = "gru_cell";

// Every row's step: h' [B, H] and, for backward, the gates r, z, n [B, 3H] and gh_n [B, H].
template <class S>
void gru_cell_forward(const detail::RnnDims& d, const S* gi, const S* gh, const S* h, S* out, S* gates,
                      S* hn) {
    const std::int64_t H = d.h;
    detail::parallel_for(
        d.b, detail::threads_for(d.b * 3 * H, detail::kMinParallelTranscendentalWork), [&](std::int64_t b) {
            detail::cell_forward(d, gi + b * 3 * H, gh + b * 3 * H, h + b * H, static_cast<const S*>(nullptr),
                                 out + b * H, static_cast<S*>(nullptr), gates + b * 3 * H, hn + b * H);
        });
}

// dn = dh' (1 - z), dz = dh' (h - n), d(gi_n) = dn (1 - n^2), dr = d(gi_n) gh_n:
// dgi = [dr r (1 - r), dz z (1 - z), d(gi_n)], dgh = [same, same, d(gi_n) r], dh = dh' z.
template <class S>
void gru_cell_backward(const detail::RnnDims& d, const S* dy, const S* h, const S* out, const S* gates,
                       const S* hn, S* dgi, S* dgh, S* dh) {
    const std::int64_t H = d.h;
    detail::parallel_for(
        d.b, detail::threads_for(d.b * 3 * H, detail::kMinParallelWork), [&](std::int64_t b) {
            detail::cell_backward(d, dy + b * H, h + b * H, out + b * H, static_cast<const S*>(nullptr),
                                  static_cast<const S*>(nullptr), gates + b * 3 * H, hn + b * H,
                                  dgi + b * 3 * H, dgh + b * 3 * H, dh + b * H, static_cast<S*>(nullptr));
        });
}

}  // namespace

Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
    AG_CHECK(gi.defined() && gh.defined() && h.defined(), ValueError, "{}: undefined tensor argument", kOp);
    AG_CHECK(h.dim() == 2 && gi.dim() == 2 && gh.dim() == 2 && gi.size(0) == h.size(0) &&
                 gi.size(1) == 3 * h.size(1) && gh.shape() == gi.shape(),
             ShapeError, "{}: expected gi [B, 3H], gh [B, 3H], h [B, H], got {}, {}, {}", kOp, gi.shape(),
             gh.shape(), h.shape());
    AG_CHECK(is_floating(h.dtype()) && gi.dtype() == h.dtype() && gh.dtype() == h.dtype(), DTypeError,
             "{}: gi, gh and h must share one float dtype, got {}, {}, {}", kOp, gi.dtype(), gh.dtype(),
             h.dtype());
    const detail::RnnDims d{
        .mode = RnnMode::Gru, .b = h.size(0), .t = 1, .i = 0, .h = h.size(1), .p = h.size(1), .g = 3};
    Tensor out = empty(h.shape(), {.dtype = h.dtype()});
    Tensor gates = empty(gi.shape(), {.dtype = h.dtype()});
    Tensor hn = empty(h.shape(), {.dtype = h.dtype()});
    dispatch_floating(h.dtype(), kOp, [&]<class S>(S) {
        gru_cell_forward(d, gi.data<S>(), gh.data<S>(), h.data<S>(), out.data<S>(), gates.data<S>(),
                         hn.data<S>());
    });
    if (autograd::needs_record({&gi, &gh, &h})) {
        autograd::record(kOp, {gi, gh, h}, out,
                         [d, h, y = out.detach(), gates, hn](const Tensor& dy, autograd::Gradients& g) {
                             Tensor dgi = empty(gates.shape(), {.dtype = dy.dtype()});
                             Tensor dgh = empty(gates.shape(), {.dtype = dy.dtype()});
                             Tensor dh = empty(h.shape(), {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), kOp, [&]<class S>(S) {
                                 gru_cell_backward(d, dy.data<S>(), h.data<S>(), y.data<S>(), gates.data<S>(),
                                                   hn.data<S>(), dgi.data<S>(), dgh.data<S>(), dh.data<S>());
                             });
                             g.add(0, dgi);
                             g.add(1, dgh);
                             g.add(2, dh);
                         });
    }
    return out;
}

}  // namespace attograd
