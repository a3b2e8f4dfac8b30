// Sampling the next token from logits: temperature, top-k and top-p (nucleus), with Hugging Face
// transformers' semantics, from an explicit generator; and a sampling loop for language models.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace attograd::nn {

/// Options of sample_logits (Hugging Face's `do_sample=True` with `temperature`, `top_k`,
/// `top_p`; the warpers run in that order, each on the previous one's output).
struct SamplingOptions {
    /// Logits are divided by it (TemperatureLogitsWarper): < 1 sharpens, > 1 flattens. Must be a
    /// finite number > 0; for greedy decoding use top_k = 1.
    double temperature = 1.0;
    /// Keep only the tokens whose logit is at least the k-th largest (TopKLogitsWarper: tokens tied
    /// with the k-th are all kept, so top_k = 1 is the argmax when the largest logit is unique);
    /// k > V keeps every token. nullopt: off. Must be >= 1.
    std::optional<std::int64_t> top_k = std::nullopt;
    /// Nucleus sampling (Holtzman et al. 2020; TopPLogitsWarper): with the kept tokens sorted by
    /// probability, largest first (ties: lower id first), keep each token whose preceding tokens'
    /// probabilities sum to less than top_p, so the kept set is the smallest whose mass reaches
    /// top_p, and never empty. 1: off. Must be in [0, 1].
    double top_p = 1.0;
};

/// One token id per row of `logits`, drawn from softmax(logits / temperature) restricted to the
/// tokens top_k and then top_p keep, renormalised. Each row uses one uniform draw u of
/// `generator` and takes the first token (by id) whose cumulative probability exceeds u, so the
/// same generator state gives the same tokens. Probabilities are computed in float64 with the
/// row maximum subtracted.
///
/// logits: float32 or float64 [N, V] (V >= 1; -inf marks a token that cannot be drawn). Returns
/// int64 [N]. Throws ValueError for a temperature that is not finite and > 0, top_k < 1, top_p
/// outside [0, 1], or a row holding NaN or +inf or only -inf (naming the row); DTypeError for
/// logits that are not float; ShapeError when logits are not [N, V] with V >= 1.
Tensor sample_logits(const Tensor& logits, const SamplingOptions& options, Generator& generator);

/// A decoder-only language model as generate calls it: ids int64 [1, t] (the context, t >= 1)
/// -> logits of the next token, [1, V] or [1, t, V] (the last position is used). It must be causal
/// and stateless (the whole context is passed each step).
using NextTokenLogits = std::function<Tensor(const Tensor& ids)>;

/// Options of generate (Hugging Face's `generate(max_new_tokens, eos_token_id, do_sample=True)`).
struct GenerateOptions {
    std::int64_t max_new_tokens = 64;      ///< most tokens appended (>= 0)
    std::optional<std::int64_t> eos_id{};  ///< stop after drawing this token (kept in the output)
    /// The model sees at most this many of the last tokens (a model with learned positions has a
    /// longest sequence; nanoGPT's block_size crop). nullopt: the whole sequence. Must be >= 1.
    std::optional<std::int64_t> max_context{};
    SamplingOptions sampling{};  ///< how each token is drawn
};

/// Autoregressive sampling: starting from `prompt`, call `model` on the (cropped) sequence, draw the
/// next token with sample_logits, append it, until max_new_tokens tokens were appended or eos_id
/// was drawn. Returns the prompt followed by the new tokens. Runs under NoGradGuard; put the model
/// in eval mode first (dropout would add randomness the generator does not control). The same
/// generator state gives the same output. Throws ValueError for an empty prompt, a negative id in
/// it, max_new_tokens < 0, max_context < 1 or options sample_logits refuses; ShapeError when the
/// model's output is not [1, V] or [1, t, V] (t the context length), and as sample_logits for its
/// logits.
std::vector<std::int64_t> generate(const NextTokenLogits& model, const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options, Generator& generator);

}  // namespace attograd::nn
