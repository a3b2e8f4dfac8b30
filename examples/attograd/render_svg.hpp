// SVG drawings: one attention head as a heatmap, and a training curve.
#pragma once

#include "attention_map.hpp"

#include <string>
#include <vector>

namespace attograd::cli {

/// `text` with XML's five special characters escaped.
std::string xml_escape(const std::string& text);

/// A standalone SVG document of one head: cells coloured by weight, token labels on both
/// axes, the right keys outlined in red, the title and alignment share on top.
std::string render_svg(const AttentionMap& map);

/// One series of a line chart.
struct Series {
    std::string name;
    std::string colour;  ///< CSS colour
    std::vector<double> x, y;
};

/// A line chart as an SVG element (no XML prolog, for embedding in HTML); each series is
/// scaled to its own [min, max] and labelled with it. `title` goes on top.
std::string render_line_chart(const std::string& title, const std::vector<Series>& series);

}  // namespace attograd::cli
