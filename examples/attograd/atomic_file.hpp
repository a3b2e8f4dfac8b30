// Atomic file writes: a temporary file in the same directory, then rename.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attograd::cli {

/// Writes `contents` to `path` so that readers see either the old file or the whole new one:
/// the bytes go to `path.tmp-PID` first, which is renamed over `path` once flushed. Throws
/// IoError naming the path when any step fails (the temporary file is removed).
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

/// Reads a whole file. Throws IoError naming the path when it cannot be read, or when it holds
/// more than `max_bytes` (default: no limit).
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = static_cast<std::size_t>(-1));

}  // namespace attograd::cli
