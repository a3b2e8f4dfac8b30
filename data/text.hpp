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
/// Bytes of the control character that starts at `text[i]`: 1 for C0 (U+0000-U+001F) and DEL
/// (U+007F); 2 for C1 (U+0080-U+009F, UTF-8 C2 80-C2 9F; e.g. U+009B is a terminal's CSI) and
/// U+061C ARABIC LETTER MARK; 3 for U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR (which
/// break lines in terminals, editors and JavaScript strings), the other bidirectional controls
/// U+200E, U+200F (marks), U+202A-U+202E (embeddings, overrides) and U+2066-U+2069 (isolates),
/// which reorder the text shown around them (Unicode TR #9; Boucher & Anderson 2021, "Trojan
/// Source"), and the invisible U+200B ZERO WIDTH SPACE and U+FEFF ZERO WIDTH NO-BREAK SPACE (a
/// byte order mark at the start of a file, which readers drop first with strip_bom); 0 when none
/// starts there (or i is past the end). These are the characters Unicode calls Cc, Zl and Zp,
/// every Bidi_Control character, U+200B and U+FEFF.
std::size_t control_length(std::string_view text, std::size_t i);
/// `text` made safe to show in a message or label: \t \n \r for those three, \xhh for any
/// other C0 character, DEL or byte that is not part of well-formed UTF-8, \u00hh for a C1
/// character (lowercase hex), and \uhhhh for the other control characters of control_length
/// (\u061c, \u200b, \u200e, \u200f, \u2028, \u2029, \u202a-\u202e, \u2066-\u2069, \ufeff);
/// every other character unchanged.
std::string escape_control(std::string_view text);
/// The first control character of `text` (see control_length), escaped as escape_control
/// writes it, or "" when it has none; `allowed` characters (e.g. "\t") are skipped.
std::string first_control(std::string_view text, std::string_view allowed = {});
/// A token made printable for labels: a space becomes "␣", a tab "⇥", other control characters
/// are escaped as escape_control writes them.
std::string printable(const std::string& token);

}  // namespace attograd::data
