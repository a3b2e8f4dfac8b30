// The hook through which attention layers learn that some of their heads attend with weights given
// from outside (intervention, knockout) instead of their own.
#include "nn/attention_intervention.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/ops_local_attention.hpp"

#include <algorithm>
#include <limits>

namespace attograd::nn {

namespace detail {
const AttentionInterventions*& active_attention_interventions() {
    thread_local const AttentionInterventions* slot = nullptr;
    return slot;
}
}  // namespace detail

namespace {

// The weights one head attends with: 0 when silenced, its replacement, or its own [B, Tq, Tk].
Tensor weight_used(const HeadIntervention& head, const Tensor& own, const Tensor& allowed,
                   const QueryRows& rows) {
    if (head.silence) return zeros_like(own);
    if (head.replace) return head.replace(own, allowed, rows);
    return own;
}

// Every head's weights used: own and allowed [B, h, Tq, Tk] -> [B, h, Tq, Tk]. A run of heads
// without intervention is copied from `own` as one slice (no per-head copy, and their allowed
// keys are never read): the weights used are the same values either way.
Tensor heads_used(const std::vector<HeadIntervention>& interventions, const Tensor& own,
                  const Tensor& allowed, const QueryRows& rows) {
    const auto h = static_cast<std::int64_t>(interventions.size());
    auto untouched = [&](std::int64_t head) {
        const HeadIntervention& i = interventions[static_cast<std::size_t>(head)];
        return !i.silence && !i.replace;
    };
    std::vector<Tensor> parts;
    for (std::int64_t head = 0; head < h;) {
        std::int64_t end = head;
        while (end < h && untouched(end)) ++end;
        if (end > head) {  // heads [head, end) attend with their own weights
            parts.push_back(head == 0 && end == h ? own : narrow(own, 1, head, end - head));
            head = end;
            continue;
        }
        const Tensor used = weight_used(interventions[static_cast<std::size_t>(head)], select(own, 1, head),
                                        select(allowed, 1, head), rows);
        parts.push_back(reshape(used, {used.size(0), 1, used.size(1), used.size(2)}));
        ++head;
    }
    return parts.size() == 1 ? parts.front() : concat(parts, 1);
}

}  // namespace

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
    weights = heads_used(interventions, weights, allowed, {.first = 0, .total = weights.size(2)});
    const Tensor per_head = matmul(weights, values);  // [B, h, Tq, d]
    const std::int64_t b = per_head.size(0), tq = per_head.size(2), d = per_head.size(3);
    heads = reshape(permute(per_head, {0, 2, 1, 3}), {b, tq, h * d});
}

Tensor replace_band_weights(const std::vector<HeadIntervention>& interventions, const Tensor& band,
                            const Tensor& scores, const Tensor& window_start, std::int64_t tk,
                            const QueryRows& rows) {
    const auto h = static_cast<std::int64_t>(interventions.size());
    AG_ASSERT(h >= 1 && band.dim() == 3 && band.size(0) % h == 0 && scores.shape() == band.shape(),
              "replace_band_weights: {} heads, band {}, scores {}", h, band.shape(), scores.shape());
    const std::int64_t n = band.size(0), b = n / h, tq = band.size(1), width = band.size(2);
    const Tensor allowed_band = gt(scores, -std::numeric_limits<double>::infinity());  // [B h, Tq, W]
    // dense [B, h, Tq, Tk] views: the own weights, and the keys inside the window that are not masked
    const Tensor own = reshape(local_band_to_dense(band, window_start, tk), {b, h, tq, tk});
    const Tensor allowed = reshape(
        gt(local_band_to_dense(to_dtype(allowed_band, band.dtype()), window_start, tk), 0.5), {b, h, tq, tk});
    const Tensor dense = reshape(heads_used(interventions, own, allowed, rows), {n, tq, tk});
    // slot j of row (r, t) reads key start + j, clamped into [0, Tk): a slot outside the keys is
    // not allowed and gets 0 below
    const std::vector<std::int64_t> start = window_start.to_vector<std::int64_t>();
    std::vector<double> index(static_cast<std::size_t>(n * tq * width));
    for (std::size_t r = 0; r < start.size(); ++r)
        for (std::int64_t j = 0; j < width; ++j)
            index[r * static_cast<std::size_t>(width) + static_cast<std::size_t>(j)] =
                static_cast<double>(std::clamp<std::int64_t>(start[r] + j, 0, tk - 1));
    const Tensor gathered = gather(dense, 2, tensor(index, {n, tq, width}, {.dtype = DType::Int64}));
    return where(allowed_band, gathered, 0.0);
}

Tensor intervene_step(const Module* layer, const Tensor& weights, const Tensor& allowed,
                      const QueryRows& rows) {
    const std::vector<HeadIntervention>* heads = head_interventions(layer);
    if (heads == nullptr) return weights;
    AG_ASSERT(heads->size() == 1, "intervene_step: a decoder's attention has one head, got {}",
              heads->size());
    return weight_used(heads->front(), weights, allowed, rows);
}

Tensor allowed_keys(const Tensor& additive_mask, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                    std::int64_t tk) {
    if (!additive_mask.defined()) {  // every key allowed: no float64 pass over [B, h, Tq, Tk]
        Tensor all = empty({batch, heads, tq, tk}, {.dtype = DType::Bool});
        std::fill_n(all.data<bool>(), all.numel(), true);
        return all;
    }
    Tensor full_shape = zeros({batch, heads, tq, tk}, {.dtype = DType::Float64});
    if (additive_mask.defined()) full_shape = full_shape + to_dtype(additive_mask, DType::Float64);
    return gt(full_shape, -std::numeric_limits<double>::infinity());
}

}  // namespace attograd::nn
