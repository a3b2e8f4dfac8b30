// Sampling the next token from logits: temperature, top-k and top-p (nucleus), with Hugging Face
// transformers' semantics, from an explicit generator.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

#include <cstdint>
#include <optional>

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

}  // namespace attograd::nn
