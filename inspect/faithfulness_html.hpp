// The HTML report's faithfulness section: the per-head table with verdicts and their rules, and
// one head's evidence (importances side by side, permutation and adversarial histograms, erasure
// curves).
#pragma once

#include "inspect/report.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attograd::inspect {

/// A histogram of `values` as a chart: `bins` equal bins over [0, the largest finite value] (a
/// single bin [0, 1] when every value is 0 or none is finite), drawn as one stepped outline with
/// y = the count per bin. Non-finite values are left out. Throws ValueError when bins < 1.
Chart histogram_chart(std::string title, std::string x_label, const std::vector<double>& values,
                      std::int64_t bins = 20);

/// Erasure curves (Serrano & Smith 2019 §4): for the rankings by attention, gradient, attention x
/// gradient and at random, the share of examples whose decision has flipped (y, on [0, 1])
/// against the fraction of keys removed top first (x, 0 to 1 in steps of 0.05).
Chart erasure_chart(const std::vector<ErasureResult>& erasure);

/// The section as a `<section id="faithfulness">` element: the head table (#faith-heads, one row
/// per head: faithfulness_columns() and the verdict), the verdicts' rules (#faith-rules,
/// verdict_rules with the table's epsilon) and, with evidence, the head's importances side by
/// side (#faith-importance: one row per key, each measure's bar scaled to its largest value,
/// "-" where undefined), the permutation and adversarial histograms and the erasure curves.
std::string faithfulness_html(const FaithfulnessSection& section);

}  // namespace attograd::inspect
