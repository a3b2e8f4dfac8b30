// The inline stylesheet and script of the HTML report (inspect/html_assets.cpp).
#pragma once

#include <string_view>

namespace attograd::inspect {

/// The report's CSS, placed in a <style> element.
std::string_view report_css();

/// The report's script, placed in a <script> element after the data: it reads the JSON of
/// report_data_json from `<script id="report-data">` and draws the layer x head grid, the
/// selected map's heatmap with tooltips, the head view and the step slider. It sets
/// `data-first-render-ms` (grid and heatmap drawn) and `data-head-view-ms` on <body>
/// (performance.now() at those moments) for the benchmark.
std::string_view report_js();

}  // namespace attograd::inspect
