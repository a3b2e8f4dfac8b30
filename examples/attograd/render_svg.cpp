// SVG drawings: one attention head as a heatmap, and a training curve.
#include "render_svg.hpp"

#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attograd::cli {

namespace {

constexpr int cell_size = 24;

}  // namespace

std::string xml_escape(const std::string& text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string render_svg(const AttentionMap& map) {
    std::int64_t label_chars = 1;
    for (const auto& q : map.queries) label_chars = std::max(label_chars, display_width(q));
    for (const auto& k : map.keys) label_chars = std::max(label_chars, display_width(k));
    const std::int64_t margin = 16 + 8 * std::min<std::int64_t>(label_chars, 12);
    const std::int64_t top = margin + 28;
    const std::int64_t width = margin + map.cols() * cell_size + 16;
    const std::int64_t height = top + map.rows() * cell_size + 16;

    std::string title = map.title();
    if (map.alignment_share) title += fmt::format(" \u2014 alignment share {:.3f}", *map.alignment_share);
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
        "font-family=\"monospace\" font-size=\"12\">\n<title>{}</title>\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>\n",
        width, height, width, height, xml_escape(title), xml_escape(title));
    for (std::int64_t c = 0; c < map.cols(); ++c) {  // key labels, rotated
        const std::int64_t x = margin + c * cell_size + cell_size / 2 + 4;
        out += fmt::format("<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\">{}</text>\n", x, top - 4,
                           x, top - 4, xml_escape(printable(map.keys[static_cast<std::size_t>(c)])));
    }
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        const std::int64_t y = top + r * cell_size;
        out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", margin - 4,
                           y + cell_size / 2 + 4,
                           xml_escape(printable(map.queries[static_cast<std::size_t>(r)])));
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            const double w = map.at(r, c);
            out += fmt::format(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} \u2192 {}: "
                "{:.4f}</title></rect>\n",
                margin + c * cell_size, y, cell_size, cell_size, hex(weight_colour(w)),
                xml_escape(printable(map.queries[static_cast<std::size_t>(r)])),
                xml_escape(printable(map.keys[static_cast<std::size_t>(c)])), w);
        }
    }
    for (std::int64_t r = 0; r < std::ssize(map.right) && r < map.rows(); ++r) {
        const std::int64_t c = map.right[static_cast<std::size_t>(r)];
        if (c < 0 || c >= map.cols()) continue;
        out += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"red\" "
            "stroke-width=\"1.5\"/>\n",
            margin + c * cell_size + 1, top + r * cell_size + 1, cell_size - 2, cell_size - 2);
    }
    out += "</svg>\n";
    return out;
}

std::string render_line_chart(const std::string& title, const std::vector<Series>& series) {
    constexpr int width = 640, height = 260, left = 60, right = 20, top = 30, bottom = 40;
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
        "fill=\"white\"/>\n"
        "<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
        width, height, width, height, left, xml_escape(title), left, top, width - left - right,
        height - top - bottom);
    double x_min = 0.0, x_max = 1.0;
    bool any = false;
    for (const auto& s : series) {
        for (const double x : s.x) {
            x_min = any ? std::min(x_min, x) : x;
            x_max = any ? std::max(x_max, x) : x;
            any = true;
        }
    }
    if (x_max <= x_min) x_max = x_min + 1.0;
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\">{:g}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:g}</text>\n", left,
        height - bottom + 16, x_min, width - right, height - bottom + 16, x_max);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n",
                       (left + width - right) / 2, height - 8);
    for (std::size_t k = 0; k < series.size(); ++k) {
        const auto& s = series[k];
        double y_min = 0.0, y_max = 1.0;
        for (std::size_t i = 0; i < s.y.size(); ++i) {
            y_min = i == 0 ? s.y[i] : std::min(y_min, s.y[i]);
            y_max = i == 0 ? s.y[i] : std::max(y_max, s.y[i]);
        }
        if (y_max <= y_min) y_max = y_min + 1.0;
        std::string points;
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (!std::isfinite(s.y[i])) continue;
            const double px = left + (s.x[i] - x_min) / (x_max - x_min) * (width - left - right);
            const double py = top + (1.0 - (s.y[i] - y_min) / (y_max - y_min)) * (height - top - bottom);
            points += fmt::format("{:.1f},{:.1f} ", px, py);
        }
        out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                           xml_escape(s.colour), points);
        out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{} ({:.3g} \u2013 {:.3g})</text>\n",
                           left + 8 + 200 * static_cast<int>(k), top + 14, xml_escape(s.colour),
                           xml_escape(s.name), y_min, y_max);
    }
    out += "</svg>\n";
    return out;
}

}  // namespace attograd::cli
