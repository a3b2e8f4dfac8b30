// File input and output of the attograd program: bounded reads, atomic writes.
#pragma once

#include "core/atomic_file.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attograd::cli {

/// Writes go through the library's attograd::write_file_atomic (core/atomic_file.hpp).
using attograd::write_file_atomic;

/// Reads a whole regular file. Throws IoError naming the path when it cannot be read, is not a
/// regular file (a FIFO, socket, device or directory: refused at once, never waited on), or holds
/// more than `max_bytes` bytes (default: no limit).
std::string read_file(const std::filesystem::path& path,
                      std::size_t max_bytes = static_cast<std::size_t>(-1));

}  // namespace attograd::cli
