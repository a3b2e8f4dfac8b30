// Terminal heatmaps of attention maps: true colour, 256 colours, or plain shade characters.
#include "render_term.hpp"

#include "text.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace attograd::cli {

namespace {

/// `text` padded with spaces on the left to `width` columns (truncated when wider).
std::string pad_left(const std::string& text, std::int64_t width) {
    auto chars = split_chars(text);
    if (std::ssize(chars) > width) chars.resize(static_cast<std::size_t>(width));
    return std::string(static_cast<std::size_t>(width - std::ssize(chars)), ' ') + join(chars, "");
}

const char* shade(double w) {
    if (w < 0.1) return " ";
    if (w < 0.3) return "\u2591";
    if (w < 0.5) return "\u2592";
    if (w < 0.75) return "\u2593";
    return "\u2588";
}

/// `width` cells of weight `w` in the chosen colour mode.
std::string cell(double w, std::int64_t width, TermColour colour) {
    const auto n = static_cast<std::size_t>(width);
    switch (colour) {
        case TermColour::TrueColour: {
            const Rgb c = weight_colour(w);
            return fmt::format("\x1b[48;2;{};{};{}m{}\x1b[0m", c.r, c.g, c.b, std::string(n, ' '));
        }
        case TermColour::Ansi256: {
            const int grey = 232 + static_cast<int>(std::lround(std::clamp(w, 0.0, 1.0) * 23.0));
            return fmt::format("\x1b[48;5;{}m{}\x1b[0m", grey, std::string(n, ' '));
        }
        case TermColour::Plain:
            break;
    }
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += shade(w);
    return out;
}

}  // namespace

TermColour choose_term_colour(bool is_tty, bool no_color, const char* colorterm) {
    if (!is_tty || no_color) return TermColour::Plain;
    if (colorterm != nullptr &&
        (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0)) {
        return TermColour::TrueColour;
    }
    return TermColour::Ansi256;
}

TermColour detect_term_colour(std::FILE* stream) {
    const char* no_color = std::getenv("NO_COLOR");
    return choose_term_colour(::isatty(::fileno(stream)) != 0, no_color != nullptr && no_color[0] != '\0',
                              std::getenv("COLORTERM"));
}

std::string render_heatmap(const AttentionMap& map, TermColour colour) {
    std::vector<std::string> row_labels;
    std::vector<std::string> col_labels;
    std::int64_t row_width = 1;
    std::int64_t col_width = 1;
    for (const auto& q : map.queries) {
        row_labels.push_back(display_label(q));
        row_width = std::max(row_width, display_width(row_labels.back()));
    }
    for (const auto& k : map.keys) {
        col_labels.push_back(display_label(k));
        col_width = std::max(col_width, display_width(col_labels.back()));
    }
    row_width = std::min<std::int64_t>(row_width, 12);
    col_width = std::min<std::int64_t>(col_width, 6);

    std::string out = map.title();
    if (map.alignment_share) out += fmt::format("  (alignment share {:.3f})", *map.alignment_share);
    out += '\n';
    out += std::string(static_cast<std::size_t>(row_width + 1), ' ');
    for (const auto& label : col_labels) {
        out += ' ';
        out += pad_left(label, col_width);
    }
    out += '\n';
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        out += pad_left(row_labels[static_cast<std::size_t>(r)], row_width) + " ";
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            out += ' ';
            out += cell(map.at(r, c), col_width, colour);
        }
        out += '\n';
    }
    out += std::string(static_cast<std::size_t>(row_width + 1), ' ') + " scale: 0 ";
    for (const double w : {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}) out += cell(w, 1, colour);
    out += " 1   (rows: queries, columns: keys)\n";
    return out;
}

}  // namespace attograd::cli
