// Training progress on the terminal: a bar redrawn in place on a TTY, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace attograd::train {

/// Reports training progress on stderr. On a TTY a one-line bar (step, loss, accuracy,
/// steps/s, ETA) is redrawn at most 10 times a second; otherwise nothing is drawn and only
/// line() output appears, so logs stay readable.
class Progress {
public:
    /// A bar for steps `first_step` to `total_steps`; nothing is drawn when `quiet`.
    Progress(std::int64_t first_step, std::int64_t total_steps, bool quiet);
    /// After a step: redraws the bar when due.
    void update(std::int64_t step, double loss, double accuracy);
    /// Prints a whole line (clearing the bar first on a TTY).
    void line(const std::string& text);
    /// Clears the bar.
    void finish();
    /// Seconds since construction.
    double elapsed() const;

private:
    std::int64_t first_step_, total_steps_;
    bool tty_, quiet_, drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

/// "1:05" for 65 seconds.
std::string format_duration(double seconds);

}  // namespace attograd::train
