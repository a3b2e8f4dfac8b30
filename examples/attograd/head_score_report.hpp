// What `inspect` says about a language model's heads: each self-attention head's previous-token
// and induction score over held-out examples (inspect/head_scores.hpp), labelled.
#pragma once

#include "config.hpp"
#include "models.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attograd::cli {

/// One self-attention head's scores, each the mean over the examples measured.
struct HeadScore {
    std::int64_t layer = 0;       ///< index in Model::attention_layers()
    std::int64_t head = 0;        ///< head within the layer
    double previous_token = 0.0;  ///< inspect::previous_token_scores
    double induction = 0.0;       ///< inspect::induction_scores (prefix matching)
};

/// A score at or above which a head is labelled by it: the head puts most of its attention
/// there (a uniform causal head scores about 0.1 on induction's sequences).
inline constexpr double head_label_threshold = 0.5;

/// The scores of every self-attention head of `model` over the first `count` held-out examples
/// of `task` (fewer when it has fewer), from their teacher-forced forward pass. Throws
/// ValueError when an example has a token outside `vocab`.
std::vector<HeadScore> held_out_head_scores(const Model& model, const Vocabulary& vocab, const Task& task,
                                            std::int64_t count);

/// "layer 1 head 0: previous-token 0.03, induction 0.87 (induction head)": the label names each
/// score of at least head_label_threshold.
std::string head_score_line(const HeadScore& score);

}  // namespace attograd::cli
