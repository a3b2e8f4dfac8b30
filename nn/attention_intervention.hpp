// The hook through which attention layers learn that some of their heads attend with weights given
// from outside (intervention, knockout) instead of their own.
#pragma once

#include "nn/module.hpp"

#include <functional>
#include <unordered_map>
#include <vector>

namespace attograd::nn {

/// Which of a layer's query rows one call of a replacement covers: rows [first, first + Tq) of
/// `total`. A whole-sequence layer passes {0, Tq}; a recurrent decoder attends one step at a time
/// and passes {t, T} at step t of a teacher-forced forward, {t, -1} (total unknown) when decoding.
struct QueryRows {
    std::int64_t first = 0;   ///< the index of the call's first query row among the layer's
    std::int64_t total = -1;  ///< the layer's query rows in this forward, -1 when not known
};

/// Replacement weights for one head: from the head's own weights [B, Tq, Tk] and the keys it may
/// attend to, allowed [B, Tq, Tk] (bool, true = allowed), to the weights it attends with instead
/// [B, Tq, Tk]. Layers call it as is; inspect::AttentionIntervention validates what it returns.
using WeightReplacement =
    std::function<Tensor(const Tensor& weights, const Tensor& allowed, const QueryRows& rows)>;

/// What happens to one head while an intervention is installed.
struct HeadIntervention {
    bool silence = false;       ///< zero weights and a zero output (head masking, Michel et al. 2019)
    WeightReplacement replace;  ///< when set: the weights to attend with
};

/// Interventions per attention layer, installed for a scope by inspect::AttentionIntervention (and
/// inspect::HeadKnockout); layers only read them.
struct AttentionInterventions {
    std::unordered_map<const Module*, std::vector<HeadIntervention>> layers;  ///< layer -> per head
    const AttentionInterventions* previous = nullptr;                         ///< the scope this replaced
};

namespace detail {
/// This thread's slot for the innermost interventions installed, or nullptr (a function for the
/// same reason as detail::active_recorder).
const AttentionInterventions*& active_attention_interventions();
}  // namespace detail

/// The interventions on `layer`'s heads on this thread, or nullptr when none is installed.
/// Costs one thread-local pointer test when no intervention is alive.
inline const std::vector<HeadIntervention>* head_interventions(const Module* layer) {
    const AttentionInterventions* s = detail::active_attention_interventions();
    if (s == nullptr) return nullptr;
    const auto it = s->layers.find(layer);
    return it == s->layers.end() ? nullptr : &it->second;
}

/// True when some head of `heads` has replacement weights (the layer must then materialise its
/// weights and recompute its output with replace_head_weights).
bool replaces_weights(const std::vector<HeadIntervention>* heads);

/// `heads` [B, Tq, h * d] (heads side by side) and `weights` [B, h, Tq, Tk] or [B, Tq, Tk] (when
/// defined) with the silenced heads' columns and weights multiplied by 0 (one whole-tensor op each;
/// the gradient through a silenced head is 0), the same as zero weights times the values.
void silence_heads(const std::vector<HeadIntervention>& interventions, Tensor& heads, Tensor& weights);

/// Applies the interventions to every head: `weights` [B, h, Tq, Tk] becomes the weights used
/// (own, replaced, or 0 for a silenced head) and `heads` [B, Tq, h * d] is recomputed from them as
/// weights @ values per head, with values [B, h, Tk, d]. `allowed` [B, h, Tq, Tk] bool (true =
/// the key may be attended to). No dropout is applied to the weights used.
void replace_head_weights(const std::vector<HeadIntervention>& interventions, const Tensor& values,
                          const Tensor& allowed, Tensor& heads, Tensor& weights);

/// Local attention's band weights (Luong et al. 2015 §3.2) with the interventions applied.
/// `band` [B h, Tq, W] holds the normalised weights of head i of sequence b in row b h + i (before
/// local-p's Gaussian factor), `scores` [B h, Tq, W] the masked scores (-inf where a slot lies
/// outside the keys or is masked), `window_start` int64 [B h, Tq] the first key of each window.
/// Each head's band is widened to dense weights [B, Tq, Tk] (0 outside its window), handed to
/// its replacement with the keys of its window that are not masked as the allowed keys, and the
/// weights used are gathered back into the band [B h, Tq, W]; a silenced head gets 0. Only
/// called while an intervention names the layer (it costs Tq * Tk per head). `rows` places the
/// band's queries among the layer's (a recurrent decoder's step t).
Tensor replace_band_weights(const std::vector<HeadIntervention>& interventions, const Tensor& band,
                            const Tensor& scores, const Tensor& window_start, std::int64_t tk,
                            const QueryRows& rows);

/// One step of a recurrent decoder's single-head attention `layer` under the interventions
/// installed for it: own weights [B, 1, S], allowed [B, 1, S] bool -> the weights used [B, 1, S]
/// (own when no intervention names the layer, 0 when it is silenced, else the replacement for
/// query row `rows`).
Tensor intervene_step(const Module* layer, const Tensor& weights, const Tensor& allowed,
                      const QueryRows& rows);

/// The keys allowed by an additive mask [mb, mh, Tq, Tk] (undefined = every key), as a bool
/// tensor [B, h, Tq, Tk]: true where the mask is not -inf.
Tensor allowed_keys(const Tensor& additive_mask, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                    std::int64_t tk);

}  // namespace attograd::nn
