// Accuracies and shares as text that never reads as perfect (or as none) when they are not.
#include "inspect/fraction_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attograd::inspect {

std::string fraction_text(double fraction, int decimals, double scale) {
    decimals = std::clamp(decimals, 0, 17);
    const double unit = std::pow(10.0, decimals), value = fraction * scale;
    double shown = std::round(value * unit) / unit;
    if (fraction < 1.0 && shown >= scale) shown = std::floor(value * unit) / unit;
    if (fraction > 0.0 && shown <= 0.0) shown = std::ceil(value * unit) / unit;
    return fmt::format("{:.{}f}", shown, decimals);
}

}  // namespace attograd::inspect
