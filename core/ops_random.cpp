// Random ops: inverted dropout with an explicit generator.
#include "core/ops_random.hpp"

#include "core/autograd.hpp"

namespace attograd {

Tensor dropout(const Tensor& x, double p, bool training, Generator& generator) {
    AG_CHECK(x.defined(), ValueError, "dropout: undefined tensor argument");
    AG_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: probability p must be in [0, 1], got {}", p);
    AG_CHECK(is_floating(x.dtype()), DTypeError, "dropout: expected a float32 or float64 tensor, got {} {}",
             x.dtype(), x.shape());
    if (!training || p == 0.0) return x;
    // scale[i] = 0 (dropped, probability p) or 1 / (1 - p) (kept)
    Tensor scale = empty(x.shape(), {.dtype = x.dtype()});
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), "dropout", [&]<class T>(T) {
        const T keep = p == 1.0 ? T(0) : static_cast<T>(1.0 / (1.0 - p));
        const T* px = x.data<T>();
        T* ps = scale.data<T>();
        T* po = out.data<T>();
        const std::int64_t n = x.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) {
            ps[i] = generator.uniform() < p ? T(0) : keep;
            po[i] = ps[i] == T(0) ? T(0) : px[i] * ps[i];
        }
    });
    if (autograd::needs_record({&x})) {
        // dx = dy * scale (exactly 0 where dropped)
        autograd::record("dropout", {x}, out, [scale](const Tensor& dy, autograd::Gradients& g) {
            Tensor dx = empty(dy.shape(), {.dtype = dy.dtype()});
            dispatch_floating(dy.dtype(), "dropout", [&]<class T>(T) {
                const T* pd = dy.data<T>();
                const T* ps = scale.data<T>();
                T* po = dx.data<T>();
                const std::int64_t n = dy.numel();  // hoisted: numel() walks the shape
                for (std::int64_t i = 0; i < n; ++i) po[i] = ps[i] == T(0) ? T(0) : pd[i] * ps[i];
            });
            g.add(0, dx);
        });
    }
    return out;
}

}  // namespace attograd
