// User-given text (paths, run names) as the program's messages and suggested commands show it.
#pragma once

#include "train/file_io.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace attograd::cli {

/// `text` as one word of a shell command line, for the commands the program suggests
/// (`attograd train --resume DIR`), so that copying it runs on the same path: unchanged when it
/// holds only letters, digits and `_./:@%+=,-`; in ANSI-C quotes `$'...'` (bash, zsh, ksh and
/// POSIX.1-2024 sh) when it holds a character data::escape_control escapes (a control or
/// invisible character, data::escaped_length) or a byte that is not well-formed UTF-8, each
/// such byte as `\xhh` and `'` `\` as `\'` `\\`, so that the line is printable and shows
/// every character; otherwise in single quotes (a `'` inside as `'\''`).
std::string shell_quote(const std::string& text);

/// Paths in messages: train::shown_path (escaped control bytes, one line of valid UTF-8).
using train::shown_path;

}  // namespace attograd::cli
