// The evidence behind one head's faithfulness verdict, gathered for the HTML report.
#include "inspect/faithfulness_evidence.hpp"

#include "core/error.hpp"
#include "core/ops_shape.hpp"

#include <fmt/format.h>

namespace attograd::inspect {

FaithfulnessEvidence faithfulness_evidence(const ExplainedModel& m, const Tensor& inputs, const HeadId& head,
                                           std::int64_t example, const std::vector<std::string>& keys,
                                           const FaithfulnessOptions& options) {
    AG_CHECK(inputs.defined() && inputs.dim() == 3, ShapeError,
             "faithfulness_evidence: inputs must be [N, T, E], got {}",
             inputs.defined() ? fmt::format("{}", inputs.shape()) : std::string("undefined"));
    AG_CHECK(example >= 0 && example < inputs.size(0), IndexError,
             "faithfulness_evidence: example {} is outside the {} inputs", example, inputs.size(0));
    FaithfulnessEvidence e{.head = head, .example = example, .keys = keys};
    const Tensor one = narrow(inputs, 0, example, 1);
    e.attention = observe_head(m, one, head).weights.front();
    AG_CHECK(keys.size() == e.attention.size(), ValueError,
             "faithfulness_evidence: {} keys given, layer '{}' head {} attends over {}", keys.size(),
             head.layer, head.head, e.attention.size());
    // the gradient measure explains the inputs' positions: only for heads whose keys they are
    if (static_cast<std::int64_t>(e.attention.size()) == inputs.size(1))
        e.gradient = gradient_importance(m, one, head).front();
    e.leave_one_out = leave_one_out(m, one, head).front();
    Generator generator(options.seed);
    for (const auto& result : permutation_test(m, inputs, head, options.permutations, generator))
        e.permutation_tvd.insert(e.permutation_tvd.end(), result.tvd.begin(), result.tvd.end());
    if (options.adversarial)
        for (const auto& result : adversarial_attention(m, inputs, head, options.adversarial_options))
            e.adversarial_jsd.push_back(result.jsd);
    e.erasure = erasure(m, inputs, head, generator);
    return e;
}

}  // namespace attograd::inspect
