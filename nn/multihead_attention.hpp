// MultiHeadAttention: PyTorch's nn.MultiheadAttention (batch first), plus a choice of score.
#pragma once

#include "core/generator.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_scores.hpp"
#include "nn/local_window.hpp"
#include "nn/module.hpp"
#include "nn/positional_bias.hpp"
#include "nn/scoring_options.hpp"

#include <memory>
#include <vector>

namespace attograd::nn {

class Linear;
struct HeadIntervention;

/// Options of MultiHeadAttention, with torch.nn.MultiheadAttention's names and defaults.
struct MultiHeadAttentionOptions {
    std::int64_t embed_dim = 0;  ///< E, width of the queries and of the output (> 0)
    std::int64_t num_heads = 1;  ///< h; must divide E (each head has width E / h)
    double dropout = 0.0;        ///< dropout on the attention weights while training, in [0, 1]
    bool bias = true;            ///< learn in_proj_bias and out_proj.bias
    bool add_bias_kv = false;    ///< append the learned bias_k / bias_v as one more key / value
    bool add_zero_attn = false;  ///< append a zero key / value (after bias_kv)
    std::int64_t kdim = 0;       ///< width of the key input; 0 = E
    std::int64_t vdim = 0;       ///< width of the value input; 0 = E
    /// attograd is always batch first ([B, T, E]); false is rejected (PyTorch's default is
    /// false: its sequence-first layout does not exist here).
    bool batch_first = true;
    /// Beyond PyTorch: how each head scores its keys (PyTorch's is the default, scaled dot,
    /// global, no positions).
    /// - score: ScaledDot and Dot run the fused attention kernel (core/ops_attention.hpp);
    ///   Additive and Bilinear score each head's projected queries and keys (width E / h) with
    ///   one score module shared by all heads, registered as "score" (parameters `score.*`).
    /// - local, window: local attention in every head (nn/local_window.hpp): each query sees only
    ///   the 2 * window + 1 keys around its centre, and only that band is computed. local-p
    ///   predicts each head's centre from its projected query with the parameters `W_p`
    ///   [E / h, E / h] and `v_p` [E / h], shared by the heads. Not combinable with add_bias_kv /
    ///   add_zero_attn (their keys sit outside every window). p_t learns only from keys inside
    ///   its window (the Gaussian factor), so a narrow window (D = 2) can leave a query whose
    ///   centre starts far from its key stuck; D >= 4 learned every toy task tried. With the Dot
    ///   or ScaledDot score (and no dropout active) the band is one fused op
    ///   (core/ops_local_sdpa.hpp) reading the heads in place; the other scores, or dropout while
    ///   training, run the score module, a softmax and local_weighted_sum per head sequence.
    ///   Sparse and hard attention are single-head only (nn::Attention).
    /// - positional, rope_base: relative positions inside every head. Rotary rotates the
    ///   projected queries and keys (before bias_k / zero_attn keys are appended, which get no
    ///   position) and needs an even head width E / h; ALiBi adds -m_h |t - s| to the scores, on
    ///   the local path within the band only. Both work with every score, global and local
    ///   attention and the fused kernels; local-p predicts its centres from the unrotated queries.
    ScoringOptions scoring{};
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Keyword arguments of MultiHeadAttention::forward_cached / forward_cross_cached: those of
/// AttentionArgs that apply to one cached position.
struct CachedAttentionArgs {
    /// Return the weights. Without them (and no AttentionRecorder), a cache of 2048 keys or more
    /// takes the flash kernel, as forward does with need_weights = false.
    bool need_weights = true;
    /// Weights averaged over the heads [N, 1, t] (true) or per head [N, h, 1, t].
    bool average_attn_weights = true;
};

/// What MultiHeadAttention::forward returns.
struct MultiHeadAttentionOutput {
    Tensor output;   ///< [B, Tq, E]
    Tensor weights;  ///< [B, Tq, Tk'] or [B, h, Tq, Tk'] (Tk' counts bias_kv / zero_attn keys); undefined
                     ///< when !need_weights
};

class MultiHeadAttention;

/// The keys and values one MultiHeadAttention has computed during incremental decoding (one
/// layer's entry of Hugging Face's `past_key_values`), one row per live prefix. Self-attention
/// appends the new position's key and value at every step; cross-attention projects the memory
/// once. The layout is HF's [N, h, t, d] with the heads side by side ([N, t, h * d]: head i in
/// columns [i * d, (i + 1) * d)), the layout the attention kernel reads in place.
struct KeyValueCache {
    Tensor key{};    ///< projected keys [N, t, E] (rotated with positional = Rotary)
    Tensor value{};  ///< projected values [N, t, E]
    /// bool or float [N, t]: the key padding mask of the cached keys (undefined: none)
    Tensor key_padding_mask{};
    const MultiHeadAttention* owner = nullptr;  ///< the module that filled it (null: empty)
    bool cross = false;                         ///< filled by forward_cross_cached
    /// Cross only: the memory it projected, kept so that no other tensor can take its place (a
    /// step is checked to pass this same tensor).
    Tensor memory{};
    /// Queries answered: the position of the next query (Rotary and ALiBi count from 0).
    std::int64_t steps = 0;
    /// Positions (keys) held, t.
    std::int64_t length() const { return key.defined() ? key.size(1) : 0; }
    /// Rows N (0 while empty).
    std::int64_t batch_size() const { return key.defined() ? key.size(0) : 0; }
    /// Keeps rows `rows` int64 [N'] of every cached tensor, in that order (Hugging Face's
    /// `_reorder_cache`). Throws ShapeError (rows not int64 [N']), IndexError (an index outside
    /// [0, N)); does nothing while empty.
    void reorder(const Tensor& rows);
};

/// Multi-head attention (Vaswani et al. 2017, §3.2.2) with torch.nn.MultiheadAttention's
/// semantics, parameter names and initialisation, so checkpoints move between the two:
///   q = query W_q^T + b_q, k = key W_k^T + b_k, v = value W_v^T + b_v     (each [B, T, E])
///   head_i = softmax(q_i k_i^T / sqrt(E / h) + mask) v_i                 (columns of head i)
///   output = concat(head_1..head_h) W_o^T + b_o
/// Parameters: `in_proj_weight` [3E, E] (rows: W_q, W_k, W_v) when kdim == vdim == E, else
/// `q_proj_weight` [E, E], `k_proj_weight` [E, kdim], `v_proj_weight` [E, vdim];
/// `in_proj_bias` [3E] (with bias); `bias_k`, `bias_v` [1, 1, E] (with add_bias_kv);
/// `out_proj.weight` [E, E], `out_proj.bias` [E] (an nn::Linear; PyTorch's class is
/// NonDynamicallyQuantizableLinear, the keys are the same). Initialised as PyTorch does:
/// xavier_uniform_ on the projection weights, zero biases, xavier_normal_ on bias_k / bias_v,
/// out_proj.weight as nn.Linear's default.
///
/// Documented differences from PyTorch: inputs are always batch first; a query whose keys are
/// all masked gets zero weights and a zero output (PyTorch: NaN); the returned weights are taken
/// before dropout (PyTorch returns them after); the `scoring` options. Self-attention
/// (the same tensor as query, key and value, kdim == vdim == E, no bias_kv / zero_attn) runs one GEMM for the
/// three projections and one fused attention op on the packed result.
class MultiHeadAttention : public Module {
public:
    /// Draws the initial parameters from `generator`, which must outlive the module (dropout
    /// draws from it). Throws ValueError (embed_dim < 1, num_heads < 1 or not dividing
    /// embed_dim, kdim / vdim < 0, dropout outside [0, 1], batch_first = false, window < 0,
    /// local-p with window 0, local with add_bias_kv / add_zero_attn, Rotary with an odd head
    /// width, rope_base not finite and > 0), DTypeError, ResourceError naming embed_dim (kdim,
    /// vdim) when in_proj_weight or a projection would be too large (check_parameter_size).
    explicit MultiHeadAttention(MultiHeadAttentionOptions options,
                                Generator& generator = default_generator());
    ~MultiHeadAttention() override;

