// The data an HTML report's script draws: every map of every example and snapshot, quantised
// and base64-encoded, serialised as JSON.
#pragma once

#include "inspect/report.hpp"

#include <string>

namespace attograd::inspect {

/// A map's weights stored compactly: `bits` 8 (maps of more than 16384 cells) or 16 per value,
/// linear between the map's smallest and largest weight. Value i decodes as
/// `lo + code_i * (hi - lo) / (2^bits - 1)`, within `max_error` = (hi - lo) / (2 (2^bits - 1))
/// of the weight (0.002 for 8-bit attention weights, whose range is at most [0, 1]).
struct QuantisedWeights {
    int bits = 8;  ///< bits per code: 8 or 16
    /// the decoding range [lo, hi] and the largest decoding error (see above)
    /// @{
    double lo = 0.0, hi = 0.0, max_error = 0.0;
    /// @}
    std::string base64;  ///< the codes, little-endian for 16 bits, RFC 4648 base64
};

/// Quantises `map.weights` as above. Calls check_map (throws ShapeError / ValueError).
QuantisedWeights quantise_weights(const AttentionMap& map);

/// The JSON document the page's script reads: `{"legend", "open", "decoding", "example_maps",
/// "sources": [...]}`
/// with one source per example (one frame; labelled "example N: SOURCE → DECODING: PREDICTION"
/// and, when the target is known, ✓ or ✗ (expected TARGET)) and one per snapshot probe (one
/// frame per snapshot, `step` set); `open` is Report::open_module, `decoding` and `example_maps` Report's.
/// Each frame holds what belongs to that input at that step: its tokens (source, target, prediction: display
/// labels) and its maps (title, module, layer, head, kind, display labels of queries and keys, quantised
/// weights, right columns, alignment share, saliency correlation): per layer of two or more heads first the
/// heads' mean (kind "mean", titled "MODULE mean of H heads", with the heads' right columns and the mean of
/// their alignment shares when they agree), then the heads (kind "head"), then the derived maps (kinds
/// "saliency", "rollout", "flow"). Every '<' is written as \u003c, so the text can sit inside a <script>
/// element. Validates every map as render_html does (throws ShapeError, ValueError, IndexError)
/// and the snapshots' probes (check_probe_inputs, ValueError).
std::string report_data_json(const Report& report);

}  // namespace attograd::inspect
