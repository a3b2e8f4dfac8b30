// The evidence behind one head's faithfulness verdict, gathered for the HTML report.
#include "inspect/faithfulness_evidence.hpp"

#include "core/error.hpp"
#include "core/ops_shape.hpp"

#include <fmt/format.h>

#include <algorithm>

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
    const HeadObservation seen = observe_head(m, one, head);
    const std::vector<bool>& allowed = seen.allowed.front();
    const auto own = static_cast<std::size_t>(std::count(allowed.begin(), allowed.end(), true));
    AG_CHECK(keys.size() == allowed.size() || keys.size() == own, ValueError,
             "faithfulness_evidence: {} keys given, layer '{}' head {} attends over {} ({} of them the "
             "example's own, not masked)",
             keys.size(), head.layer, head.head, allowed.size(), own);
    // the gradient measure explains the inputs' positions: only for heads whose keys they are
    std::vector<double> gradient;
    if (std::ssize(allowed) == inputs.size(1)) gradient = gradient_importance(m, one, head).front();
    const std::vector<double> loo = leave_one_out(m, one, head).front();
    // masked keys (padding) carry no weight and no measure: only the example's own keys are kept
    if (keys.size() == allowed.size()) e.keys.clear();
    for (std::size_t k = 0; k < allowed.size(); ++k) {
        if (!allowed[k]) continue;
        if (keys.size() == allowed.size()) e.keys.push_back(keys[k]);
        e.attention.push_back(seen.weights.front()[k]);
        if (!gradient.empty()) e.gradient.push_back(gradient[k]);
        e.leave_one_out.push_back(loo[k]);
    }
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
