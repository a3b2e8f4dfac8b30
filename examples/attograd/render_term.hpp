// Terminal heatmaps of attention maps: true colour, 256 colours, or plain shade characters.
#pragma once

#include "attention_map.hpp"

#include <cstdio>
#include <string>

namespace attograd::cli {

/// How the terminal draws a heatmap.
enum class TermColour {
    Plain,      ///< shade characters ░▒▓█, no escape codes
    Ansi256,    ///< the 256-colour palette's grey ramp
    TrueColour  ///< 24-bit colours
};

/// Plain when `stream` is not a TTY or NO_COLOR is set (https://no-color.org); true colour
/// when COLORTERM is "truecolor" or "24bit"; 256 colours otherwise.
TermColour detect_term_colour(std::FILE* stream);
/// The same decision from its inputs (for tests): `no_color` = NO_COLOR is set and non-empty,
/// `colorterm` = COLORTERM's value or nullptr.
TermColour choose_term_colour(bool is_tty, bool no_color, const char* colorterm);

/// The heatmap of `map`: a title line, column labels on top, one row per query with its label
/// on the left, and a scale legend. Ends with a newline.
std::string render_heatmap(const AttentionMap& map, TermColour colour);

}  // namespace attograd::cli
