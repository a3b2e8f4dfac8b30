// The evidence behind one head's faithfulness verdict, gathered for the HTML report: its
// importances on one example and its permutation, adversarial and erasure results over a data set.
#pragma once

#include "inspect/faithfulness_table.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attograd::inspect {

/// One head's evidence (every measure as inspect/faithfulness.hpp defines it).
struct FaithfulnessEvidence {
    HeadId head{};                    ///< the head the evidence is about
    std::int64_t example = 0;         ///< the example the importances are of (index into the inputs)
    std::vector<std::string> keys{};  ///< that example's own (not masked) keys as tokens [K]
    /// that example's importance of each own key [K]: the head's weight, gradient_importance
    /// (empty when the head's keys are not the inputs' positions), leave_one_out (NaN where
    /// undefined)
    /// @{
    std::vector<double> attention{}, gradient{}, leave_one_out{};
    /// @}
    std::vector<double> permutation_tvd{};  ///< every permutation's TVD, over every example
    std::vector<double> adversarial_jsd{};  ///< the epsilon-max JSD per example (empty when not run)
    std::vector<ErasureResult> erasure{};   ///< per example
};

/// The report's faithfulness section: the per-head table and, optionally, one head's evidence.
struct FaithfulnessSection {
    FaithfulnessTable table{};                       ///< every head, with its verdict
    std::optional<FaithfulnessEvidence> evidence{};  ///< the head shown in detail
};

/// Gathers `head`'s evidence over `inputs` [N, T, E]: importances on example `example` (whose
/// keys are `keys`: all Tk of them, or only the K its row does not mask), options.permutations
/// permutations and, when options.adversarial, the adversarial search of every example, and
/// erasure; random draws from options.seed. The evidence keeps the K keys the row does not mask
/// (padding has no weight and no measure). Throws IndexError when `example` is outside [0, N),
/// ValueError when `keys` is neither Tk nor K long, and the measures' errors.
FaithfulnessEvidence faithfulness_evidence(const ExplainedModel& m, const Tensor& inputs, const HeadId& head,
                                           std::int64_t example, const std::vector<std::string>& keys,
                                           const FaithfulnessOptions& options = {});

}  // namespace attograd::inspect
