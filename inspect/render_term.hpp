// Terminal heatmaps of attention maps: true colour, 256 colours or plain shade characters;
// maps wider than the terminal are downsampled, with a line saying so.
#pragma once

#include "inspect/attention_map.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace attograd::inspect {

/// How the terminal draws a heatmap.
enum class TermColour {
    Plain,      ///< shade characters ░▒▓█, no escape codes
    Ansi256,    ///< the 256-colour palette's grey ramp
    TrueColour  ///< 24-bit colours (viridis, as the SVG and HTML renderers)
};

/// Plain when `stream` is not a TTY or NO_COLOR is set (https://no-color.org); true colour
/// when COLORTERM is "truecolor" or "24bit"; 256 colours otherwise.
TermColour detect_term_colour(std::FILE* stream);
/// The same decision from its inputs (for tests): `no_color` = NO_COLOR is set and non-empty,
/// `colorterm` = COLORTERM's value or nullptr.
TermColour choose_term_colour(bool is_tty, bool no_color, const char* colorterm);

/// Columns available on `stream`: the terminal's width when it is a TTY, else $COLUMNS when set
/// to a positive number, else 80.
std::int64_t terminal_width(std::FILE* stream);

/// How render_heatmap draws.
struct TermOptions {
    TermColour colour = TermColour::Plain;
    std::int64_t width = 80;  ///< columns available (>= 20); wider maps are downsampled to fit
};

/// The heatmap of `map`: a title line, column labels on top, one row per query with its label
/// on the left, and a scale legend. When the map does not fit in `width` columns it is
/// downsampled by an integer factor f: each cell shows the summed weight of f adjacent keys
/// (the attention mass on them) averaged over f adjacent queries, so rows still sum to 1;
/// axis labels become key and query index ranges, and a line states the factor. Never wraps.
/// Ends with a newline. Throws as check_map, and ValueError when width < 20.
std::string render_heatmap(const AttentionMap& map, const TermOptions& options = {});

}  // namespace attograd::inspect
