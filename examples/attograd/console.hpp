// The program's standard streams and process-wide signal settings: output that a full or closed
// stream cannot turn into a crash, and descriptors 0-2 held open before any file is opened.
#pragma once

#include "train/output.hpp"

namespace attograd::cli {

/// Output of the program goes through train::output (a failed write sets the stream's error
/// flag, which run_cli reports for stdout once the command is done).
using train::output;
using train::write_stream;

/// Sets up the process before anything else runs (first thing in main):
/// - opens /dev/null onto each of descriptors 0, 1 and 2 that is closed (`2>&-`): otherwise the
///   next file the program opens (a lock file, a run file) would take that number and receive
///   the program's output;
/// - ignores SIGPIPE and SIGXFSZ, so that writing to a closed pipe, or a file beyond the
///   file-size limit (`ulimit -f`), fails with EPIPE or EFBIG and is reported as an error (one
///   line, exit 2, the run directory as it was) instead of killing the process mid-save.
void prepare_process() noexcept;

}  // namespace attograd::cli
