// Relative positions inside attention: the choice of RoPE or ALiBi, and ALiBi's biases.
#pragma once

#include "core/tensor.hpp"

#include <string_view>
#include <vector>

namespace attograd::nn {

/// How an attention layer encodes relative positions inside its scores
/// (ScoringOptions::positional):
/// - None: no positions (the inputs may carry absolute ones, e.g. SinusoidalPositionalEncoding).
/// - Rotary (RoPE, Su et al. 2021, eq. 34): each head's projected queries and keys are rotated
///   by their positions before scoring (attograd::rotary_embedding), so q_t . k_s depends on
///   t - s. Positions count from 0 in the query and in the key sequence alike.
/// - ALiBi (Press, Smith & Lewis 2022, §3): the bias -m_h |t - s| is added to head h's score of
///   query t for key s, with the paper's geometric slopes m_h (alibi_slopes). The paper's
///   decoder uses -m_h (t - s) on the keys s <= t with a causal mask: with is_causal the two
///   are the same; without it the bias is symmetric (|t - s|), the usual choice for encoders.
enum class Positional { None, Rotary, ALiBi };

/// Parses "none", "rotary" / "rope" or "alibi". Throws ValueError listing the choices.
Positional parse_positional(std::string_view name);
/// "none", "rotary" or "alibi".
std::string_view to_string(Positional positional);

/// ALiBi's head slopes (Press et al. 2022, §3 and their reference code): for n heads, n a power
/// of 2, m_h = 2^(-8 h / n), h = 1..n (8 heads: 1/2, 1/4, ..., 1/256); otherwise, with p the
/// largest power of 2 below n, the p slopes of p heads followed by the first n - p of the odd-
/// indexed slopes (1st, 3rd, ...) of 2p heads. Throws ValueError when heads < 1.
std::vector<double> alibi_slopes(std::int64_t heads);

/// ALiBi's bias over every query and key: [1, h, Tq, Tk] of `dtype`, entry -m_h |t - s|, added
/// to the scores [B, h, Tq, Tk] (no gradient). Throws ValueError (heads < 1, negative lengths),
/// DTypeError (not float).
Tensor alibi_bias(std::int64_t heads, std::int64_t tq, std::int64_t tk, DType dtype);

/// ALiBi's bias over local attention's band only (never [Tq, Tk]): window_start int64
/// [B * h, Tq] (head sequence n = b * h + i) -> [B * h, Tq, width] of `dtype`, entry
/// -m_i |t - s| for the key s = window_start[n, t] + j in slot j (slots outside the keys are
/// masked by the band mask anyway). Throws ShapeError (window_start not [B * h, Tq] with
/// h dividing its rows), DTypeError, ValueError (heads or width < 1).
Tensor alibi_band(const Tensor& window_start, std::int64_t width, std::int64_t heads, DType dtype);

}  // namespace attograd::nn
