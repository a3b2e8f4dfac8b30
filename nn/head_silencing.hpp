// The hook through which attention layers learn which of their heads are silenced (knockout).
#pragma once

#include "nn/module.hpp"

#include <unordered_map>
#include <vector>

namespace attograd::nn {

/// Heads to silence, per attention layer. Installed for a scope by inspect::HeadKnockout; layers
/// only read it. A silenced head gets zero weights and contributes a zero output, as a head
/// whose keys are all masked (Michel et al. 2019 mask heads the same way: h_i -> 0 * h_i).
struct HeadSilencing {
    std::unordered_map<const Module*, std::vector<bool>> silenced;  ///< layer -> per head, true = silenced
    const HeadSilencing* previous = nullptr;                        ///< the scope this one replaced
};

namespace detail {
/// The innermost silencing installed on this thread, or nullptr.
/// This thread's slot for it (a function for the same reason as detail::active_recorder).
const HeadSilencing*& active_head_silencing();
}  // namespace detail

/// The heads of `layer` silenced on this thread (true = silenced), or nullptr when none is.
/// Costs one thread-local pointer test when no knockout is alive.
inline const std::vector<bool>* silenced_heads(const Module* layer) {
    const HeadSilencing* s = detail::active_head_silencing();
    if (s == nullptr) return nullptr;
    const auto it = s->silenced.find(layer);
    return it == s->silenced.end() ? nullptr : &it->second;
}

/// `heads` [B, Tq, h * d] (heads side by side) and `weights` [B, h, Tq, Tk] (when defined) with
/// the silenced heads' columns and weights multiplied by 0 (one whole-tensor op each; the
/// gradient through a silenced head is 0). Used by Attention (h = 1) and MultiHeadAttention.
void silence_heads(const std::vector<bool>& silenced, Tensor& heads, Tensor& weights);

}  // namespace attograd::nn
