// Transformer layers (Vaswani et al. 2017) with torch.nn's semantics and state_dict names: the
// encoder and decoder layers and their stacks.
#pragma once

#include "core/generator.hpp"
#include "nn/attention.hpp"
#include "nn/attention_scores.hpp"
#include "nn/hard_attention.hpp"
#include "nn/local_window.hpp"
#include "nn/module.hpp"
#include "nn/multihead_attention.hpp"
#include "nn/positional_bias.hpp"
#include "nn/scoring_options.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace attograd::nn {

class Dropout;
class LayerNorm;
class Linear;
class ModuleList;

/// The activation between a Transformer layer's two feed-forward linears (PyTorch's
/// `activation` "relu" | "gelu"; GELU is the exact erf form, attograd::gelu).
enum class Activation { ReLU, GELU };

/// Beyond PyTorch: the module behind each attention block of a Transformer layer.
/// - MultiHead: nn::MultiHeadAttention (PyTorch's; keys `in_proj_weight`, `out_proj.*`).
/// - Single: nn::Attention, one head with learned q / k / v projections of width d_model and no
///   output projection (keys `q_proj.*`, `k_proj.*`, `v_proj.*`, `score.*`, `W_p`, `v_p`), which
///   adds soft, sparse or hard weights (with the Gumbel straight-through or REINFORCE estimator)
///   to the scores and windows. Needs nhead = 1 and no positional option.
enum class LayerAttention { MultiHead, Single };

/// Parses "relu" or "gelu". Throws ValueError listing the choices.
Activation parse_activation(std::string_view name);
/// "relu" or "gelu".
std::string_view to_string(Activation activation);

