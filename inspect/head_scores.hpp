// Scores that label attention heads by what they do: previous-token heads and induction
// (prefix-matching) heads (Olsson et al. 2022).
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd::inspect {

/// Per-head previous-token score (Olsson et al. 2022, "In-context Learning and Induction
/// Heads", the previous-token heads that induction heads compose with): the mean attention
/// from each position to the one before it,
///   score[h] = mean over b and t in [1, T) of A[b, h, t, t-1],
/// over the queries t where neither t nor t-1 is padding. 1 for a head that always attends to
/// the previous token; a uniform causal head (row t spreads 1/(t+1) over keys 0..t) scores the
/// mean of 1/(t+1) over t = 1..T-1.
///
/// attention: a layer's weights [B, h, T, T], or [B, T, T] read as one head, float32 or float64
/// (as nn::AttentionRecorder records self-attention). key_padding_mask: bool [B, T], true at
/// padding (undefined: none). Returns h scores; a score is 0 when no query counts (T = 1, or
/// everything padded). Throws DTypeError for a non-float attention or a non-bool mask;
/// ShapeError when attention is not rank 3 or 4, not square, has no heads, or the mask is not
/// [B, T] (naming both shapes).
std::vector<double> previous_token_scores(const Tensor& attention, const Tensor& key_padding_mask = {});

/// Per-head induction score, Olsson et al.'s prefix-matching score: for a query t, the
/// induction targets are the positions right after each earlier occurrence of the query's
/// token, K(t) = { s + 1 : s + 1 < t, tokens[b, s] == tokens[b, t] } (a target equal to t itself,
/// when the token repeats at t-1, is not counted: that is attention to itself). Then
///   score[h] = mean over the (b, t) with K(t) non-empty of sum_{k in K(t)} A[b, h, t, k].
/// On a random sequence followed by a copy of itself (Olsson et al.'s test), a query in the
/// second copy has the token after its first occurrence as target: an induction head, which
/// attends there to predict the next token, scores near 1; a previous-token or uniform head near 0
/// (a uniform causal head scores the mean of |K(t)| / (t+1)). Padded queries and keys (where
/// key_padding_mask is true) are left out.
///
/// attention: [B, h, T, T] or [B, T, T] as for previous_token_scores; tokens: int64 [B, T], the
/// ids of the sequence the attention was computed on. Returns h scores; 0 when no query has a
/// target. Throws as previous_token_scores, DTypeError when tokens are not int64 and ShapeError
/// when they are not [B, T].
std::vector<double> induction_scores(const Tensor& attention, const Tensor& tokens,
                                     const Tensor& key_padding_mask = {});

}  // namespace attograd::inspect
