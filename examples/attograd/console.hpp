// The program's standard streams and process-wide signal settings: output that a full or closed
// stream cannot turn into a crash, and descriptors 0-2 held open before any file is opened.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <utility>

namespace attograd::cli {

/// Writes `text` to `stream` (stdout or stderr). A write that fails (a full disk, /dev/full, a
/// closed pipe) throws nothing and ends nothing: it leaves the stream's error flag set, which
/// run_cli reports for stdout once the command is done (exit 2); a lost stderr is ignored, as it
/// leaves nowhere to report it. So training still saves its run whatever happens to its output.
void write_stream(std::FILE* stream, std::string_view text) noexcept;

/// fmt::print to `stream` through write_stream (fmt::print throws fmt::system_error when the
/// write fails, which would end the program through std::terminate).
template <class... Args>
void output(std::FILE* stream, fmt::format_string<Args...> format, Args&&... args) {
    write_stream(stream, fmt::format(format, std::forward<Args>(args)...));
}

/// Sets up the process before anything else runs (first thing in main):
/// - opens /dev/null onto each of descriptors 0, 1 and 2 that is closed (`2>&-`): otherwise the
///   next file the program opens (a lock file, a run file) would take that number and receive
///   the program's output;
/// - ignores SIGPIPE and SIGXFSZ, so that writing to a closed pipe, or a file beyond the
///   file-size limit (`ulimit -f`), fails with EPIPE or EFBIG and is reported as an error (one
///   line, exit 2, the run directory as it was) instead of killing the process mid-save.
void prepare_process() noexcept;

}  // namespace attograd::cli
