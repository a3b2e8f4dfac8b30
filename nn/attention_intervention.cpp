// The hook through which attention layers learn that some of their heads attend with weights given
// from outside (intervention, knockout) instead of their own.
#include "nn/attention_intervention.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"

#include <limits>

namespace attograd::nn {

namespace detail {
const AttentionInterventions*& active_attention_interventions() {
    thread_local const AttentionInterventions* slot = nullptr;
    return slot;
}
}  // namespace detail

bool replaces_weights(const std::vector<HeadIntervention>* heads) {
    if (heads == nullptr) return false;
    for (const auto& head : *heads)
        if (head.replace) return true;
    return false;
}

void silence_heads(const std::vector<HeadIntervention>& interventions, Tensor& heads, Tensor& weights) {
    const auto h = static_cast<std::int64_t>(interventions.size());
    AG_ASSERT(h >= 1 && heads.size(-1) % h == 0, "silence_heads: {} heads for output {}", h, heads.shape());
    bool any = false;
    for (const auto& head : interventions) any = any || head.silence;
    if (!any) return;
    const std::int64_t d = heads.size(-1) / h;
    std::vector<double> keep_columns, keep_heads;
    for (const auto& head : interventions) {
        keep_heads.push_back(head.silence ? 0.0 : 1.0);
        keep_columns.insert(keep_columns.end(), static_cast<std::size_t>(d), head.silence ? 0.0 : 1.0);
    }
    heads = heads * tensor(keep_columns, {h * d}, {.dtype = heads.dtype()});
    if (weights.defined()) {
        const Tensor keep = tensor(keep_heads, {h}, {.dtype = weights.dtype()});
        weights = weights * (weights.dim() == 4 ? reshape(keep, {1, h, 1, 1}) : reshape(keep, {1, 1, 1}));
    }
}

void replace_head_weights(const std::vector<HeadIntervention>& interventions, const Tensor& values,
                          const Tensor& allowed, Tensor& heads, Tensor& weights) {
    const auto h = static_cast<std::int64_t>(interventions.size());
    AG_ASSERT(weights.dim() == 4 && weights.size(1) == h && values.dim() == 4,
              "replace_head_weights: {} heads, weights {}, values {}", h, weights.shape(), values.shape());
    std::vector<Tensor> used;
    used.reserve(static_cast<std::size_t>(h));
    for (std::int64_t i = 0; i < h; ++i) {
        const HeadIntervention& head = interventions[static_cast<std::size_t>(i)];
        const Tensor own = select(weights, 1, i);
        if (head.silence)
            used.push_back(zeros_like(own));
        else if (head.replace)
            used.push_back(head.replace(own, select(allowed, 1, i)));
        else
            used.push_back(own);
    }
    weights = stack(used, 1);                         // [B, h, Tq, Tk]
    const Tensor per_head = matmul(weights, values);  // [B, h, Tq, d]
    const std::int64_t b = per_head.size(0), tq = per_head.size(2), d = per_head.size(3);
    heads = reshape(permute(per_head, {0, 2, 1, 3}), {b, tq, h * d});
}

Tensor allowed_keys(const Tensor& additive_mask, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                    std::int64_t tk) {
    Tensor full_shape = zeros({batch, heads, tq, tk}, {.dtype = DType::Float64});
    if (additive_mask.defined()) full_shape = full_shape + to_dtype(additive_mask, DType::Float64);
    return gt(full_shape, -std::numeric_limits<double>::infinity());
}

}  // namespace attograd::nn
