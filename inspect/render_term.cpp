// Terminal heatmaps of attention maps: true colour, 256 colours or plain shade characters;
// keys of maps wider than the terminal are pooled, queries past a row limit, with a line saying so.
#include "inspect/render_term.hpp"
#include "inspect/fraction_text.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace attograd::inspect {

namespace {

/// The first `width` columns of `text` (whole code points), padded with spaces on the left to
/// `width` columns.
std::string pad_left(const std::string& text, std::int64_t width) {
    std::string kept;
    std::int64_t n = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto [len, c] = next_codepoint(text, i);
        if (n + codepoint_width(c) > width) break;
        kept += text.substr(i, len);
        n += codepoint_width(c);
        i += len;
    }
    return std::string(static_cast<std::size_t>(width - n), ' ') + kept;
}

/// `label` whole when at most term_label_width columns wide, else its first code points up to
/// term_label_width - 1 columns and an ellipsis, so a cut label says it was cut.
std::string fitted_label(const std::string& label) {
    if (display_width(label) <= term_label_width) return label;
    std::string kept;
    std::int64_t n = 0;
    for (std::size_t i = 0; i < label.size();) {
        const auto [len, c] = next_codepoint(label, i);
        if (n + codepoint_width(c) > term_label_width - 1) break;
        kept += label.substr(i, len);
        n += codepoint_width(c);
        i += len;
    }
    return kept + "\u2026";
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

/// `map` pooled: `key_factor` adjacent keys summed, `query_factor` adjacent queries averaged;
/// a pooled axis is labelled with "first-last" index ranges, an axis left alone keeps its labels.
AttentionMap downsample(const AttentionMap& map, std::int64_t key_factor, std::int64_t query_factor) {
    const auto groups = [](std::int64_t n, std::int64_t f) { return (n + f - 1) / f; };
    const auto labels = [](const std::vector<std::string>& names, std::int64_t f) {
        if (f == 1) return names;
        std::vector<std::string> out;
        const auto n = std::ssize(names);
        for (std::int64_t first = 0; first < n; first += f) {
            const std::int64_t last = std::min(n, first + f) - 1;
            out.push_back(first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last));
        }
        return out;
    };
    AttentionMap out;
    out.module = map.module;
    out.layer = map.layer;
    out.head = map.head;
    out.alignment_share = map.alignment_share;
    out.queries = labels(map.queries, query_factor);
    out.keys = labels(map.keys, key_factor);
    const std::int64_t rows = groups(map.rows(), query_factor), cols = groups(map.cols(), key_factor);
    out.weights.assign(static_cast<std::size_t>(rows * cols), 0.0);
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        const std::int64_t g = r / query_factor;
        const std::int64_t group_rows = std::min(map.rows(), (g + 1) * query_factor) - g * query_factor;
        for (std::int64_t c = 0; c < map.cols(); ++c)
            out.weights[static_cast<std::size_t>(g * cols + c / key_factor)] +=
                map.at(r, c) / static_cast<double>(group_rows);
    }
    return out;
}

/// `text` broken at spaces into lines of at most `width` code points (a longer word stands alone).
std::string wrap(const std::string& text, std::int64_t width) {
    std::string out, line;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        const auto count = [](const std::string& s) {
            return std::count_if(s.begin(), s.end(),
                                 [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
        };
        if (!line.empty() && count(line) + 1 + count(word) > width) {
            out += line + '\n';
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    return out + line + '\n';
}

struct Layout {
    std::vector<std::string> row_labels, col_labels;
    std::int64_t row_width = 1, col_width = 1;
    bool ruler = false;  ///< key indices above 1-column cells instead of the key labels
    std::int64_t total() const {
        return row_width + 1 + static_cast<std::int64_t>(col_labels.size()) * (col_width + 1);
    }
};

/// Labels on both axes (whole, or cut with an ellipsis past term_label_width), cells as wide as
/// the widest key label; with `ruler`, cells 1 column wide under a ruler of key indices.
Layout layout(const AttentionMap& map, bool ruler) {
    Layout l;
    l.ruler = ruler;
    for (const auto& q : map.queries) {
        l.row_labels.push_back(fitted_label(display_label(q)));
        l.row_width = std::max(l.row_width, display_width(l.row_labels.back()));
    }
    for (const auto& k : map.keys) {
        l.col_labels.push_back(fitted_label(display_label(k)));
        if (!ruler) l.col_width = std::max(l.col_width, display_width(l.col_labels.back()));
    }
    return l;
}

/// A ruler every 10 cells of width 1: the first key index of that cell (cells of `key_factor` keys).
std::string key_ruler(const Layout& l, std::int64_t cols, std::int64_t key_factor, std::int64_t width) {
    std::string ruler(static_cast<std::size_t>(l.row_width + 1), ' ');
    for (std::int64_t c = 0; c < cols; c += 10) {
        const std::string mark = fmt::format(" {}", c * key_factor);
        ruler += mark;
        const std::int64_t pad = std::min<std::int64_t>(10, cols - c) * 2 - std::ssize(mark);
        if (pad > 0) ruler += std::string(static_cast<std::size_t>(pad), ' ');
    }
    while (!ruler.empty() && ruler.back() == ' ') ruler.pop_back();
    if (std::ssize(ruler) + 14 > width) return ruler.substr(0, static_cast<std::size_t>(width)) + "\n";
    return ruler + "   (key index)\n";
}

}  // namespace

TermColour choose_term_colour(bool is_tty, bool no_color, const char* colorterm) {
    if (!is_tty || no_color) return TermColour::Plain;
    if (colorterm != nullptr &&
        (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0))
        return TermColour::TrueColour;
    return TermColour::Ansi256;
}

TermColour detect_term_colour(std::FILE* stream) {
    const char* no_color = std::getenv("NO_COLOR");
    return choose_term_colour(::isatty(::fileno(stream)) != 0, no_color != nullptr && no_color[0] != '\0',
                              std::getenv("COLORTERM"));
}

std::int64_t terminal_width(std::FILE* stream) {
    winsize size{};
    if (::isatty(::fileno(stream)) != 0 && ::ioctl(::fileno(stream), TIOCGWINSZ, &size) == 0 &&
        size.ws_col > 0)
        return size.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n > 0 && n < 100000) return n;
    }
    return 80;
}

