// The hook through which attention layers learn which of their heads are silenced (knockout).
#include "nn/head_silencing.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"

namespace attograd::nn {

namespace detail {
const HeadSilencing*& active_head_silencing() {
    thread_local const HeadSilencing* slot = nullptr;
    return slot;
}
}  // namespace detail

void silence_heads(const std::vector<bool>& silenced, Tensor& heads, Tensor& weights) {
    const auto h = static_cast<std::int64_t>(silenced.size());
    AG_ASSERT(h >= 1 && heads.size(-1) % h == 0, "silence_heads: {} heads for output {}", h, heads.shape());
    const std::int64_t d = heads.size(-1) / h;
    std::vector<double> keep_columns, keep_heads;
    for (const bool s : silenced) {
        keep_heads.push_back(s ? 0.0 : 1.0);
        keep_columns.insert(keep_columns.end(), static_cast<std::size_t>(d), s ? 0.0 : 1.0);
    }
    heads = heads * tensor(keep_columns, {h * d}, {.dtype = heads.dtype()});
    if (weights.defined()) {
        const Tensor keep = tensor(keep_heads, {h}, {.dtype = weights.dtype()});
        weights = weights * (weights.dim() == 4 ? reshape(keep, {1, h, 1, 1}) : reshape(keep, {1, 1, 1}));
    }
}

}  // namespace attograd::nn
