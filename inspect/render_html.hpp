// The interactive, self-contained HTML report of inspected attention.
#pragma once

#include "inspect/report.hpp"

#include <string>

namespace attograd::inspect {

/// One HTML document, self-contained (inline CSS, JavaScript and data; no network, opens from
/// file://), showing `report`:
/// - the title, notes, training curves (chart_svg: one shared y axis per chart) or
///   `charts_error` in their place, and the configuration table;
/// - a selector over the examples and, when `snapshots` is non-empty, over each probe input
///   replayed through training with a step slider and, when one of its maps has an alignment
///   share, its alignment share against step (no map with a share anywhere: one line says no
///   right alignment is known);
/// - for the chosen input, a layer x head grid of thumbnails (click one to select it; the
///   derived saliency / rollout / flow maps form a last row), the selected map as a large
///   canvas heatmap (viridis 0..1 as weight_colour, token labels, "query -> key: weight"
///   tooltips, the right alignment outlined and explained by `alignment_legend`), and a head
///   view (queries and keys in two columns, a line per weight with that opacity; hovering a
///   token highlights its lines and shows its weights); the input's tokens, its expected output
///   and its prediction (named by `decoding`; a probe's is teacher-forced at that step; an empty
///   one is shown as empty), and what the maps' rows were fed;
/// - when `faithfulness` is set, its section (faithfulness_html): the per-head table with
///   verdicts and their rules, and one head's evidence.
/// Weights are embedded quantised (report_data_json: 16 bits per weight up to 16384 cells per
/// map, 8 bits beyond, the bound shown in the legend): T = 512 with 16 heads is about 5.7 MB.
/// A report without examples or snapshots renders a page that says so.
/// Throws ShapeError when a map's weights are not rows x cols or a chart series' x and y sizes
/// differ, ValueError on a non-finite weight or a bad chart y range, IndexError on a right
/// column outside the map (each message names the map or chart).
std::string render_html(const Report& report);

}  // namespace attograd::inspect
