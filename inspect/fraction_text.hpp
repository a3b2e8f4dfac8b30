// Accuracies and shares as text that never reads as perfect (or as none) when they are not.
#pragma once

#include <string>

namespace attograd::inspect {

/// `fraction` (in [0, 1]) times `scale` (100 for a percentage) with `decimals` (0-17) decimals,
/// rounded to nearest except that a fraction below 1 never shows as the whole scale and one above
/// 0 never as 0: an accuracy of 0.9997 is "99.9" per cent, not "100.0"; an alignment share of
/// 0.9999 is "0.999", not "1.000". Values outside [0, 1] and NaN are shown rounded as they are.
std::string fraction_text(double fraction, int decimals, double scale = 1.0);

}  // namespace attograd::inspect
