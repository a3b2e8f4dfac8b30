// Ctrl-C, `kill` and a closed terminal during training: SIGINT / SIGTERM / SIGHUP set a flag that the
// training loop reads between steps, and the held-out evaluation between batches, so that the run is saved as
// a resumable checkpoint within moments.
#pragma once

#include <cstdint>
#include <exception>

namespace attograd::train {

/// While alive, SIGINT, SIGTERM and SIGHUP only record that they arrived (the first one; a second
/// one gets the default action and ends the process at once, which the run directory
/// survives, see run_writer.hpp). The destructor restores the previous handlers. Guards nest
/// (one thread): only the outermost installs and restores the handlers, and a signal recorded
/// before an inner guard started is still its signal() (a program that guards its set-up keeps a
/// signal that arrived then for Trainer::fit, whose guard nests in it).
class InterruptGuard {
public:
    InterruptGuard();
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    /// The signal that arrived (SIGINT, SIGTERM or SIGHUP), or 0.
    int signal() const;
    /// Throws Interrupted when a signal arrived.
    void check() const;
    /// Test hook: when the environment variable ATTOGRAD_TEST_SIGNAL_AT_STEP is "K", "K:TERM" or
    /// "K:HUP", raises SIGINT (SIGTERM, SIGHUP) once `step` equals K, as Ctrl-C during step K would
    /// (a program may call it with -1 at the end of its set-up, before training starts).
    void test_hook(std::int64_t step) const;
};

/// Thrown out of work that checks for an interrupt between its parts (the held-out evaluation
/// of a Trainer, InterruptGuard::check): the work is abandoned, to be done again on resume.
class Interrupted : public std::exception {
public:
    /// The interrupt by `signal` (SIGINT, SIGTERM or SIGHUP).
    explicit Interrupted(int signal) : signal_(signal) {}
    /// The signal that interrupted the work.
    int signal() const { return signal_; }
    /// "interrupted".
    const char* what() const noexcept override { return "interrupted"; }

private:
    int signal_;
};

/// The name of a signal: "SIGINT", "SIGTERM", "SIGHUP", else "a signal".
const char* signal_name(int signal);

}  // namespace attograd::train
