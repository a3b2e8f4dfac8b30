// Terminal heatmaps of attention maps: true colour, 256 colours or plain shade characters;
// keys of maps wider than the terminal are pooled, queries past a row limit, with a line saying so.
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

/// Labels longer than this many code points are cut to their first 15 and an ellipsis ("…")
/// in terminal heatmaps; shorter ones are drawn whole.
inline constexpr std::int64_t term_label_width = 16;

/// How render_heatmap draws.
struct TermOptions {
    /// True colour, 256 colours or plain shades (see detect_term_colour).
    TermColour colour = TermColour::Plain;
    std::int64_t width = 80;     ///< columns available (>= 20); wider maps have their keys pooled to fit
    std::int64_t max_rows = 64;  ///< query rows drawn at most (>= 1); more are averaged in groups
};

/// The heatmap of `map`: a title line, column labels on top, one row per query with its label
/// on the left, and a scale legend. Labels are whole up to term_label_width code points (cut
/// with an ellipsis past it); cells are as wide as the widest key label. The width constrains
/// the keys only: when the labelled columns do not fit in `width` columns, cells become 1
/// column wide under a ruler of key indices, with the key labels listed by index below the
/// grid ("keys: 0:invalid 1:argument ..."); when even that does not fit, each cell shows the
/// summed weight of f adjacent keys (the attention mass on them, so rows still sum to 1) for
/// the smallest integer f that fits, under a ruler of key indices. Every query keeps its own row unless there
/// are more than `max_rows`; then g = ceil(rows / max_rows) adjacent queries are averaged into one row,
/// labelled with their index range. A line states what was merged. Never wraps. Ends with a
/// newline. Throws as check_map, and ValueError when width < 20 or max_rows < 1.
std::string render_heatmap(const AttentionMap& map, const TermOptions& options = {});

}  // namespace attograd::inspect
