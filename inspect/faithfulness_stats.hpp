// The statistics of the faithfulness measures: distances between distributions, Kendall's tau-b,
// quartiles.
#pragma once

#include <optional>
#include <vector>

namespace attograd::inspect {

/// Total variation distance TVD(p, q) = 1/2 sum_i |p_i - q_i| (Jain & Wallace 2019 §4.1, eq. 1),
/// in [0, 1] for distributions. Throws ShapeError when the lengths differ.
double total_variation(const std::vector<double>& p, const std::vector<double>& q);

/// Jensen-Shannon divergence JSD(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, natural
/// logarithm (0 log 0 = 0), in [0, ln 2] (Jain & Wallace 2019 §4.2; Serrano & Smith 2019 §3).
/// Throws ShapeError when the lengths differ.
double jensen_shannon(const std::vector<double>& p, const std::vector<double>& q);

/// Kendall's tau-b (Kendall 1945) of two equally long series, ties handled:
/// tau_b = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2)), n_0 = n (n - 1) / 2, n_c / n_d the
/// concordant / discordant pairs, n_1 / n_2 the pairs tied in a / in b (Jain & Wallace 2019 §4.1
/// correlate attention with gradient and leave-one-out importance by it). O(n^2). nullopt when
/// either series is constant or shorter than 2. Throws ShapeError when the lengths differ.
std::optional<double> kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b);

/// The q-quantile (q in [0, 1]) of `values` by linear interpolation between order statistics
/// (numpy's default, "linear"): x_(floor(h)) + (h - floor(h)) (x_(floor(h)+1) - x_(floor(h))),
/// h = (n - 1) q. Throws ValueError when `values` is empty or q is outside [0, 1].
double quantile(std::vector<double> values, double q);

}  // namespace attograd::inspect
