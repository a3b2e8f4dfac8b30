// Small text helpers: whitespace and UTF-8 character tokenisation, joining, trimming.
#pragma once

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
/// A token made printable for labels: a space becomes "␣", a tab "⇥".
std::string printable(const std::string& token);

}  // namespace attograd::data
