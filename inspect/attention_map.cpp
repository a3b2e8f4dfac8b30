// One attention matrix ready to draw, the colour scale the renderers share, and display labels.
#include "inspect/attention_map.hpp"

#include "core/error.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

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

std::int64_t display_width(const std::string& text) {
    // Count code points: every byte that is not a UTF-8 continuation byte starts one.
    return std::count_if(text.begin(), text.end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace attograd::inspect
