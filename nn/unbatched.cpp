// Unbatched attention inputs ([T, E], PyTorch's unbatched form) run as a batch of one.
#include "nn/unbatched.hpp"

#include "core/ops_shape.hpp"

namespace attograd::nn {
namespace {
Tensor add_batch(const Tensor& t) {
    Shape shape = t.shape();
    shape.insert(shape.begin(), 1);
    return reshape(t, shape);
}
}  // namespace

Unbatched::Unbatched(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& padding) {
    query = add_batch(q);
    key = k.impl() == q.impl() ? query : add_batch(k);
    value = v.impl() == q.impl() ? query : (v.impl() == k.impl() ? key : add_batch(v));
    key_padding_mask = unbatched_padding(padding);
}

Tensor unbatched_padding(const Tensor& padding) {
    // a [Tk] mask gains the batch; any other shape is left for the batched path's check
    return padding.defined() && padding.dim() == 1 ? add_batch(padding) : padding;
}

Tensor drop_batch(const Tensor& t) {
    if (!t.defined() || t.dim() == 0 || t.size(0) != 1) return t;
    return reshape(t, Shape(t.shape().begin() + 1, t.shape().end()));
}

}  // namespace attograd::nn
