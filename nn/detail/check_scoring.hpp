// The checks of ScoringOptions that every attention layer's constructor runs.
#pragma once

#include "core/error.hpp"
#include "nn/scoring_options.hpp"

#include <cmath>
#include <string_view>

namespace attograd::nn::detail {

/// Checks `o` for layer `op`: window D >= 0, local-p with D >= 1 (its Gaussian has sigma = D / 2)
/// and, for layers without relative positions (`positional_allowed` false), positional None; with
/// them, rope_base finite and > 0. Throws ValueError naming `op`, the option and its value.
inline void check_scoring_options(const ScoringOptions& o, std::string_view op, bool positional_allowed) {
    AG_CHECK(o.window >= 0, ValueError, "{}: window D must be >= 0, got {}", op, o.window);
    AG_CHECK(o.local != LocalMode::Predictive || o.window >= 1, ValueError,
             "{}: local-p needs window D >= 1 (its Gaussian has sigma = D / 2), got {}", op, o.window);
    if (positional_allowed) {
        AG_CHECK(std::isfinite(o.rope_base) && o.rope_base > 0, ValueError,
                 "{}: rope_base must be finite and > 0, got {}", op, o.rope_base);
    } else {
        AG_CHECK(o.positional == Positional::None, ValueError,
                 "{}: positional {} is not supported (relative positions need MultiHeadAttention)", op,
                 to_string(o.positional));
    }
}

}  // namespace attograd::nn::detail