/// Options of TransformerEncoderLayer and TransformerDecoderLayer, with the names and defaults
/// of torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (PyTorch 2.1's `bias` included).
struct TransformerLayerOptions {
    std::int64_t d_model = 0;  ///< E, width of the sequences (> 0)
    std::int64_t nhead = 1;    ///< heads of each attention; must divide d_model
    /// Width of the feed-forward hidden layer (>= 0). Beyond PyTorch, 0 drops the feed-forward
    /// block (linear1, dropout, linear2, its norm and its dropout are not registered): an
    /// attention-only layer (PyTorch builds empty linears and adds linear2's bias).
    std::int64_t dim_feedforward = 2048;
    /// Dropout probability, in [0, 1], on the attention weights, after each attention block,
    /// inside the feed-forward block and after it (PyTorch's dropout, dropout1..3).
    double dropout = 0.1;
    Activation activation = Activation::ReLU;  ///< feed-forward activation
    double layer_norm_eps = 1e-5;              ///< eps of every LayerNorm
    /// attograd is always batch first ([B, T, E]); false is rejected (PyTorch's default is false).
    bool batch_first = true;
    /// Pre-norm (LayerNorm before each block, Xiong et al. 2020) instead of the paper's post-norm.
    bool norm_first = false;
    /// Learn the additive biases of the attentions, linears and LayerNorms (PyTorch >= 2.1).
    bool bias = true;
    /// Beyond PyTorch: the score, local attention with its window D, and relative positions
    /// of every attention of the layer (self- and cross-attention alike), given to each as it is
    /// (see MultiHeadAttentionOptions::scoring; LayerAttention::Single takes no positional).
    ScoringOptions scoring{};
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
    /// Beyond PyTorch: the attention module of every block (see LayerAttention).
    LayerAttention attention = LayerAttention::MultiHead;
    /// LayerAttention::Single only (AttentionOptions' fields of the same names): softmax,
    /// sparsemax or hard weights, hard attention's estimator, its Gumbel temperature and
    /// REINFORCE's baseline decay. MultiHead takes Soft only.
    Normalizer normalizer = Normalizer::Soft;
    HardEstimator estimator = HardEstimator::GumbelStraightThrough;  ///< hard attention's estimator
    double temperature = 1.0;                                        ///< Gumbel-softmax temperature (> 0)
    double baseline_decay = 0.9;  ///< REINFORCE's baseline decay, in [0, 1)
    /// Beyond PyTorch, decoder layers only: false drops the self-attention block over the
    /// targets (self_attn, norm1 and dropout1 are not registered), leaving cross-attention and
    /// feed-forward: every target position then depends on its own input and the memory only,
    /// as in the attention decoders of Bahdanau et al. 2015 / Luong et al. 2015 without
    /// recurrence. An encoder layer refuses false.
    bool self_attention = true;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

/// Keyword arguments of TransformerEncoderLayer::forward and TransformerEncoder::forward
/// (PyTorch's; TransformerEncoder calls src_mask `mask`). Masks have MultiHeadAttention's
/// semantics: bool `true` = not allowed, float = added to the scores.
struct TransformerEncoderArgs {
    /// bool or float, [T, T] or [B * nhead, T, T] (index b * nhead + head).
    Tensor src_mask{};
    /// bool or float [B, T]: true (or the added float) at padded positions.
    Tensor src_key_padding_mask{};
    /// Position t attends only to positions s <= t. Unlike PyTorch 2, where it is a hint that
    /// src_mask is causal, it applies the causal mask itself (combined with src_mask if given).
    bool is_causal = false;
    /// Beyond PyTorch: when set, each hard attention trained by REINFORCE (LayerAttention::Single)
    /// appends its log p(chosen key) here while training, for ReinforceTrace::loss.
    ReinforceTrace* reinforce = nullptr;
};

/// Keyword arguments of TransformerDecoderLayer::forward and TransformerDecoder::forward
/// (PyTorch's), with MultiHeadAttention's mask semantics.
struct TransformerDecoderArgs {
    Tensor tgt_mask{};                 ///< self-attention: bool or float [Tt, Tt] or [B * nhead, Tt, Tt]
    Tensor memory_mask{};              ///< cross-attention: bool or float [Tt, Tm] or [B * nhead, Tt, Tm]
    Tensor tgt_key_padding_mask{};     ///< bool or float [B, Tt]: true at padded targets
    Tensor memory_key_padding_mask{};  ///< bool or float [B, Tm]: true at padded memory positions
    /// Target t attends only to targets s <= t (applied, not a hint as in PyTorch 2).
    bool tgt_is_causal = false;
    /// Target t attends only to memory positions s <= t (applied, not a hint as in PyTorch 2).
    bool memory_is_causal = false;
    /// Beyond PyTorch: collects REINFORCE's log-probabilities (see TransformerEncoderArgs).
    ReinforceTrace* reinforce = nullptr;
};

/// torch.nn.TransformerEncoderLayer (Vaswani et al. 2017, §3.1), always batch first (or unbatched [T, E]):
///   post-norm: x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(ff(x)))
///   pre-norm:  x = x + dropout1(self_attn(norm1(x))); x = x + dropout2(ff(norm2(x)))
///   ff(x) = linear2(dropout(activation(linear1(x))))
/// Submodules, registered in PyTorch's order and under its names so the state_dict keys are
/// PyTorch's: `self_attn` (MultiHeadAttention: `self_attn.in_proj_weight`, `self_attn.in_proj_bias`,
/// `self_attn.out_proj.weight`, ...), `linear1` [dim_feedforward, E], `dropout`, `linear2`
/// [E, dim_feedforward], `norm1`, `norm2` (LayerNorm [E]), `dropout1`, `dropout2`. Initialised
/// as PyTorch does (each submodule's own initialisation). An AttentionRecorder sees the weights
/// [B, nhead, T, T] under `<name>.self_attn` ([B, T, T] with LayerAttention::Single).
class TransformerEncoderLayer : public Module {
public:
    /// Draws the initial parameters from `generator`, which must outlive the layer (dropout
    /// draws from it). Throws ValueError (d_model, nhead or dim_feedforward < 1, nhead not
    /// dividing d_model, dim_feedforward < 0, dropout outside [0, 1], layer_norm_eps < 0,
    /// batch_first = false, self_attention = false, LayerAttention::Single with nhead != 1 or a
    /// positional option, a normalizer other than Soft with MultiHead, the attention options
    /// MultiHeadAttention or Attention refuses), DTypeError, ResourceError naming d_model or
    /// dim_feedforward when a parameter would be too large (check_transformer_sizes).
    explicit TransformerEncoderLayer(TransformerLayerOptions options,
                                     Generator& generator = default_generator());
    ~TransformerEncoderLayer() override;

