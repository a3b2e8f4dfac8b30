// The induction task (Olsson et al. 2022): random tokens with a repeated segment, next-token
// prediction, which a two-layer attention-only model solves with an induction head.
#pragma once

#include "data/task.hpp"

#include <cstdint>
#include <memory>

namespace attograd::data {

/// Options of the induction task.
struct InductionOptions {
    std::int64_t vocab_size = 26;   ///< distinct tokens, named a, b, c, ... (2 to 26)
    std::int64_t length = 24;       ///< tokens per sequence (the model reads length - 1 of them)
    std::int64_t min_segment = 6;   ///< shortest repeated segment (>= 2)
    std::int64_t max_segment = 12;  ///< longest repeated segment (2 * max_segment <= length)
};

/// induction: a sequence x of `length` tokens drawn uniformly (with replacement) from the first
/// vocab_size letters, made of a random prefix of length - 2L tokens, a random segment s of L
/// tokens (L uniform in [min_segment, max_segment]) and s again:
///   x = p_1 .. p_P  s_1 .. s_L  s_1 .. s_L.
/// An example is next-token prediction: source x_0 .. x_{n-2}, target x_1 .. x_{n-1} (same
/// length, token accuracy). Only the second copy of s is predictable, and only in context: after
/// s_i comes s_{i+1}, the token that followed s_i's earlier occurrence, which an induction head
/// finds by prefix matching (Olsson et al. 2022, §2); L varies, so no fixed positional offset
/// finds it. A model that has learned it reaches a loss of about (P + L) / (n - 1) * ln V per
/// token (the unpredictable targets x_1 .. x_{P+L}) instead of ln V. No alignment (inspect::induction_scores
/// measures it per head) and no solve(). Throws ValueError naming the option when the options are
/// out of range.
std::unique_ptr<Task> make_induction_task(const InductionOptions& options = {});

}  // namespace attograd::data
