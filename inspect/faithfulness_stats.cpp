// The statistics of the faithfulness measures: distances between distributions, Kendall's tau-b,
// quartiles.
#include "inspect/faithfulness_stats.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace attograd::inspect {

namespace {

void check_lengths(const std::vector<double>& a, const std::vector<double>& b, const char* op) {
    AG_CHECK(a.size() == b.size(), ShapeError, "{}: the series have different lengths, {} and {}", op,
             a.size(), b.size());
}

// p log(p / m), 0 when p = 0.
double kl_term(double p, double m) { return p > 0 ? p * std::log(p / m) : 0.0; }

int sign(double x) { return (x > 0) - (x < 0); }

}  // namespace

double total_variation(const std::vector<double>& p, const std::vector<double>& q) {
    check_lengths(p, q, "total_variation");
    double total = 0;
    for (std::size_t i = 0; i < p.size(); ++i) total += std::abs(p[i] - q[i]);
    return total / 2;
}

double jensen_shannon(const std::vector<double>& p, const std::vector<double>& q) {
    check_lengths(p, q, "jensen_shannon");
    double total = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const double m = (p[i] + q[i]) / 2;
        total += kl_term(p[i], m) + kl_term(q[i], m);
    }
    return std::max(0.0, total / 2);
}

std::optional<double> kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
    check_lengths(a, b, "kendall_tau_b");
    const std::size_t n = a.size();
    double concordant = 0, discordant = 0, tied_a = 0, tied_b = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
            const int s = sign(a[i] - a[j]) * sign(b[i] - b[j]);
            concordant += s > 0;
            discordant += s < 0;
            tied_a += a[i] == a[j];
            tied_b += b[i] == b[j];
        }
    const double pairs = static_cast<double>(n) * static_cast<double>(n > 0 ? n - 1 : 0) / 2;
    const double denominator = std::sqrt((pairs - tied_a) * (pairs - tied_b));
    if (n < 2 || denominator == 0) return std::nullopt;
    return (concordant - discordant) / denominator;
}

double quantile(std::vector<double> values, double q) {
    AG_CHECK(!values.empty(), ValueError, "quantile: no values");
    AG_CHECK(q >= 0 && q <= 1, ValueError, "quantile: q must be in [0, 1], got {}", q);
    std::sort(values.begin(), values.end());
    const double h = static_cast<double>(values.size() - 1) * q;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace attograd::inspect
