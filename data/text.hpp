// Small text helpers: whitespace and UTF-8 character tokenisation, joining, trimming.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::data {

/// Tokens separated by runs of spaces or tabs (empty input -> no tokens).
std::vector<std::string> split_whitespace(std::string_view text);
/// One token per UTF-8 character (a malformed byte becomes its own token).
std::vector<std::string> split_chars(std::string_view text);
/// Tokens joined by `separator`.
std::string join(const std::vector<std::string>& tokens, std::string_view separator);
/// `text` without leading and trailing whitespace (spaces, tabs, \r, \n).
std::string_view trim(std::string_view text);
/// `text` without a leading UTF-8 byte order mark (EF BB BF, U+FEFF), which editors on Windows
/// write at the start of a file; anywhere else a U+FEFF is kept. Every reader of user text
/// (TsvDataset::parse, Task::tokenize) strips it, else it would stay glued to the first token.
std::string_view strip_bom(std::string_view text);
/// True when `text` is well-formed UTF-8 (no stray continuation bytes, truncated or overlong
/// sequences, surrogates or code points above U+10FFFF): run configs and exports are JSON.
bool is_valid_utf8(std::string_view text);
/// Bytes of the control character that starts at `text[i]`, 0 when none starts there (or i is
/// past the end): 1 for C0 (U+0000-U+001F) and DEL (U+007F); the UTF-8 length of C1
/// (U+0080-U+009F; U+009B is a terminal's CSI), of U+2028 LINE SEPARATOR and U+2029 PARAGRAPH
/// SEPARATOR (which break lines in terminals, editors and JavaScript strings), of every
/// Bidi_Control character (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorders
/// the text shown around it (Unicode TR #9; Boucher & Anderson 2021, "Trojan Source"), and of
/// the invisible default-ignorable characters that could make two tokens look alike (U+00AD,
/// U+034F, U+115F, U+1160, U+17B4, U+17B5, U+180B-U+180F, U+200B, U+2060-U+2064, U+206A-U+206F,
/// U+3164, U+FEFF, U+FFA0, U+1BCA0-U+1BCA3, U+1D173-U+1D17A, the tags U+E0000-U+E007F; also the
/// interlinear annotation characters U+FFF9-U+FFFB). U+FEFF at the start of a file is a byte
/// order mark, which readers drop first with strip_bom. Not control characters, so a token may
/// hold them (escaped_length covers them for display): U+200C ZWNJ and U+200D ZWJ (they shape
/// Persian and Indic words and join emoji) and the variation selectors U+FE00-U+FE0F (emoji
/// presentation) and U+E0100-U+E01EF (Ideographic Variation Sequences).
std::size_t control_length(std::string_view text, std::size_t i);
/// Bytes of the space character at `text[i]`, 0 when none starts there (or i is past the end):
/// U+0020 and the other Unicode White_Space characters that are not control characters (U+00A0,
/// U+1680, U+2000-U+200A, U+202F, U+205F, U+3000), which a word never holds (Python's
/// str.split() splits at each).
std::size_t space_length(std::string_view text, std::size_t i);
/// Bytes of the character at `text[i]` that escape_control escapes, 0 when it is shown as it is:
/// control_length's characters, the other Default_Ignorable_Code_Point characters (Unicode
/// DerivedCoreProperties), which a token may hold: U+200C ZWNJ, U+200D ZWJ, the variation
/// selectors U+FE00-U+FE0F and U+E0100-U+E01EF, and the reserved U+2065, U+E0080-U+E00FF and
/// U+E01F0-U+E0FFF; and the spaces of space_length other than U+0020, with U+2800 BRAILLE
/// PATTERN BLANK; so that two tokens that differ only by one of them never look the same (nor one
/// token like two).
std::size_t escaped_length(std::string_view text, std::size_t i);
/// `text` made safe and unambiguous to show in a message or label: \t \n \r for those three,
/// \xhh for any other C0 character, DEL or byte that is not part of well-formed UTF-8, \u00hh
/// for a C1 character (lowercase hex), and \uhhhh (\Uhhhhhhhh above U+FFFF) for the other
/// characters of escaped_length; every other character unchanged. For display only: JSON, CSV,
/// TSV and the run's own files keep the exact bytes.
std::string escape_control(std::string_view text);
/// The first control character of `text` (see control_length), escaped as escape_control
/// writes it, or "" when it has none; `allowed` characters (e.g. "\t") are skipped.
std::string first_control(std::string_view text, std::string_view allowed = {});
/// A token made printable for labels: a space becomes "␣", a tab "⇥", other control and
/// invisible characters are escaped as escape_control writes them.
std::string printable(const std::string& token);

}  // namespace attograd::data