    /// src [B, T, E] -> [B, T, E], or unbatched src [T, E] -> [T, E] (as PyTorch; masks src_mask
    /// [T, T] or [nhead, T, T], src_key_padding_mask [T]), run as a batch of one. Float masks must
    /// have the parameters' dtype and hold finite values or -inf (masked). Throws ShapeError (src
    /// not [B, T, d_model] / [T, d_model], T = 0, masks that do not fit, naming the layer, the mask
    /// by its PyTorch name and both shapes; see check_encoder_inputs), DTypeError (src
    /// not of the parameters' dtype, mask dtypes: a float mask of another float dtype, naming the
    /// mask, the layer and both dtypes), ValueError (a float mask holding NaN or +inf).
    Tensor forward(const Tensor& src, const TransformerEncoderArgs& args = {}) const;

    std::string type_name() const override { return "TransformerEncoderLayer"; }
    std::string extra_repr() const override;

    const TransformerLayerOptions& options() const { return options_; }  ///< the options it was built with
    /// The self-attention, registered as "self_attn". Throws ValueError with LayerAttention::Single.
    const MultiHeadAttention& self_attn() const;

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    TransformerLayerOptions options_;
    std::shared_ptr<MultiHeadAttention> self_attn_;
    std::shared_ptr<Attention> self_attn_single_;
    std::shared_ptr<Linear> linear1_, linear2_;
    std::shared_ptr<LayerNorm> norm1_, norm2_;
    std::shared_ptr<Dropout> dropout_, dropout1_, dropout2_;
};

/// The caches of one TransformerDecoderLayer during incremental decoding: its self-attention's
/// keys and values (one per decoded position) and its cross-attention's projected memory.
struct TransformerDecoderLayerCache {
    KeyValueCache self_attn{};       ///< the self-attention's (empty without self_attention)
    KeyValueCache multihead_attn{};  ///< the cross-attention's
};

/// The caches of a TransformerDecoder (Hugging Face's `past_key_values`: one entry per layer),
/// one row per live sequence.
struct TransformerDecoderCache {
    std::vector<TransformerDecoderLayerCache> layers{};  ///< one per layer, filled by the first step
    std::int64_t steps = 0;                              ///< positions decoded so far
    /// Keeps rows `rows` int64 [N'] of every layer's caches, in that order (Hugging Face's
    /// `_reorder_cache`). Throws as KeyValueCache::reorder.
    void reorder(const Tensor& rows);
};

/// torch.nn.TransformerDecoderLayer (Vaswani et al. 2017, §3.1), always batch first (or unbatched [T, E]):
///   post-norm: x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(multihead_attn(x, memory)));
///              x = norm3(x + dropout3(ff(x)))
///   pre-norm:  x = x + dropout1(self_attn(norm1(x))); x = x + dropout2(multihead_attn(norm2(x), memory));
///              x = x + dropout3(ff(norm3(x)))
/// Submodules in PyTorch's order and names: `self_attn`, `multihead_attn` (cross-attention over
/// the memory), `linear1`, `dropout`, `linear2`, `norm1`, `norm2`, `norm3`, `dropout1`,
/// `dropout2`, `dropout3` (without self_attn, norm1, dropout1 when self_attention is false; without
/// the feed-forward modules, norm3 and dropout3 when dim_feedforward is 0). An AttentionRecorder
/// sees `<name>.self_attn` [B, nhead, Tt, Tt] and `<name>.multihead_attn` [B, nhead, Tt, Tm]
/// ([B, Tt, T] with LayerAttention::Single).
class TransformerDecoderLayer : public Module {
public:
    /// Throws as TransformerEncoderLayer's constructor (self_attention = false is allowed).
    explicit TransformerDecoderLayer(TransformerLayerOptions options,
                                     Generator& generator = default_generator());
    ~TransformerDecoderLayer() override;

