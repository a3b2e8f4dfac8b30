// SVG drawing of one attention map: a heatmap with token labels, colour scale and legend.
#pragma once

#include "inspect/attention_map.hpp"

#include <string>

namespace attograd::inspect {

/// `text` with XML's five special characters escaped (for SVG and HTML).
std::string xml_escape(const std::string& text);

/// What render_svg draws besides the cells.
struct SvgOptions {
    /// What the red outlines mean, shown under the map when it has right keys, e.g.
    /// "anti-diagonal: target t attends source n-1-t" (default: "right alignment").
    std::string alignment_legend = "right alignment";
    std::int64_t cell_size = 24;  ///< pixels per cell (>= 2)
};

/// A standalone SVG element of one map (no XML prolog; prepend one for a file): cells coloured
/// by weight on the viridis scale with a tooltip each ("query -> key: weight"), token labels
/// on both axes, the right keys (map.right) outlined in red, the full title and alignment
/// share on top (the drawing is as wide as its title), a colour scale bar 0..1 and, when the
/// map has right keys, a legend saying what the outlines mean. Throws as check_map, and
/// ValueError when cell_size < 2.
std::string render_svg(const AttentionMap& map, const SvgOptions& options = {});

}  // namespace attograd::inspect