std::string render_heatmap(const AttentionMap& map, const TermOptions& options) {
    check_map(map);
    AG_CHECK(options.width >= 20, ValueError, "render_heatmap: width must be >= 20 columns, got {}",
             options.width);
    AG_CHECK(options.max_rows >= 1, ValueError, "render_heatmap: max_rows must be >= 1, got {}",
             options.max_rows);
    // Queries are pooled only past max_rows: the width constrains the keys alone.
    const std::int64_t query_factor = (map.rows() + options.max_rows - 1) / options.max_rows;
    AttentionMap pooled;
    const AttentionMap* shown = &map;
    if (query_factor > 1) {
        pooled = downsample(map, 1, query_factor);
        shown = &pooled;
    }
    // Key labels above their columns when they fit; else cells 1 column wide under a ruler of
    // key indices, the labels listed below the grid; pool keys only when that is not enough.
    Layout l = layout(*shown, false);
    if (l.total() > options.width) l = layout(*shown, true);
    std::int64_t key_factor = 1;
    while (l.total() > options.width) {
        ++key_factor;
        pooled = downsample(map, key_factor, query_factor);
        l = layout(pooled, true);
        shown = &pooled;
    }
    std::string title = map.title();
    if (map.alignment_share) title += "  (alignment share " + fraction_text(*map.alignment_share, 3) + ")";
    std::string out = display_width(title) <= options.width ? title + '\n' : wrap(title, options.width);
    if (key_factor > 1 || query_factor > 1) {
        std::vector<std::string> merged;
        if (key_factor > 1)
            merged.push_back(
                fmt::format("a cell sums {} adjacent keys to fit {} columns", key_factor, options.width));
        if (query_factor > 1)
            merged.push_back(fmt::format("a row averages {} adjacent queries (more than {} rows)",
                                         query_factor, options.max_rows));
        out += wrap(fmt::format("(downsampled: {} queries x {} keys shown as {} x {}; {})", map.rows(),
                                map.cols(), shown->rows(), shown->cols(), fmt::join(merged, "; ")),
                    options.width);
    }
    if (l.ruler) {
        out += key_ruler(l, shown->cols(), key_factor, options.width);
    } else {
        out += std::string(static_cast<std::size_t>(l.row_width + 1), ' ');
        for (const auto& label : l.col_labels) out += ' ' + pad_left(label, l.col_width);
        out += '\n';
    }
    for (std::int64_t r = 0; r < shown->rows(); ++r) {
        out += pad_left(l.row_labels[static_cast<std::size_t>(r)], l.row_width) + " ";
        for (std::int64_t c = 0; c < shown->cols(); ++c)
            out += ' ' + cell(shown->at(r, c), l.col_width, options.colour);
        out += '\n';
    }
    out += std::string(static_cast<std::size_t>(l.row_width + 1), ' ') + " scale: 0 ";
    for (const double w : {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}) out += cell(w, 1, options.colour);
    const std::string axes = "(rows: queries, columns: keys)";
    // "scale: 0 " + 6 cells + " 1" is 17 columns after the label margin.
    out += l.row_width + 2 + 17 + 3 + std::ssize(axes) <= options.width ? " 1   " + axes + "\n"
                                                                        : " 1\n" + axes + "\n";
    if (const std::string symbols = symbol_legend(map); !symbols.empty()) out += wrap(symbols, options.width);
    if (l.ruler && key_factor == 1) {  // the key labels the ruler stands for, by index
        std::string keys = "keys:";
        for (std::size_t k = 0; k < l.col_labels.size(); ++k)
            keys += fmt::format(" {}:{}", k, l.col_labels[k]);
        out += wrap(keys, options.width);
    }
    return out;
}

}  // namespace attograd::inspect
