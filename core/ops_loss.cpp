// Losses: cross-entropy (log-softmax and smoothed NLL fused), NLL and MSE, hand-written backward.
//
// Class inputs [N, C, d...] are viewed as [N, C, D] (AxisSplit around the class axis, D the
// product of d...; an unbatched [C] is [1, C, 1]); their targets [N, d...] as [N, D]. Position
// j = n * D + i holds target t[j] and the loss of column (n, :, i).
#include "core/ops_loss.hpp"

#include "core/autograd.hpp"
#include "core/detail/cross_entropy_rows.hpp"
#include "core/detail/softmax_kernel.hpp"
#include "core/ops_elementwise.hpp"

#include <Eigen/Core>

#include <cmath>

namespace attograd {
namespace {

AxisSplit check_class_inputs(const Tensor& input, const Tensor& targets, const CrossEntropyOptions& options,
                             const char* op) {
    AG_CHECK(input.defined() && targets.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(is_floating(input.dtype()), DTypeError, "{}: input must be float32 or float64, got {} {}", op,
             input.dtype(), input.shape());
    AG_CHECK(targets.dtype() == DType::Int64, DTypeError,
             "{}: targets must be int64 class indices, got {} {}", op, targets.dtype(), targets.shape());
    AG_CHECK(input.dim() >= 1, ShapeError, "{}: input must be [N, C], [N, C, d...] or [C], got a 0-d tensor",
             op);
    const std::int64_t class_axis = input.dim() == 1 ? 0 : 1;
    Shape expected = input.shape();
    expected.erase(expected.begin() + class_axis);
    AG_CHECK(targets.shape() == expected, ShapeError,
             "{}: targets {} do not fit input {} (expected targets {})", op, targets.shape(), input.shape(),
             expected);
    const AxisSplit s = split_at_axis(input.shape(), class_axis);
    AG_CHECK(s.size > 0, ShapeError, "{}: input {} has no classes", op, input.shape());
    AG_CHECK(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0, ValueError,
             "{}: label_smoothing must be in [0, 1], got {}", op, options.label_smoothing);
    const auto* t = targets.data<std::int64_t>();
    const std::int64_t n = targets.numel();  // hoisted: numel() walks the shape
    for (std::int64_t j = 0; j < n; ++j)
        AG_CHECK(t[j] == options.ignore_index || (t[j] >= 0 && t[j] < s.size), IndexError,
                 "{}: target {} at position {} is outside [0, {}) and is not ignore_index ({})", op, t[j], j,
                 s.size, options.ignore_index);
    return s;
}

// Sum, sum / count (Mean; 0 when count is 0) or `losses` itself (None).
Tensor reduce_losses(const Tensor& losses, Reduction reduction, std::int64_t count) {
    if (reduction == Reduction::None) return losses;
    double total = 0.0;
    dispatch_floating(losses.dtype(), "loss", [&]<class T>(T) {
        const T* p = losses.data<T>();
        const std::int64_t n = losses.numel();  // hoisted: numel() walks the shape
        for (std::int64_t j = 0; j < n; ++j) total += p[j];
    });
    if (reduction == Reduction::Mean) total = count == 0 ? 0.0 : total / static_cast<double>(count);
    return scalar(total, {.dtype = losses.dtype()});
}

// dL/dloss_j = dy[j] (None) or dy[0] * scale (Sum: 1, Mean: 1 / count, or 0 when count is 0).
template <class T>
struct Upstream {
    const T* dy;
    Reduction reduction;
    T scale;

    Upstream(const Tensor& grad, Reduction r, std::int64_t count)
        : dy(grad.data<T>()),
          reduction(r),
          scale(r != Reduction::Mean ? T(1) : (count == 0 ? T(0) : T(1) / static_cast<T>(count))) {}
    T operator()(std::int64_t j) const { return reduction == Reduction::None ? dy[j] : dy[0] * scale; }
};

// dlogits[j, c] = dloss_j * factor[j, c] (zero rows where t_j is ignored): factor [N, C] from
// cross_entropy_rows, dy the upstream gradient of the reduced (or per-row) losses -> [N, C].
Tensor cross_entropy_contiguous_backward(const Tensor& dy, const Tensor& factor, const AxisSplit& s,
                                         Reduction reduction, std::int64_t count) {
    Tensor dx = empty(factor.shape(), {.dtype = dy.dtype()});
    dispatch_floating(dy.dtype(), "cross_entropy", [&]<class T>(T) {
        const Upstream<T> upstream(dy, reduction, count);
        using Rows = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
        using ConstRows = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
        Rows d(dx.data<T>(), s.outer, s.size);
        const ConstRows f(factor.data<T>(), s.outer, s.size);
        if (reduction != Reduction::None) {
            d = f * upstream(0);
            return;
        }
        for (std::int64_t j = 0; j < s.outer; ++j) d.row(j) = f.row(j) * upstream(j);
    });
    return dx;
}

// cross_entropy over contiguous classes (the last axis; s.inner == 1): losses and the
// gradient's row factor in one parallel pass (core/detail/cross_entropy_rows.hpp), so that backward
// only scales the factor by the upstream gradient.
Tensor cross_entropy_contiguous(const Tensor& logits, const Tensor& targets,
                                const CrossEntropyOptions& options, const AxisSplit& s) {
    Tensor losses = empty(targets.shape(), {.dtype = logits.dtype()});
    const bool recording = autograd::needs_record({&logits});
    Tensor factor = recording ? empty(logits.shape(), {.dtype = logits.dtype()}) : Tensor();
    const auto* t = targets.data<std::int64_t>();
    const detail::ClassRows rows{.rows = s.outer,
                                 .classes = s.size,
                                 .targets = t,
                                 .ignore_index = options.ignore_index,
                                 .label_smoothing = options.label_smoothing};
    std::int64_t count = 0;
    for (std::int64_t j = 0; j < s.outer; ++j) count += t[j] == options.ignore_index ? 0 : 1;
    dispatch_floating(logits.dtype(), "cross_entropy", [&]<class T>(T) {
        detail::cross_entropy_rows(logits.data<T>(), rows, losses.data<T>(),
                                   factor.defined() ? factor.data<T>() : nullptr);
    });
    Tensor out = reduce_losses(losses, options.reduction, count);
    if (recording) {
        autograd::record(
            "cross_entropy", {logits}, out,
            [factor, s, reduction = options.reduction, count](const Tensor& dy, autograd::Gradients& g) {
                g.add(0, cross_entropy_contiguous_backward(dy, factor, s, reduction, count));
            });
    }
    return out;
}

// Classes `inner` apart: logits [N, C, D] -> log_probs [N, C, D] and losses [N, D] (label
// smoothing eps: (1 - eps) * -lp[t_j] + eps / C * sum_c -lp[c]; 0 where t_j is ignored).
// Returns the count of positions not ignored.
template <class T>
std::int64_t cross_entropy_forward(const T* logits, const std::int64_t* t, const AxisSplit& s,
                                   const CrossEntropyOptions& options, T* lp, T* losses) {
    detail::log_softmax_rows(logits, lp, s);
    const T eps = static_cast<T>(options.label_smoothing);
    const T per_class = eps / static_cast<T>(s.size);
    std::int64_t count = 0;
    for (std::int64_t n = 0; n < s.outer; ++n) {
        const T* lpn = lp + n * s.size * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) {
            const std::int64_t j = n * s.inner + i;
            if (t[j] == options.ignore_index) {
                losses[j] = T(0);
                continue;
            }
            ++count;
            T loss = -lpn[t[j] * s.inner + i];
            if (eps != T(0)) {
                T smooth = T(0);
                for (std::int64_t c = 0; c < s.size; ++c) smooth -= lpn[c * s.inner + i];
                loss = (T(1) - eps) * loss + per_class * smooth;
            }
            losses[j] = loss;
        }
    }
    return count;
}

// log_probs [N, C, D] -> dlogits [N, C, D]:
//   dlogits[n, c, i] = dloss_j * (p[n, c, i] - (1 - eps) [c == t_j] - eps / C), j = (n, i);
//   zero where t_j is ignored.
template <class T>
void cross_entropy_backward(const T* lp, const std::int64_t* t, const AxisSplit& s,
                            const CrossEntropyOptions& options, const Upstream<T>& upstream, T* dx) {
    const T eps = static_cast<T>(options.label_smoothing);
    const T per_class = eps / static_cast<T>(s.size);
    // Position by position, so that its target, ignore test and upstream factor are read once,
    // not once per class.
    for (std::int64_t n = 0; n < s.outer; ++n)
        for (std::int64_t i = 0; i < s.inner; ++i) {
            const std::int64_t j = n * s.inner + i, tj = t[j];
            const T* lpj = lp + n * s.size * s.inner + i;
            T* dxj = dx + n * s.size * s.inner + i;
            if (tj == options.ignore_index) {
                for (std::int64_t c = 0; c < s.size; ++c) dxj[c * s.inner] = T(0);
                continue;
            }
            const T up = upstream(j);
            for (std::int64_t c = 0; c < s.size; ++c) {
                const T hit = c == tj ? T(1) - eps : T(0);
                dxj[c * s.inner] = up * (std::exp(lpj[c * s.inner]) - hit - per_class);
            }
        }
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options) {
    const AxisSplit s = check_class_inputs(logits, targets, options, "cross_entropy");
    if (s.inner == 1) return cross_entropy_contiguous(logits, targets, options, s);
    // classes `inner` apart ([N, C, d...]): log-softmax rows, then the losses
    Tensor log_probs = empty(logits.shape(), {.dtype = logits.dtype()});
    Tensor losses = empty(targets.shape(), {.dtype = logits.dtype()});
    std::int64_t count = 0;
    dispatch_floating(logits.dtype(), "cross_entropy", [&]<class T>(T) {
        count = cross_entropy_forward(logits.data<T>(), targets.data<std::int64_t>(), s, options,
                                      log_probs.data<T>(), losses.data<T>());
    });
    Tensor out = reduce_losses(losses, options.reduction, count);
    if (autograd::needs_record({&logits})) {
        autograd::record("cross_entropy", {logits}, out,
                         [log_probs, targets, s, options, count](const Tensor& dy, autograd::Gradients& g) {
                             Tensor dx = empty(log_probs.shape(), {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), "cross_entropy", [&]<class T>(T) {
                                 cross_entropy_backward(log_probs.data<T>(), targets.data<std::int64_t>(), s,
                                                        options, Upstream<T>(dy, options.reduction, count),
                                                        dx.data<T>());
                             });
                             g.add(0, dx);
                         });
    }
    return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, CrossEntropyOptions options) {
    const AxisSplit s = check_class_inputs(log_probs, targets, options, "nll_loss");
    AG_CHECK(options.label_smoothing == 0.0, ValueError,
             "nll_loss: label_smoothing must be 0 (got {}); cross_entropy supports it",
             options.label_smoothing);
    Tensor losses = empty(targets.shape(), {.dtype = log_probs.dtype()});
    const auto* t = targets.data<std::int64_t>();
    std::int64_t count = 0;
    dispatch_floating(log_probs.dtype(), "nll_loss", [&]<class T>(T) {
        const T* px = log_probs.data<T>();
        T* pl = losses.data<T>();
        for (std::int64_t n = 0; n < s.outer; ++n)
            for (std::int64_t i = 0; i < s.inner; ++i) {
                const std::int64_t j = n * s.inner + i;
                const bool ignored = t[j] == options.ignore_index;
                count += ignored ? 0 : 1;
                pl[j] = ignored ? T(0) : -px[(n * s.size + t[j]) * s.inner + i];
            }
    });
    Tensor out = reduce_losses(losses, options.reduction, count);
    if (autograd::needs_record({&log_probs})) {
        autograd::record("nll_loss", {log_probs}, out,
                         [targets, s, options, count, in_shape = log_probs.shape()](const Tensor& dy,
                                                                                    autograd::Gradients& g) {
                             // dlog_probs[n, t_j, i] = -dloss_j, zero elsewhere and where t_j is ignored
                             Tensor dx = zeros(in_shape, {.dtype = dy.dtype()});
                             const auto* t = targets.data<std::int64_t>();
                             dispatch_floating(dy.dtype(), "nll_loss", [&]<class T>(T) {
                                 const Upstream<T> upstream(dy, options.reduction, count);
                                 T* px = dx.data<T>();
                                 for (std::int64_t n = 0; n < s.outer; ++n)
                                     for (std::int64_t i = 0; i < s.inner; ++i) {
                                         const std::int64_t j = n * s.inner + i;
                                         if (t[j] != options.ignore_index)
                                             px[(n * s.size + t[j]) * s.inner + i] = -upstream(j);
                                     }
                             });
                             g.add(0, dx);
                         });
    }
    return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
    AG_CHECK(input.defined() && target.defined(), ValueError, "mse_loss: undefined tensor argument");
    AG_CHECK(input.dtype() == target.dtype(), DTypeError,
             "mse_loss: dtypes differ: input {} {}, target {} {}", input.dtype(), input.shape(),
             target.dtype(), target.shape());
    AG_CHECK(input.shape() == target.shape(), ShapeError,
             "mse_loss: input {} and target {} must have the same shape", input.shape(), target.shape());
    AG_CHECK(reduction != Reduction::Mean || input.numel() > 0, ValueError,
             "mse_loss: the mean of an empty input {} is undefined", input.shape());
    Tensor losses = empty(input.shape(), {.dtype = input.dtype()});
    dispatch_floating(input.dtype(), "mse_loss", [&]<class T>(T) {
        const T* px = input.data<T>();
        const T* pt = target.data<T>();
        T* pl = losses.data<T>();
        const std::int64_t n = input.numel();  // hoisted: numel() walks the shape
        for (std::int64_t j = 0; j < n; ++j) pl[j] = (px[j] - pt[j]) * (px[j] - pt[j]);
    });
    Tensor out = reduce_losses(losses, reduction, input.numel());
    if (autograd::needs_record({&input, &target})) {
        autograd::record("mse_loss", {input, target}, out,
                         [input, target, reduction](const Tensor& dy, autograd::Gradients& g) {
                             // dinput = 2 (input - target) * dloss, dtarget = -dinput
                             Tensor dx = empty(input.shape(), {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), "mse_loss", [&]<class T>(T) {
                                 const Upstream<T> upstream(dy, reduction, input.numel());
                                 const T* px = input.data<T>();
                                 const T* pt = target.data<T>();
                                 T* pd = dx.data<T>();
                                 const std::int64_t n = input.numel();  // hoisted: numel() walks the shape
                                 for (std::int64_t j = 0; j < n; ++j)
                                     pd[j] = T(2) * (px[j] - pt[j]) * upstream(j);
                             });
                             if (g.needs(1)) g.add(1, neg(dx));
                             g.add(0, dx);
                         });
    }
    return out;
}

}  // namespace attograd
