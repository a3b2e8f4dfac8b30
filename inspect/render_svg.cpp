// SVG drawing of one attention map: a heatmap with token labels, colour scale and legend.
#include "inspect/render_svg.hpp"
#include "inspect/fraction_text.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::inspect {

namespace {

// Monospace 12 px labels and a 13 px title: about 7.2 and 7.8 px per character.
constexpr double label_px = 7.2;
constexpr double title_px = 7.8;
constexpr std::int64_t max_label_chars = 12;

std::int64_t text_px(const std::string& text, double per_char) {
    return static_cast<std::int64_t>(static_cast<double>(display_width(text)) * per_char) + 1;
}

}  // namespace

std::string xml_escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
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

std::string render_svg(const AttentionMap& map, const SvgOptions& options) {
    check_map(map);
    const std::int64_t cell = options.cell_size;
    AG_CHECK(cell >= 2, ValueError, "render_svg: cell_size must be >= 2, got {}", cell);
    std::int64_t row_chars = 1, col_chars = 1;
    for (const auto& q : map.queries) row_chars = std::max(row_chars, display_width(display_label(q)));
    for (const auto& k : map.keys) col_chars = std::max(col_chars, display_width(display_label(k)));
    const std::int64_t left =
        12 + static_cast<std::int64_t>(label_px * static_cast<double>(std::min(row_chars, max_label_chars)));
    const std::int64_t top =
        30 + static_cast<std::int64_t>(label_px * static_cast<double>(std::min(col_chars, max_label_chars)));
    const std::int64_t grid_w = map.cols() * cell, grid_h = map.rows() * cell;

    std::string title = map.title();
    if (map.alignment_share) title += " \u2014 alignment share " + fraction_text(*map.alignment_share, 3);
    const bool outlined = std::any_of(map.right.begin(), map.right.end(),
                                      [&](std::int64_t c) { return c >= 0 && c < map.cols(); });
    const std::string legend = "red outline: " + options.alignment_legend;
    const std::string caption = "attention weight (rows: queries, columns: keys)";
    const std::int64_t scale_y = top + grid_h + 14;  // colour scale bar under the grid
    const std::int64_t legend_y = scale_y + 34;
    const std::int64_t width =
        std::max({left + grid_w + 16, text_px(title, title_px) + 12, left + 200 + 16,
                  text_px(caption, label_px) + 8, outlined ? text_px(legend, label_px) + 12 : 0});
    const std::int64_t height = (outlined ? legend_y : scale_y + 24) + 10;

    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"monospace\" font-size=\"12\">\n<title>{2}</title>\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"4\" y=\"16\" font-size=\"13\">{2}</text>\n",
        width, height, xml_escape(title));
    for (std::int64_t c = 0; c < map.cols(); ++c) {  // key labels, rotated
        const std::int64_t x = left + c * cell + cell / 2 + 4;
        out += fmt::format("<text x=\"{0}\" y=\"{1}\" transform=\"rotate(-90 {0} {1})\">{2}</text>\n", x,
                           top - 4, xml_escape(display_label(map.keys[static_cast<std::size_t>(c)])));
    }
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        const std::int64_t y = top + r * cell;
        const std::string query = xml_escape(display_label(map.queries[static_cast<std::size_t>(r)]));
        out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4,
                           y + cell / 2 + 4, query);
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            const double w = map.at(r, c);
            out += fmt::format(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} \u2192 {}: "
                "{:.4f}</title></rect>\n",
                left + c * cell, y, cell, cell, hex(weight_colour(w)), query,
                xml_escape(display_label(map.keys[static_cast<std::size_t>(c)])), w);
        }
    }
    for (std::int64_t r = 0; r < std::ssize(map.right) && r < map.rows(); ++r) {
        const std::int64_t c = map.right[static_cast<std::size_t>(r)];
        if (c < 0 || c >= map.cols()) continue;
        out += fmt::format(
            "<rect class=\"right\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"red\" "
            "stroke-width=\"1.5\"/>\n",
            left + c * cell + 1, top + r * cell + 1, cell - 2, cell - 2);
    }
    // Colour scale: 10 steps of the viridis ramp, labelled 0 and 1.
    out += fmt::format("<g class=\"scale\"><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\n", left - 4,
                       scale_y + 11);
    for (int i = 0; i < 10; ++i) {
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{}\"/>\n",
                           left + 18 * i, scale_y, hex(weight_colour((i + 0.5) / 10.0)));
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\">1</text><text x=\"{}\" y=\"{}\">{}</text></g>\n", left + 184,
                       scale_y + 11, 4, scale_y + 26, caption);
    if (outlined) {
        out += fmt::format(
            "<g class=\"legend\"><rect x=\"4\" y=\"{}\" width=\"12\" height=\"12\" fill=\"none\" "
            "stroke=\"red\" stroke-width=\"1.5\"/>"
            "<text x=\"22\" y=\"{}\">{}</text></g>\n",
            legend_y - 10, legend_y, xml_escape(legend));
    }
    out += "</svg>\n";
    return out;
}

}  // namespace attograd::inspect
