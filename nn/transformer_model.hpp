// nn::Transformer: torch.nn.Transformer's encoder-decoder model (Vaswani et al. 2017), built on
// TransformerEncoder and TransformerDecoder, with encode / decode for step-by-step decoding.
#pragma once

#include "nn/transformer.hpp"

namespace attograd::nn {

/// Options of Transformer, with the names and defaults of torch.nn.Transformer (always batch
/// first), then attograd's attention options passed to every layer (see TransformerLayerOptions).
struct TransformerOptions {
    std::int64_t d_model = 512;                ///< E, width of src, tgt and the output (>= 1)
    std::int64_t nhead = 8;                    ///< heads of every attention; must divide d_model
    std::int64_t num_encoder_layers = 6;       ///< encoder layers (>= 0)
    std::int64_t num_decoder_layers = 6;       ///< decoder layers (>= 0)
    std::int64_t dim_feedforward = 2048;       ///< feed-forward width (>= 0; 0 drops the block)
    double dropout = 0.1;                      ///< in [0, 1], as in TransformerLayerOptions
    Activation activation = Activation::ReLU;  ///< of the feed-forward blocks: relu or gelu
    double layer_norm_eps = 1e-5;              ///< eps of every LayerNorm, the final norms included
    bool norm_first = false;                   ///< pre-norm layers (the final norms are there either way)
    bool bias = true;                          ///< biases of the attentions, linears and LayerNorms
    /// Beyond PyTorch: the score, local window and relative positions of every attention (see
    /// TransformerLayerOptions::scoring).
    ScoringOptions scoring{};
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Keyword arguments of Transformer::forward (torch.nn.Transformer.forward's), with
/// MultiHeadAttention's mask semantics: bool `true` = not allowed, float = added to the scores.
/// As in PyTorch, memory_key_padding_mask is not taken from src_key_padding_mask: pass both.
struct TransformerArgs {
    Tensor src_mask{};                 ///< encoder self-attention: [S, S] or [B * nhead, S, S]
    Tensor tgt_mask{};                 ///< decoder self-attention: [T, T] or [B * nhead, T, T]
    Tensor memory_mask{};              ///< cross-attention: [T, S] or [B * nhead, T, S]
    Tensor src_key_padding_mask{};     ///< [B, S]: true at padded sources
    Tensor tgt_key_padding_mask{};     ///< [B, T]: true at padded targets
    Tensor memory_key_padding_mask{};  ///< [B, S]: true at padded memory positions
    bool src_is_causal = false;        ///< applies the causal mask (not a hint as in PyTorch 2)
    bool tgt_is_causal = false;        ///< applies the causal mask (not a hint as in PyTorch 2)
    bool memory_is_causal = false;     ///< target t sees memory positions s <= t
};

/// torch.nn.Transformer (Vaswani et al. 2017, §3; PyTorch's documented module):
///   memory = encoder(src) = encoder.norm(encoder layers(src))
///   output = decoder(tgt, memory) = decoder.norm(decoder layers(tgt, memory))
/// Submodules `encoder` (TransformerEncoder with final LayerNorm `encoder.norm`) and `decoder`
/// (TransformerDecoder, `decoder.norm`), so the state_dict keys are PyTorch's:
/// `encoder.layers.0.self_attn.in_proj_weight`, ..., `encoder.norm.weight`,
/// `decoder.layers.0.multihead_attn.out_proj.weight`, ..., `decoder.norm.bias`. Initialised as
/// PyTorch's _reset_parameters: every parameter with more than one dimension is redrawn by
/// xavier_uniform_ (Glorot & Bengio 2010), the rest keep their layer's initialisation. Each
/// layer draws its own values (PyTorch deep-copies one layer first; the reset redraws them all
/// anyway). No embeddings, positional encoding or output projection, as in PyTorch.
/// An AttentionRecorder sees `decoder.layers.<i>.multihead_attn` [B, nhead, T, S] and the
/// self-attentions under their dotted names.
class Transformer : public Module {
public:
    /// Draws the initial parameters from `generator`, which must outlive the model (dropout
    /// draws from it). Throws ValueError naming the option (d_model < 1, nhead not dividing
    /// d_model, num_encoder_layers or num_decoder_layers < 0, dim_feedforward < 0, dropout
    /// outside [0, 1], layer_norm_eps < 0, the attention options a layer refuses), DTypeError,
    /// ResourceError naming d_model or dim_feedforward when a layer's parameters would be too
    /// large (check_transformer_sizes).
    explicit Transformer(TransformerOptions options = {}, Generator& generator = default_generator());
    ~Transformer() override;

    /// src [B, S, E], tgt [B, T, E] -> [B, T, E]: decode(tgt, encode(src)). Throws ShapeError
    /// (batch sizes of src and tgt that differ, a last dimension other than d_model, S or T = 0,
    /// masks that do not fit: "Transformer: tgt_mask must be [T, T] = [4, 4] or [B * nhead, T, T]
    /// = [4, 4, 4], got [3, 3]"), DTypeError (inputs or masks of the wrong dtype), ValueError (a
    /// float mask holding NaN or +inf); every argument is checked before either half runs.
    Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& args = {}) const;
    /// The encoder half: src [B, S, E] -> memory [B, S, E], after `encoder.norm`. Throws as
    /// TransformerEncoder::forward, the messages starting "Transformer::encode".
    Tensor encode(const Tensor& src, const TransformerEncoderArgs& args = {}) const;
    /// The decoder half: tgt [B, T, E], memory [B, S, E] -> [B, T, E], after `decoder.norm`;
    /// called once per step by beam or greedy search. Throws as TransformerDecoder::forward, the
    /// messages starting "Transformer::decode".
    Tensor decode(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args = {}) const;

    /// PyTorch's static `generate_square_subsequent_mask`: float [size, size], -inf above the
    /// diagonal (see nn::generate_square_subsequent_mask). Throws ValueError, DTypeError.
    static Tensor generate_square_subsequent_mask(std::int64_t size, DType dtype = DType::Float32);

    std::string type_name() const override { return "Transformer"; }
    std::string extra_repr() const override;

    const TransformerOptions& options() const { return options_; }   ///< the options it was built with
    const TransformerEncoder& encoder() const { return *encoder_; }  ///< registered as "encoder"
    const TransformerDecoder& decoder() const { return *decoder_; }  ///< registered as "decoder"

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    TransformerOptions options_;
    std::shared_ptr<TransformerEncoder> encoder_;
    std::shared_ptr<TransformerDecoder> decoder_;
};

}  // namespace attograd::nn
