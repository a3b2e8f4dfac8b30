// Files of a run directory: bounded reads, atomic writes, and paths as messages show them.
#pragma once

#include "core/atomic_file.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attograd::train {

/// Writes go through the library's attograd::write_file_atomic (core/atomic_file.hpp).
using attograd::write_file_atomic;

/// Reads a whole regular file. Throws IoError naming the path when it cannot be read, is not a
/// regular file (a FIFO, socket, device or directory: refused at once, never waited on), or holds
/// more than `max_bytes` bytes (default: no limit).
std::string read_file(const std::filesystem::path& path,
                      std::size_t max_bytes = static_cast<std::size_t>(-1));

/// A path as every message of train/ shows it: data::escape_control of its bytes (C0 and DEL as
/// `\xhh`, `\t` `\n` `\r` by name, C1 as `\u00hh`, bytes that are not UTF-8 as `\xhh`), so that
/// a message is one line of valid UTF-8 that cannot drive the terminal.
std::string shown_path(const std::filesystem::path& path);

}  // namespace attograd::train
