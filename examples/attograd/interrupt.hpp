// Ctrl-C and `kill` during training: SIGINT / SIGTERM set a flag that the training loop reads
// between steps, so it can save a resumable checkpoint before exiting.
#pragma once

#include <cstdint>

namespace attograd::cli {

/// While alive, SIGINT and SIGTERM only record that they arrived (the first one; a second
/// one gets the default action and ends the process at once, which the run directory
/// survives, see run_writer.hpp). The destructor restores the previous handlers.
class InterruptGuard {
public:
    InterruptGuard();
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    /// The signal that arrived (SIGINT or SIGTERM), or 0.
    int signal() const;
    /// Test hook: when the environment variable ATTOGRAD_TEST_SIGNAL_AT_STEP is "K" or
    /// "K:TERM", raises SIGINT (or SIGTERM) once `step` equals K, as Ctrl-C during step K would.
    void test_hook(std::int64_t step) const;
};

/// The name of a signal: "SIGINT", "SIGTERM", else "a signal".
const char* signal_name(int signal);

}  // namespace attograd::cli