    /// tgt [B, Tt, E], memory [B, Tm, E] -> [B, Tt, E], or unbatched tgt [Tt, E], memory [Tm, E]
    /// -> [Tt, E] (as PyTorch; masks [Tt, Tt] / [Tt, Tm] or with nhead in front, padding masks
    /// [Tt] / [Tm]), run as a batch of one. Throws ShapeError (tgt or memory not [B, T, d_model]
    /// / [T, d_model], one batched and the other not, batch sizes that differ, memory with no
    /// position or, with self-attention, tgt with none, masks that do not fit, named as
    /// check_decoder_inputs does), DTypeError and ValueError for float masks as
    /// TransformerEncoderLayer::forward.
    Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args = {}) const;

    /// Incremental decoding: tgt [N, 1, E], the next position p = cache.self_attn.steps of N
    /// target sequences, memory [N, S, E] (the tensor the cache was started with) -> [N, 1, E],
    /// row p of forward(tgt_{0..p}, memory, {.tgt_is_causal = true}) bit for bit; its key and
    /// value join the cache (MultiHeadAttention::forward_cached / forward_cross_cached).
    /// args.tgt_key_padding_mask is [N, 1] (the new position's), memory_key_padding_mask [N, S]
    /// is read at the first step only; tgt_is_causal is implied. Throws ValueError (a
    /// configuration supports_cache() refuses, tgt_mask, memory_mask or memory_is_causal set,
    /// and as forward_cached), ShapeError, DTypeError.
    Tensor forward_cached(const Tensor& tgt, const Tensor& memory, TransformerDecoderLayerCache& cache,
                          const TransformerDecoderArgs& args = {}) const;
    /// Whether forward_cached supports this layer: MultiHead attention whose options
    /// MultiHeadAttention::supports_cache accepts.
    bool supports_cache() const;

    std::string type_name() const override { return "TransformerDecoderLayer"; }
    std::string extra_repr() const override;

    const TransformerLayerOptions& options() const { return options_; }  ///< the options it was built with
    /// The self-attention over the targets, registered as "self_attn". Throws ValueError with
    /// LayerAttention::Single or self_attention = false.
    const MultiHeadAttention& self_attn() const;
    /// The cross-attention over the memory, registered as "multihead_attn". Throws ValueError
    /// with LayerAttention::Single.
    const MultiHeadAttention& multihead_attn() const;

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    // The layer's residual blocks, norms and dropouts around its attentions (each [B, Tt, E] ->
    // [B, Tt, E], before dropout): what forward and forward_cached share.
    using Block = std::function<Tensor(const Tensor&)>;
    Tensor run_blocks(const Tensor& tgt, const Block& self_attention, const Block& cross_attention) const;

    TransformerLayerOptions options_;
    std::shared_ptr<MultiHeadAttention> self_attn_, multihead_attn_;
    std::shared_ptr<Attention> self_attn_single_, multihead_attn_single_;
    std::shared_ptr<Linear> linear1_, linear2_;
    std::shared_ptr<LayerNorm> norm1_, norm2_, norm3_;
    std::shared_ptr<Dropout> dropout_, dropout1_, dropout2_, dropout3_;
};

/// Options of TransformerEncoder and TransformerDecoder.
struct TransformerStackOptions {
    TransformerLayerOptions layer{};  ///< options of every layer
    /// Number of layers (>= 0; with 0 the stack is its final norm, or the identity, as in PyTorch).
    std::int64_t num_layers = 1;
    /// A final LayerNorm(d_model, layer_norm_eps, bias) registered as "norm" (PyTorch's `norm`
    /// argument, as nn.Transformer passes it; usual with norm_first).
    bool norm = false;
};
using TransformerEncoderOptions = TransformerStackOptions;
using TransformerDecoderOptions = TransformerStackOptions;

