// The interactive, self-contained HTML report of inspected attention: the page around the
// embedded data (report_data.cpp), the charts (chart_svg.cpp) and the stylesheet and script
// (inspect/report/).
#include "inspect/render_html.hpp"

#include "data/text.hpp"
#include "inspect/chart_svg.hpp"
#include "inspect/detail/report_assets.hpp"
#include "inspect/faithfulness_html.hpp"
#include "inspect/render_svg.hpp"
#include "inspect/report_data.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::inspect {
namespace {

// Text from the run (paths, settings, notes) as the page shows it: control, bidirectional and
// invisible characters escaped as every other display escapes them, then made safe for HTML.
std::string shown(std::string_view text) { return xml_escape(data::escape_control(text)); }

std::string curves_html(const Report& report) {
    std::string out = "<section id=\"curves\">\n<h2>Training curves</h2>\n";
    if (report.charts_error) {
        out += "<p class=\"error\" id=\"charts-error\">the training curves could not be drawn: " +
               shown(*report.charts_error) + "</p>\n";
    } else if (report.charts.empty()) {
        out += "<p class=\"empty\">no training curves in this report</p>\n";
    } else {
        out += "<div class=\"charts\">\n";
        for (const auto& chart : report.charts) out += chart_svg(chart);
        out += "</div>\n";
    }
    return out + "</section>\n";
}

std::string config_html(const Report& report) {
    if (report.config.empty()) return "";
    // Collapsed: the settings are looked up now and then, the attention is what the page is for.
    std::string out = fmt::format(
        "<details id=\"config\">\n<summary><h2>Configuration</h2> ({} settings)</summary>\n"
        "<table class=\"config\">\n",
        report.config.size());
    for (const auto& [key, value] : report.config)
        out += fmt::format("<tr><td>{}</td><td><code>{}</code></td></tr>\n", shown(key), shown(value));
    return out + "</table>\n</details>\n";
}

bool any_share(const InspectedExample& example) {
    const auto has = [](const AttentionMap& m) { return m.alignment_share.has_value(); };
    return std::any_of(example.maps.begin(), example.maps.end(), has) ||
           (example.rollout && has(*example.rollout)) || (example.flow && has(*example.flow));
}

// Whether some map of an example or probe has an alignment share.
bool any_share(const Report& report) {
    for (const auto& example : report.examples)
        if (any_share(example)) return true;
    for (const auto& snapshot : report.snapshots)
        for (const auto& probe : snapshot.probes)
            if (any_share(probe)) return true;
    return false;
}

std::string attention_html(const Report& report) {
    std::string out = "<section id=\"attention\">\n<h2>Attention</h2>\n";
    if (report.examples.empty() && report.snapshots.empty()) {
        return out +
               "<p class=\"empty\" id=\"no-examples\">This report has no examples: no input was "
               "inspected, so there is no attention to show.</p>\n</section>\n";
    }
    out += R"(<div class="controls">
<label>input <select id="source"></select></label>
<span id="stepbox" hidden><label>training step <input type="range" id="step" min="0" max="0" value="0"></label>
<output id="steplabel"></output> <button id="play" type="button">play</button></span>
</div>
)";
    if (!report.snapshots.empty()) {
        out +=
            "<p class=\"hint\">Watch attention learn: choose a \u201cprobe \u2026 over training\u201d input, "
            "then move the step slider (or press play) to replay how each head's attention formed.</p>\n";
    }
    if (!any_share(report)) {  // said once, in place of a share per map and a chart per probe
        out +=
            report.alignment_legend.empty()
                ? "<p class=\"hint\" id=\"no-alignment\">No right alignment is known for these inputs (the "
                  "task defines none): no cell is outlined and no alignment share is shown.</p>\n"
                : "<p class=\"hint\" id=\"no-alignment\">No cell is outlined and no alignment share is "
                  "shown: the task gives no right key for each input, only a description (" +
                      shown(report.alignment_legend) + ").</p>\n";
    }
    out += R"(<div class="tokens" id="tokens"></div>
<p class="empty" id="no-maps" hidden>no attention maps were recorded for this input</p>
<div id="views">
<div class="views">
<div><h3>all layers and heads</h3><p class="hint">click a map to select it<span id="mean-hint" hidden>; “mean” is the layer's heads averaged</span></p>
<p class="hint" id="thumb-legend" hidden>the number under a map is its alignment share: the weight on the right key (outlined cells) averaged over the target's tokens, from 0 (none) to 1 (all attention on it); a target token the prediction did not reach counts 0</p>
<div id="grid"></div></div>
<div><h3 id="map-title"></h3><div id="map-info"></div><canvas id="heatmap" width="1" height="1"></canvas>
<div class="legend">
<div class="scale"><span id="scale-lo">0</span> <canvas id="scale-bar" width="200" height="12"></canvas> <span id="scale-hi">1</span> <span id="scale-note">(viridis; rows: queries, columns: keys)</span></div>
<p class="hint" id="symbol-legend" hidden></p>
<div id="outline-legend" hidden><label><input type="checkbox" id="outline-toggle" checked> <span class="outline-swatch"></span><span id="outline-text"></span></label></div>
<div id="precision"></div>
</div></div>
</div>
)";
    // One alignment chart per probe input with a share at some step, shown with its probe: a
    // chart without a curve says nothing.
    for (std::size_t p = 0;; ++p) {
        bool any = false;
        for (const auto& snapshot : report.snapshots) any = any || snapshot.probes.size() > p;
        if (!any) break;
        const Chart chart = alignment_share_chart(report.snapshots, p);
        if (chart.series.empty()) continue;
        out += fmt::format("<div class=\"align-chart\" data-probe=\"{}\" hidden>{}</div>\n", p,
                           chart_svg(chart));
    }
    out += R"(<h3>head view</h3>
<p class="hint">queries left, keys right; a line's opacity is its weight (weights below 0.01 not drawn, at most the 20000 strongest lines). Hover a token to highlight its lines and show its weights.</p>
<div id="headview"></div>
</div>
<div id="tooltip" hidden></div>
)";
    return out + "</section>\n";
}

}  // namespace

std::string render_html(const Report& report) {
    // Serialise (and so validate) the data first: bad input throws before any page is built.
    const std::string data =
        report.examples.empty() && report.snapshots.empty() ? "" : report_data_json(report);
    const std::string title = shown(report.title.empty() ? "attention report" : report.title);
    std::string out = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{0}</title>\n"
        "<style>{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
        title, detail::report_css());
    for (const auto& note : report.notes) out += "<p class=\"note\">" + shown(note) + "</p>\n";
    // The attention first: the page opens on the answer, the curves and settings follow.
    out += attention_html(report);
    if (report.faithfulness) out += faithfulness_html(*report.faithfulness);
    out += curves_html(report);
    out += config_html(report);
    if (!data.empty()) {
        out += "<script type=\"application/json\" id=\"report-data\">" + data + "</script>\n";
        out += fmt::format("<script>{}</script>\n", detail::report_js());
    }
    return out + "</body>\n</html>\n";
}

}  // namespace attograd::inspect
