// Writing to the standard streams so that a full or closed stream never ends training.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <utility>

namespace attograd::train {

/// Writes `text` to `stream` (stdout or stderr). A write that fails (a full disk, /dev/full, a
/// closed pipe) throws nothing and ends nothing: it leaves the stream's error flag set for the
/// caller to report. So training still saves its run whatever happens to its output.
void write_stream(std::FILE* stream, std::string_view text) noexcept;

/// fmt::print to `stream` through write_stream (fmt::print throws fmt::system_error when the
/// write fails, which would end the program through std::terminate).
template <class... Args>
void output(std::FILE* stream, fmt::format_string<Args...> format, Args&&... args) {
    write_stream(stream, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attograd::train
