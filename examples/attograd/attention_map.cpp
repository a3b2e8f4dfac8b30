// One attention matrix ready to draw, the colour scale the renderers share, and display labels.
#include "attention_map.hpp"

#include "text.hpp"
#include "vocab.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace attograd::cli {

std::string AttentionMap::title() const { return fmt::format("{} head {}", module, head); }

std::optional<double> alignment_share(const AttentionMap& map, const std::vector<std::int64_t>& right) {
    double total = 0.0;
    std::int64_t counted = 0;
    for (std::size_t t = 0; t < right.size(); ++t) {
        const std::int64_t col = right[t];
        if (col < 0) continue;
        ++counted;
        const auto row = static_cast<std::int64_t>(t);
        if (row < map.rows() && col < map.cols()) total += map.at(row, col);
    }
    if (counted == 0) return std::nullopt;
    return total / static_cast<double>(counted);
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
    if (token == Vocabulary::bos) return "^";
    if (token == Vocabulary::eos) return "$";
    if (token == Vocabulary::pad) return "_";
    if (token == Vocabulary::unk) return "\ufffd";
    return printable(token);
}

std::int64_t display_width(const std::string& text) {
    return static_cast<std::int64_t>(split_chars(text).size());
}

}  // namespace attograd::cli
