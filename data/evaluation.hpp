// Judging decoded outputs against the examples' targets: the exact-match count.
#pragma once

#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <cstdint>
#include <vector>

namespace attograd::data {

/// How many outputs equal their example's target exactly (the Sequence metric): output i, as
/// vocab.decode reads it (up to its first `<eos>`, without `<pad>` and `<bos>`), against
/// examples[i].target. `outputs` are id sequences such as nn::best_tokens of a beam search.
/// Throws ValueError when the counts differ, IndexError for an id outside the vocabulary.
std::int64_t exact_matches(const std::vector<std::vector<std::int64_t>>& outputs,
                           const std::vector<Example>& examples, const Vocabulary& vocab);

}  // namespace attograd::data