    /// query [B, Tq, E], key [B, Tk, kdim], value [B, Tk, vdim] -> output [B, Tq, E] and the
    /// weights (see MultiHeadAttentionOutput). Reports the per-head weights [B, h, Tq, Tk'] to
    /// an active AttentionRecorder. Throws ShapeError naming the shapes (ranks, widths, batch
    /// or key counts, masks), DTypeError (input or mask dtypes). Unbatched inputs (PyTorch's):
    /// query [Tq, E], key [Tk, kdim], value [Tk, vdim] with key_padding_mask [Tk] and attn_mask
    /// [Tq, Tk] or [h, Tq, Tk] -> output [Tq, E], weights [Tq, Tk'] or [h, Tq, Tk'] (run as a
    /// batch of one; the recorder sees [1, h, Tq, Tk']).
    MultiHeadAttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const AttentionArgs& args = {}) const;
    /// Self-attention: forward(x, x, x, args).
    MultiHeadAttentionOutput forward(const Tensor& x, const AttentionArgs& args = {}) const;

    /// Incremental causal self-attention: x [N, 1, E], the position p = cache.length() of each
    /// of N sequences, attends to the cached keys 0..p-1 and itself; its key and value are
    /// appended to the cache -> output [N, 1, E] and the weights [N, h, 1, p + 1] (or averaged
    /// [N, 1, p + 1]; undefined without args.need_weights). Equals row p of
    /// forward(x_{0..p}, {.is_causal = true}) bit for bit (with the same need_weights) below 2048
    /// keys; from 2048 keys on, forward without need_weights runs the blocked (flash) kernel, whose
    /// sums round differently (a few units in the last place).
    /// key_padding_mask bool or float [N, 1] marks the new key (true = padded; undefined: not
    /// padded) and is kept for later steps. Rotary and ALiBi positions count from the cache's
    /// first key. Throws ValueError (an option with no incremental path: a score other than dot
    /// or scaled-dot, local attention, add_bias_kv / add_zero_attn; a cache filled by another
    /// module or by cross-attention), ShapeError (x not [N, 1, E], N not the cache's rows, the
    /// mask not [N, 1]), DTypeError; messages start with "MultiHeadAttention::forward_cached".
    MultiHeadAttentionOutput forward_cached(const Tensor& x, KeyValueCache& cache,
                                            const Tensor& key_padding_mask = {},
                                            const CachedAttentionArgs& args = {}) const;
    /// Incremental cross-attention: query [N, 1, E] over memory [N, S, kdim] (also the value,
    /// as in a Transformer decoder). The first call (empty cache) projects the memory's keys and
    /// values once and keeps them with memory_key_padding_mask bool or float [N, S] (or
    /// undefined); later calls reuse them (rows reordered with the cache) and must pass the same
    /// memory tensor (its mask is then taken from the cache) -> output [N, 1, E] and weights
    /// [N, h, 1, S] (or [N, 1, S]). Equals forward(query, memory, memory) row for row. Throws as
    /// forward_cached, and ValueError when the memory is not the one the cache was built from or
    /// the cache was filled by self-attention.
    MultiHeadAttentionOutput forward_cross_cached(const Tensor& query, const Tensor& memory,
                                                  KeyValueCache& cache,
                                                  const Tensor& memory_key_padding_mask = {},
                                                  const CachedAttentionArgs& args = {}) const;
    /// Whether forward_cached / forward_cross_cached support these options (a dot or scaled-dot
    /// score, global attention, no add_bias_kv / add_zero_attn). Local attention is left out
    /// because its windows depend on the whole sequence's length: local-m centres query t of Tq at
    /// t * Tk / Tq and local-p scales its centres by Tk, so in a decoder earlier positions'
    /// outputs change as the prefix grows, and no cache of them can equal the whole-prefix run.
    bool supports_cache() const;

