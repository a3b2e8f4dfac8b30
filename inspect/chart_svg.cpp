// Line charts as inline SVG (one shared y axis per chart) and the alignment-share-against-step
// chart of a report's attention snapshots.
#include "inspect/chart_svg.hpp"

#include "core/error.hpp"
#include "inspect/render_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace attograd::inspect {

namespace {

// Pixel layout of a chart: plot area [left, left + plot_width] x [top, top + plot_height].
constexpr int left = 64, top = 34, plot_width = 480, plot_height = 200, bottom = 44;
constexpr int legend_gap = 16, legend_line = 18, char_width = 7;

// Tableau's ten colours, for series that name none.
constexpr std::array<const char*, 10> palette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Range {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    bool empty() const { return lo > hi; }
    void add(double v) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
};

bool finite_point(const Series& s, std::size_t i) { return std::isfinite(s.x[i]) && std::isfinite(s.y[i]); }

std::string tick_label(double v) { return fmt::format("{:g}", v); }

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int count) {
    AG_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && count >= 1 && count <= 1000, ValueError,
             "nice_ticks: need finite lo <= hi and count in [1, 1000], got [{}, {}] and {}", lo, hi, count);
    const double range = hi - lo;
    if (range == 0.0) return {lo};
    if (!std::isfinite(range)) return {lo, hi};
    const double raw = range / count;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / magnitude;
    const double step = (r < 1.5 ? 1.0 : r < 3.0 ? 2.0 : r < 7.0 ? 5.0 : 10.0) * magnitude;
    const double first = std::floor(lo / step), last = std::ceil(hi / step);
    std::vector<double> ticks;
    for (double k = first; k <= last; k += 1.0) {
        const double v = k * step;
        ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);  // no "-0" or "1e-17" at zero
    }
    return ticks;
}

