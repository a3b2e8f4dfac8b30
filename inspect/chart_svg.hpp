// Line charts as inline SVG (one shared y axis per chart) and the alignment-share-against-step
// chart of a report's attention snapshots.
#pragma once

#include "inspect/report.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace attograd::inspect {

/// "Nice" tick positions covering [lo, hi]: about `count` multiples of 1, 2 or 5 x 10^k
/// (Heckbert, "Nice numbers for graph labels", Graphics Gems 1990), first <= lo, last >= hi.
/// lo == hi gives the single tick lo. Throws ValueError when lo or hi is not finite, lo > hi
/// or count is outside [1, 1000].
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

/// One chart as an `<svg class="chart">` element: a titled plot area, x and y axes with tick
/// labels and axis labels, and one polyline per series on ONE y scale shared by every series
/// ([chart.y_min, chart.y_max] when given, else the range of all finite values, padded when
/// flat). Points with a non-finite x or y are gaps; a point with no finite neighbour is drawn
/// as a dot, so a series of one point shows that point. The legend lies to the right of the
/// plot, one series per line, so labels overlap neither each other nor the curves. A chart
/// with no finite point says "no data" instead of drawing axes. The element carries
/// `data-x-min`, `data-x-max`, `data-plot-left`, `data-plot-right`, `data-plot-top` and
/// `data-plot-bottom` so a script can place a marker at an x value.
/// Throws ShapeError when a series' x and y sizes differ (naming the chart and the series).
std::string chart_svg(const Chart& chart);

/// Each head's alignment share against step for probe `probe` of `snapshots`: one series per
/// map title that has an alignment_share in some snapshot (in the order first seen),
/// x = AttentionSnapshot::step, y = the share (a gap where a snapshot lacks it), y on [0, 1].
/// Throws IndexError when no snapshot has a probe `probe`.
Chart alignment_share_chart(const std::vector<AttentionSnapshot>& snapshots, std::size_t probe);

}  // namespace attograd::inspect
