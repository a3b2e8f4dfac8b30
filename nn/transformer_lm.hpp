// nn::TransformerLM: a decoder-only causal Transformer language model (token and learned position
// embeddings, a causal TransformerEncoder, a linear head), as PyTorch's word_language_model
// example and GPT-2 build it; nn::generate samples from it.
#pragma once

#include "nn/sampling.hpp"
#include "nn/transformer.hpp"

#include <cstdint>
#include <memory>

namespace attograd::nn {

class Embedding;
class LearnedPositionalEmbedding;
class Linear;

/// Options of TransformerLM (the names of PyTorch's word_language_model TransformerModel and of
/// torch.nn.TransformerEncoderLayer).
struct TransformerLMOptions {
    std::int64_t vocab_size = 0;  ///< V, the tokens the model reads and predicts (>= 1)
    std::int64_t max_len = 0;     ///< longest context in tokens (the position table's rows; >= 1)
    std::int64_t d_model = 64;    ///< E, width of every position (>= 1)
    std::int64_t nhead = 4;       ///< heads of every self-attention; must divide d_model
    std::int64_t num_layers = 2;  ///< causal self-attention layers (>= 0)
    /// Feed-forward width of every layer (>= 0); 0 gives an attention-only model, the two-layer
    /// attention-only Transformer of Elhage et al. 2021 / Olsson et al. 2022 with num_layers = 2.
    std::int64_t dim_feedforward = 256;
    double dropout = 0.0;                      ///< in [0, 1], as in TransformerLayerOptions
    Activation activation = Activation::GELU;  ///< feed-forward activation (GPT-2's GELU)
    double layer_norm_eps = 1e-5;              ///< eps of every LayerNorm
    bool norm_first = true;  ///< pre-norm layers (GPT-2); the final norm is there either way
    /// None: learned absolute positions (the table `pos_encoder`, GPT-2's `wpe`); RoPE or ALiBi:
    /// relative positions in every attention and no table (as GPT-NeoX / LLaMA use RoPE).
    Positional positional = Positional::None;
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// A decoder-only language model over token ids:
///   h = input_emb(ids) + pos_encoder(positions 0..T-1)   (the table only with Positional::None)
///   h = encoder(h, is_causal = true)   (num_layers TransformerEncoderLayers + final LayerNorm)
///   logits = decoder(h)                (Linear E -> V)
/// so position t's logits predict token t + 1 from tokens 0..t only. Submodules and state_dict
/// keys follow PyTorch's word_language_model TransformerModel: `input_emb.weight` [V, E],
/// `pos_encoder.weight` [max_len, E] (with Positional::None), `encoder.layers.<i>.*`
/// (TransformerEncoderLayer's keys), `encoder.norm.*`, `decoder.weight` [V, E], `decoder.bias`
/// [V]. An AttentionRecorder sees each layer's causal self-attention [B, nhead, T, T] under
/// `encoder.layers.<i>.self_attn`.
class TransformerLM : public Module {
public:
    /// Draws the initial parameters from `generator`, which must outlive the model (dropout draws
    /// from it). Throws ValueError naming the option (vocab_size, max_len or d_model < 1, nhead not
    /// dividing d_model, num_layers or dim_feedforward < 0, dropout outside [0, 1]), DTypeError,
    /// ResourceError as its layers.
    explicit TransformerLM(TransformerLMOptions options, Generator& generator = default_generator());
    ~TransformerLM() override;

    /// ids int64 [B, T] (or unbatched [T]) with 1 <= T <= max_len -> logits [B, T, V] ([T, V]).
    /// key_padding_mask: bool [B, T], true at padding (right padding keeps the real positions'
    /// logits unchanged, since a causal query never sees later keys). Throws ShapeError (ids not
    /// rank 1 or 2, T = 0 or above max_len, a mask that does not fit), DTypeError (ids not int64),
    /// IndexError (an id outside [0, V)).
    Tensor forward(const Tensor& ids, const Tensor& key_padding_mask = {}) const;
    /// forward() from token embeddings instead of ids (Hugging Face's `inputs_embeds`, e.g. a leaf
    /// for gradient x input saliency): inputs_embeds [B, T, E] (or [T, E]) -> logits [B, T, V];
    /// the positions are added here. Throws ShapeError (not rank 2 or 3, a width other than
    /// d_model, T = 0 or above max_len, a mask that does not fit), DTypeError.
    Tensor forward_embeds(const Tensor& inputs_embeds, const Tensor& key_padding_mask = {}) const;
    /// input_emb(ids): int64 [B, T] -> [B, T, E]. Throws as Embedding::forward.
    Tensor embed(const Tensor& ids) const;

    /// The model as nn::generate calls it (ids [1, t] -> logits [1, t, V]); pair it with
    /// GenerateOptions::max_context = max_len. The model must outlive the function.
    NextTokenLogits next_token_logits() const;

    std::string type_name() const override { return "TransformerLM"; }
    std::string extra_repr() const override;

    const TransformerLMOptions& options() const { return options_; }  ///< the options it was built with
    const TransformerEncoder& encoder() const { return *encoder_; }   ///< registered as "encoder"

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    void check_length(std::int64_t t, const Shape& shape) const;

    TransformerLMOptions options_;
    std::shared_ptr<Embedding> input_emb_;
    std::shared_ptr<LearnedPositionalEmbedding> pos_encoder_;
    std::shared_ptr<TransformerEncoder> encoder_;
    std::shared_ptr<Linear> decoder_;
};

}  // namespace attograd::nn
