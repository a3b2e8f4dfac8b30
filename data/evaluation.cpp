// The exact-match count of decoded outputs against the examples' targets.
#include "data/evaluation.hpp"

#include "core/error.hpp"

namespace attograd::data {

std::int64_t exact_matches(const std::vector<std::vector<std::int64_t>>& outputs,
                           const std::vector<Example>& examples, const Vocabulary& vocab) {
    AG_CHECK(outputs.size() == examples.size(), ValueError,
             "exact_matches: {} outputs for {} examples; there must be one per example", outputs.size(),
             examples.size());
    std::int64_t right = 0;
    for (std::size_t i = 0; i < outputs.size(); ++i) right += vocab.decode(outputs[i]) == examples[i].target;
    return right;
}

}  // namespace attograd::data