std::string chart_svg(const Chart& chart) {
    Range xs, ys;
    std::size_t longest_name = 0;
    for (const auto& s : chart.series) {
        AG_CHECK(s.x.size() == s.y.size(), ShapeError,
                 "chart_svg: chart '{}' series '{}' has {} x and {} y values", chart.title, s.name,
                 s.x.size(), s.y.size());
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!finite_point(s, i)) continue;
            xs.add(s.x[i]);
            ys.add(s.y[i]);
        }
        longest_name = std::max(longest_name, s.name.size());
    }
    if (chart.y_min && chart.y_max) {
        AG_CHECK(std::isfinite(*chart.y_min) && std::isfinite(*chart.y_max) && *chart.y_min < *chart.y_max,
                 ValueError, "chart_svg: chart '{}' has y range [{}, {}] (finite, min < max expected)",
                 chart.title, *chart.y_min, *chart.y_max);
    }
    const int legend_width =
        chart.series.empty() ? 0 : legend_gap + 28 + char_width * static_cast<int>(longest_name);
    const int width = left + plot_width + legend_width + 12;
    const int height =
        std::max(top + plot_height + bottom, top + legend_line * static_cast<int>(chart.series.size()) + 8);
    const std::string title = xml_escape(chart.title);
    if (xs.empty()) {
        return fmt::format(
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"80\" "
            "font-family=\"sans-serif\" font-size=\"12\"><title>{1}</title>"
            "<text x=\"8\" y=\"20\" font-size=\"14\">{1}</text>"
            "<text class=\"no-data\" x=\"8\" y=\"50\" fill=\"#666\">no data</text></svg>\n",
            left + plot_width, title);
    }

    // x: the data's range (a single x sits in the middle); y: nice ticks around the data or the
    // chart's fixed range. One y scale for every series.
    double x_lo = xs.lo, x_hi = xs.hi;
    std::vector<double> x_ticks = nice_ticks(x_lo, x_hi);
    if (x_lo == x_hi) {
        x_lo -= 1.0;
        x_hi += 1.0;
    }
    double y_lo = chart.y_min.value_or(ys.lo), y_hi = chart.y_max.value_or(ys.hi);
    if (y_lo >= y_hi) {  // flat data (or a one-sided fixed bound below the data)
        const double pad = std::max(std::abs(y_lo) * 0.1, 0.5);
        y_lo -= chart.y_min ? 0.0 : pad;
        y_hi = std::max(y_hi, y_lo) + pad;
    }
    std::vector<double> y_ticks = nice_ticks(y_lo, y_hi);
    if (!chart.y_min) y_lo = y_ticks.front();
    if (!chart.y_max) y_hi = y_ticks.back();
    const auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * plot_width; };
    const auto py = [&](double y) { return top + (1.0 - (y - y_lo) / (y_hi - y_lo)) * plot_height; };
    const auto inside = [](double v, double lo, double hi) {
        const double eps = (hi - lo) * 1e-9;
        return v >= lo - eps && v <= hi + eps;
    };

    std::string out = fmt::format(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\" data-x-min=\"{2}\" "
        "data-x-max=\"{3}\" data-plot-left=\"{4}\" data-plot-right=\"{5}\" data-plot-top=\"{6}\" "
        "data-plot-bottom=\"{7}\">\n<title>{8}</title>\n"
        "<text x=\"{4}\" y=\"20\" font-size=\"14\">{8}</text>\n",
        width, height, x_lo, x_hi, left, left + plot_width, top, top + plot_height, title);
    for (const double t : y_ticks) {  // horizontal grid lines with the y tick labels
        if (!inside(t, y_lo, y_hi)) continue;
        out += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e5e5\"/>"
            "<text class=\"y-tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
            left, left + plot_width, py(t), left - 6, py(t) + 4, tick_label(t));
    }
    for (const double t : x_ticks) {
        if (!inside(t, x_lo, x_hi)) continue;
        out += fmt::format(
            "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#999\"/>"
            "<text class=\"x-tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
            px(t), top + plot_height, top + plot_height + 5, top + plot_height + 18, tick_label(t));
    }
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n"
        "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>\n",
        left, top, plot_width, plot_height, left + plot_width / 2, top + plot_height + 36,
        xml_escape(chart.x_label), top + plot_height / 2, top + plot_height / 2, xml_escape(chart.y_label));

    // The curves, clipped to the plot area by a nested <svg> (no ids to keep unique in a page).
    out += fmt::format("<svg x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"{} {} {} {}\">\n", left,
                       top, plot_width, plot_height, left, top, plot_width, plot_height);
    for (std::size_t k = 0; k < chart.series.size(); ++k) {
        const Series& s = chart.series[k];
        const std::string colour = xml_escape(s.colour.empty() ? palette[k % palette.size()] : s.colour);
        std::size_t i = 0;
        while (i < s.x.size()) {  // one polyline per run of finite points, a dot for a lone point
            if (!finite_point(s, i)) {
                ++i;
                continue;
            }
            std::size_t end = i;
            std::string points;
            for (; end < s.x.size() && finite_point(s, end); ++end)
                points += fmt::format("{:.1f},{:.1f} ", px(s.x[end]), py(s.y[end]));
            if (end - i == 1) {
                out +=
                    fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                                px(s.x[i]), py(s.y[i]), colour);
            } else {
                out += fmt::format(
                    "<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
                    "points=\"{}\"/>\n",
                    colour, points);
            }
            i = end;
        }
    }
    out += "</svg>\n";
    out += fmt::format(
        "<line class=\"marker\" x1=\"-10\" x2=\"-10\" y1=\"{}\" y2=\"{}\" stroke=\"#444\" "
        "stroke-dasharray=\"3 3\" visibility=\"hidden\"/>\n",
        top, top + plot_height);
    for (std::size_t k = 0; k < chart.series.size(); ++k) {  // legend, right of the plot
        const Series& s = chart.series[k];
        const std::string colour = xml_escape(s.colour.empty() ? palette[k % palette.size()] : s.colour);
        const int x = left + plot_width + legend_gap;
        const int y = top + 10 + legend_line * static_cast<int>(k);
        out += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"3\"/>"
            "<text class=\"legend\" x=\"{4}\" y=\"{5}\">{6}</text>\n",
            x, x + 20, y, colour, x + 26, y + 4, xml_escape(s.name));
    }
    out += "</svg>\n";
    return out;
}

Chart alignment_share_chart(const std::vector<AttentionSnapshot>& snapshots, std::size_t probe) {
    Chart chart{.title = fmt::format("alignment share against step (probe {})", probe + 1),
                .x_label = "step",
                .y_label = "alignment share",
                .series = {},
                .y_min = 0.0,
                .y_max = 1.0};
    std::vector<double> steps;
    for (const auto& snapshot : snapshots) {
        if (snapshot.probes.size() <= probe) continue;
        steps.push_back(static_cast<double>(snapshot.step));
        for (const auto& map : snapshot.probes[probe].maps) {
            if (!map.alignment_share) continue;  // a head without a right alignment has no curve
            const std::string name = map.title();
            auto it = std::find_if(chart.series.begin(), chart.series.end(),
                                   [&](const Series& s) { return s.name == name; });
            if (it == chart.series.end()) {
                chart.series.push_back({.name = name, .colour = "", .x = {}, .y = {}});
                it = chart.series.end() - 1;
            }
            it->y.resize(steps.size(), std::numeric_limits<double>::quiet_NaN());
            it->y.back() = *map.alignment_share;
        }
    }
    AG_CHECK(!steps.empty(), IndexError, "alignment_share_chart: no snapshot has probe {} ({} snapshots)",
             probe, snapshots.size());
    for (auto& s : chart.series) {  // a head missing from the last snapshots: gaps to the end
        s.x = steps;
        s.y.resize(steps.size(), std::numeric_limits<double>::quiet_NaN());
    }
    return chart;
}

}  // namespace attograd::inspect