    std::string type_name() const override { return "MultiHeadAttention"; }
    std::string extra_repr() const override;

    /// The options, with kdim / vdim resolved (never 0).
    const MultiHeadAttentionOptions& options() const { return options_; }
    /// Width of one head, E / h.
    std::int64_t head_dim() const { return options_.embed_dim / options_.num_heads; }
    /// True when kdim == vdim == E: the projections are packed in in_proj_weight.
    bool packed_projection() const { return in_proj_weight_.defined(); }
    /// Parameters (handles sharing the module's storage); undefined when absent.
    Tensor in_proj_weight() const { return in_proj_weight_; }
    /// Q_proj_weight [E, E] (unpacked projections only).
    Tensor q_proj_weight() const { return q_proj_weight_; }
    /// K_proj_weight [E, kdim] (unpacked projections only).
    Tensor k_proj_weight() const { return k_proj_weight_; }
    /// V_proj_weight [E, vdim] (unpacked projections only).
    Tensor v_proj_weight() const { return v_proj_weight_; }
    Tensor in_proj_bias() const { return in_proj_bias_; }  ///< in_proj_bias [3E] (with bias)
    Tensor bias_k() const { return bias_k_; }              ///< bias_k [1, 1, E] (with add_bias_kv)
    Tensor bias_v() const { return bias_v_; }              ///< bias_v [1, 1, E] (with add_bias_kv)
    /// The output projection, registered as "out_proj".
    const Linear& out_proj() const { return *out_proj_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    struct Projected {
        Tensor q, k, v;
    };
    Projected project(const Tensor& query, const Tensor& key, const Tensor& value) const;
    void check_inputs(const Tensor& query, const Tensor& key, const Tensor& value) const;
    // RoPE on projected queries or keys [B, T, E], or on q and k of a packed qkv [B, T, 3E];
    // x itself without rotary positions.
    Tensor rotate(const Tensor& x) const;
    // The other paths (nn/multihead_attention_local.cpp) -> heads side by side [B, Tq, E] and
    // the weights [B, h, Tq, Tk'] (undefined when the local path was not asked for them).
    // attend_with_score takes the projections q [B, Tq, E], k, v [B, Tk', E]; attend_local the
    // inputs, which it projects itself (one GEMM for packed self-attention).
    std::pair<Tensor, Tensor> attend_with_score(const Tensor& q, const Tensor& k, const Tensor& v,
                                                const Tensor& mask) const;
    // attend_local applies the replacements of `interventions` (when some head has one) itself.
    std::pair<Tensor, Tensor> attend_local(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const AttentionMasks& masks, bool dense_weights,
                                           const std::vector<HeadIntervention>* interventions) const;
    // The cached paths' common end (nn/multihead_attention_cache.cpp): q [N, 1, E] over the
    // cache's keys with the additive mask [N or 1, h or 1, 1, t] (undefined: none).
    MultiHeadAttentionOutput attend_cached(const Tensor& q, const KeyValueCache& cache, const Tensor& mask,
                                           const CachedAttentionArgs& args) const;
    void check_cache(const char* fn, const Tensor& query, const KeyValueCache& cache, bool cross) const;
    // rotate() of x [N, 1, W] at sequence position `position` (x itself without rotary positions)
    Tensor rotate_at(const Tensor& x, std::int64_t position) const;

    MultiHeadAttentionOptions options_;
    Generator* generator_;
    Tensor in_proj_weight_, q_proj_weight_, k_proj_weight_, v_proj_weight_, in_proj_bias_, bias_k_, bias_v_;
    Tensor W_p_, v_p_;
    std::shared_ptr<Linear> out_proj_;
    std::shared_ptr<AttentionScore> score_;  // only for Additive / Bilinear scores or local attention
};

}  // namespace attograd::nn