/// torch.nn.TransformerEncoder: num_layers TransformerEncoderLayers applied in turn, then the
/// optional final `norm`. Layers are registered in a ModuleList "layers", so the keys are
/// PyTorch's: `layers.0.self_attn.in_proj_weight`, `layers.1.linear1.weight`, ...,
/// `norm.weight`. Documented difference: each layer draws its own initial parameters
/// (PyTorch deep-copies one layer, so its layers start equal).
class TransformerEncoder : public Module {
public:
    /// Throws ValueError (num_layers < 0) and as TransformerEncoderLayer's constructor.
    explicit TransformerEncoder(TransformerStackOptions options, Generator& generator = default_generator());
    ~TransformerEncoder() override;

    /// src [B, T, E] -> [B, T, E] (or unbatched [T, E] -> [T, E]); every layer gets the same
    /// args. Throws as TransformerEncoderLayer::forward.
    Tensor forward(const Tensor& src, const TransformerEncoderArgs& args = {}) const;

    std::string type_name() const override { return "TransformerEncoder"; }
    std::string extra_repr() const override;

    const TransformerStackOptions& options() const { return options_; }  ///< the options it was built with
    /// Layer `index` (in [0, num_layers)). Throws IndexError.
    const TransformerEncoderLayer& layer(std::size_t index) const;

protected:
    void dtype_changed(DType dtype) override { options_.layer.dtype = dtype; }

private:
    TransformerStackOptions options_;
    std::vector<std::shared_ptr<TransformerEncoderLayer>> layers_;
    std::shared_ptr<LayerNorm> norm_;
};

/// torch.nn.TransformerDecoder: num_layers TransformerDecoderLayers, each attending over the same
/// memory, then the optional final `norm`. Keys: `layers.0.self_attn.in_proj_weight`,
/// `layers.0.multihead_attn.out_proj.weight`, `layers.0.norm3.bias`, ..., `norm.weight`.
/// Each layer draws its own initial parameters (PyTorch: copies of one layer).
class TransformerDecoder : public Module {
public:
    /// Throws ValueError (num_layers < 0) and as TransformerDecoderLayer's constructor.
    explicit TransformerDecoder(TransformerStackOptions options, Generator& generator = default_generator());
    ~TransformerDecoder() override;

    /// tgt [B, Tt, E], memory [B, Tm, E] -> [B, Tt, E] (or unbatched [Tt, E], [Tm, E] -> [Tt, E]);
    /// every layer gets the same args. Throws as TransformerDecoderLayer::forward.
    Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args = {}) const;

    /// Incremental decoding of one new position: tgt [N, 1, E], memory [N, S, E] -> [N, 1, E],
    /// equal to the last row of forward(tgt_{0..p}, memory, {.tgt_is_causal = true}) with the
    /// earlier positions' keys and values taken from `cache` (one entry per layer, created at
    /// the first step) and the new ones appended. Reorder the cache with the sequences
    /// (TransformerDecoderCache::reorder). All or nothing: a step that throws leaves the cache as
    /// it was. Throws ValueError (a cache of another layer count, a layer whose cache ran another
    /// number of positions than the cache, e.g. after calls on a single layer, and as
    /// TransformerDecoderLayer::forward_cached).
    Tensor forward_cached(const Tensor& tgt, const Tensor& memory, TransformerDecoderCache& cache,
                          const TransformerDecoderArgs& args = {}) const;
    /// Whether every layer supports_cache().
    bool supports_cache() const;

    std::string type_name() const override { return "TransformerDecoder"; }
    std::string extra_repr() const override;

    const TransformerStackOptions& options() const { return options_; }  ///< the options it was built with
    /// Layer `index` (in [0, num_layers)). Throws IndexError.
    const TransformerDecoderLayer& layer(std::size_t index) const;

protected:
    void dtype_changed(DType dtype) override { options_.layer.dtype = dtype; }

private:
    TransformerStackOptions options_;
    std::vector<std::shared_ptr<TransformerDecoderLayer>> layers_;
    std::shared_ptr<LayerNorm> norm_;
};

}  // namespace attograd::nn
