// One attention matrix ready to draw, the colour scale the renderers share, and display labels.
#include "inspect/attention_map.hpp"

#include "core/error.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace attograd::inspect {

std::string AttentionMap::title() const {
    return head < 0 ? module : fmt::format("{} head {}", module, head);
}

void check_map(const AttentionMap& map) {
    AG_CHECK(static_cast<std::int64_t>(map.weights.size()) == map.rows() * map.cols(), ShapeError,
             "inspect: map '{}' has {} weights for {} query and {} key labels ([{}, {}] expected)",
             map.title(), map.weights.size(), map.rows(), map.cols(), map.rows(), map.cols());
    for (std::size_t r = 0; r < map.right.size(); ++r) {
        AG_CHECK(map.right[r] >= -1 && map.right[r] < map.cols(), IndexError,
                 "inspect: map '{}' [{}, {}] has right key {} at row {} (must be -1 or a key index below {})",
                 map.title(), map.rows(), map.cols(), map.right[r], r, map.cols());
    }
    for (std::size_t i = 0; i < map.weights.size(); ++i) {
        AG_CHECK(std::isfinite(map.weights[i]), ValueError,
                 "inspect: map '{}' [{}, {}] has a non-finite weight {} at row {}, column {}", map.title(),
                 map.rows(), map.cols(), map.weights[i],
                 static_cast<std::int64_t>(i) / std::max<std::int64_t>(map.cols(), 1),
                 static_cast<std::int64_t>(i) % std::max<std::int64_t>(map.cols(), 1));
    }
}

Rgb weight_colour(double w) {
    // Five stops of matplotlib's viridis, linearly interpolated.
    constexpr std::array<Rgb, 5> stops = {Rgb{68, 1, 84}, Rgb{59, 82, 139}, Rgb{33, 145, 140},
                                          Rgb{94, 201, 98}, Rgb{253, 231, 37}};
    if (!(w > 0.0)) w = 0.0;  // also maps NaN to 0
    w = std::min(w, 1.0);
    const double x = w * static_cast<double>(stops.size() - 1);
    const auto i = std::min<std::size_t>(static_cast<std::size_t>(x), stops.size() - 2);
    const double f = x - static_cast<double>(i);
    const auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
    return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g),
            mix(stops[i].b, stops[i + 1].b)};
}

std::string hex(Rgb colour) { return fmt::format("#{:02x}{:02x}{:02x}", colour.r, colour.g, colour.b); }

std::string display_label(const std::string& token) {
    if (token == "<bos>") return "^";
    if (token == "<eos>") return "$";
    if (token == "<pad>") return "_";
    if (token == "<unk>") return "\ufffd";
    if (token == " ") return "\u2423";
    if (token == "\t") return "\u21e5";
    return data::escape_control(token);
}

std::string symbol_legend(const AttentionMap& map) {
    static const std::pair<const char*, const char*> specials[] = {
        {"<bos>", "^ = <bos> (start)"},   {"<eos>", "$ = <eos> (end)"},
        {"<pad>", "_ = <pad> (padding)"}, {"<unk>", "\ufffd = <unk> (a token outside the vocabulary)"},
        {" ", "\u2423 = a space"},        {"\t", "\u21e5 = a tab"}};
    std::string legend;
    for (const auto& [token, meaning] : specials) {
        const auto is = [&](const std::string& t) { return t == token; };
        if (std::none_of(map.queries.begin(), map.queries.end(), is) &&
            std::none_of(map.keys.begin(), map.keys.end(), is))
            continue;
        legend += (legend.empty() ? "" : ", ") + std::string(meaning);
    }
    return legend;
}

int codepoint_width(char32_t c) {
    const auto in = [c](char32_t lo, char32_t hi) { return c >= lo && c <= hi; };
    if (in(0x0300, 0x036F) || in(0x0483, 0x0489) || in(0x0591, 0x05BD) || in(0x0610, 0x061A) ||
        in(0x064B, 0x065F) || in(0x1AB0, 0x1AFF) || in(0x1DC0, 0x1DFF) || in(0x200B, 0x200F) ||
        in(0x20D0, 0x20FF) || in(0xFE00, 0xFE0F) || in(0xFE20, 0xFE2F) || c == 0x2060 || c == 0xFEFF)
        return 0;
    if (in(0x1100, 0x115F) || in(0x2E80, 0x303E) || in(0x3041, 0x33FF) || in(0x3400, 0x4DBF) ||
        in(0x4E00, 0x9FFF) || in(0xA000, 0xA4CF) || in(0xAC00, 0xD7A3) || in(0xF900, 0xFAFF) ||
        in(0xFE30, 0xFE4F) || in(0xFF00, 0xFF60) || in(0xFFE0, 0xFFE6) || in(0x1F300, 0x1F64F) ||
        in(0x1F900, 0x1F9FF) || in(0x20000, 0x2FFFD) || in(0x30000, 0x3FFFD))
        return 2;
    return 1;
}

std::pair<std::size_t, char32_t> next_codepoint(const std::string& text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b = byte(i);
    const std::size_t len = b < 0x80           ? 1
                            : (b >> 5) == 0x6  ? 2
                            : (b >> 4) == 0xE  ? 3
                            : (b >> 3) == 0x1E ? 4
                                               : 0;
    if (len == 0 || i + len > text.size()) return {1, 0xFFFD};
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (std::size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return {1, 0xFFFD};
        c = (c << 6) | (byte(i + k) & 0x3F);
    }
    return {len, c};
}

std::int64_t display_width(const std::string& text) {
    std::int64_t width = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto [len, c] = next_codepoint(text, i);
        width += codepoint_width(c);
        i += len;
    }
    return width;
}

}  // namespace attograd::inspect
