// BahdanauDecoder: the GRU decoder with additive attention of Bahdanau, Cho & Bengio (2015).
#pragma once

#include "core/generator.hpp"
#include "nn/decoding.hpp"
#include "nn/module.hpp"

#include <functional>
#include <memory>

namespace attograd::nn {

struct QueryRows;

class AdditiveScore;
class Embedding;
class GRUCell;
class Linear;

/// Options of BahdanauDecoder.
struct BahdanauDecoderOptions {
    std::int64_t vocab_size = 0;     ///< V, target vocabulary (>= 1)
    std::int64_t embedding_dim = 0;  ///< E, width of the target embeddings (>= 1)
    std::int64_t hidden_size = 0;    ///< n, width of the decoder state s_i (>= 1)
    /// A, width of the encoder annotations h_j (2n for the paper's bidirectional encoder); 0 = hidden_size.
    std::int64_t memory_dim = 0;
    std::int64_t attention_dim = 0;  ///< n', hidden width of the additive score; 0 = hidden_size
    /// Biases inside the score: v^T tanh(W h_j + b_W + U s_{i-1} + b_U) + b_v, as PyTorch's seq2seq
    /// tutorial's `BahdanauAttention` (AttentionScoreOptions::bias). The paper has none.
    bool score_bias = false;
    /// true: logits from [s_i; c_i; E y_{i-1}] (the paper's deep output, eq. 4 / A.2.2, with a
    /// linear layer in place of its maxout); false: from s_i alone (PyTorch's tutorial
    /// `AttnDecoderRNN`).
    bool deep_output = true;
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// The decoder of Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly Learning to
/// Align and Translate" (ICLR 2015), §3.1 and appendix A.2, teacher-forced over a target prefix:
///   e_ij = v^T tanh(W h_j + U s_{i-1})           (eq. 6, additive score; query s_{i-1})
///   alpha_ij = softmax_j(e_ij),  c_i = sum_j alpha_ij h_j    (eq. 5)
///   s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])          (eq. 4 / A.2.2, a GRUCell)
///   logits_i = W_o [s_i; c_i; E y_{i-1}] + b_o    (deep_output; else W_o s_i + b_o)
/// h_j [B, S, A] are the encoder's annotations (the paper's bidirectional GRU states); s_0 comes
/// from the encoder as an argument (the paper: s_0 = tanh(W_s h<-_1)). The score follows
/// nn::AdditiveScore's names: W acts on the annotations, U on the query (the paper's U_a and W_a).
/// With score_bias = true, deep_output = false and A = n it is PyTorch's seq2seq tutorial's
/// `AttnDecoderRNN` (without its dropout) step for step.
///
/// Parameters (state_dict keys): "embedding.weight" [V, E]; "attention.W" [n', A], "attention.U"
/// [n', n], "attention.v" [n'] (with score_bias also "attention.W_bias", "attention.U_bias",
/// "attention.v_bias"); "cell.weight_ih" [3n, E + A], "cell.weight_hh" [3n, n], "cell.bias_ih",
/// "cell.bias_hh"; "out.weight" [V, n + A + E] (deep output; [V, n] otherwise), "out.bias" [V].
/// The [B, T, S] attention map of a forward is reported once to an active AttentionRecorder,
/// under the name of the "attention" submodule.
class BahdanauDecoder : public Module {
public:
    /// Draws the parameters from `generator`. Throws ValueError (a size < 1, or memory_dim /
    /// attention_dim < 0), DTypeError, ResourceError (parameters too large).
    explicit BahdanauDecoder(BahdanauDecoderOptions options, Generator& generator = default_generator());
    ~BahdanauDecoder() override;

    /// Teacher-forced decoding: tgt_in int64 [B, T] (y_0 = bos, y_1 .. y_{T-1}), memory [B, S, A],
    /// memory_key_padding_mask bool or float [B, S] (`true` at padded source positions, which get
    /// weight exactly 0; undefined = none), initial_state s_0 [B, n] (undefined = zeros)
    /// -> logits [B, T, V] (row t predicts y_{t+1}). Throws ShapeError, DTypeError, IndexError
    /// (an id outside [0, V)), ValueError; messages start with "BahdanauDecoder" and name the
    /// argument and the shapes.
    Tensor forward(const Tensor& tgt_in, const Tensor& memory, const Tensor& memory_key_padding_mask = {},
                   const Tensor& initial_state = {}) const;

    /// Maps the memory [N, S, A] and its mask [N, S] (undefined when none) to s_0 [N, n].
    using InitialState = std::function<Tensor(const Tensor& memory, const Tensor& memory_key_padding_mask)>;
    /// The step function greedy_decode / beam_search call: forward over the whole prefix (stateless),
    /// with s_0 = initial_state(memory, mask) (zeros when `initial_state` is empty); it gets the
    /// rows decoding gathered, so it must compute s_0 from them. The module must outlive it.
    DecodeStep decode_step(InitialState initial_state = {}) const;
    /// The incremental start of greedy_decode / beam_search: a state carrying s_{i-1}, the
    /// projected keys W h_j (computed once), the memory and its mask, one row per prefix; each
    /// step runs the decoder over the new token only (forward's step i, bit for bit) and
    /// reorder keeps the rows of the surviving prefixes. s_0 = initial_state(memory, mask) on the
    /// memory decoding starts with (zeros when empty). The state's step throws ShapeError (tokens
    /// not [N] for its N rows), DTypeError, IndexError; its reorder ShapeError / IndexError; the
    /// messages start with "BahdanauDecoder". The module must outlive it.
    IncrementalStart incremental_start(InitialState initial_state = {}) const;
    /// decode_step(initial_state) and incremental_start(initial_state) together.
    DecodeModel decode_model(InitialState initial_state = {}) const;

    std::string type_name() const override { return "BahdanauDecoder"; }
    std::string extra_repr() const override;
    const BahdanauDecoderOptions& options() const { return options_; }  ///< the options it was built with

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    friend class BahdanauDecodeState;
    // Step i: y = E y_{i-1} [B, E], s = s_{i-1} [B, n] (becomes s_i), keys W h_j [B, S, n'], memory
    // [B, S, A], the additive mask [B, 1, S] (or undefined) -> (the output features [B, F], the
    // weights alpha_i [B, 1, S]).
    // `rows` places the step among the forward's query rows (for an intervention's replacement).
    std::pair<Tensor, Tensor> step(const Tensor& y, Tensor& s, const Tensor& keys, const Tensor& memory,
                                   const Tensor& additive_mask, const QueryRows& rows) const;

    BahdanauDecoderOptions options_;
    std::shared_ptr<Embedding> embedding_;
    std::shared_ptr<AdditiveScore> attention_;
    std::shared_ptr<GRUCell> cell_;
    std::shared_ptr<Linear> out_;
};

}  // namespace attograd::nn
