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

/// induction's registry entry (default options): the two-layer attention-only causal model of
/// Olsson et al. 2022 (`lm`, 2 layers of 4 heads, width 64, no feed-forward) trained with Adam at
/// a constant lr 3e-3 on batches of 32, at most 2000 steps; target 35 % held-out next-token
/// accuracy. Only the repeat is predictable: L - 1 of the n - 1 targets, the rest at chance 1 / V,
/// so a perfect model scores about 37 % (8 / 23 + 15 / 23 / 26 at the mean L = 9), and one without
/// an induction head about 12 % (the in-context unigram plateau).
TaskEntry induction_task_entry();

}  // namespace attograd::data
