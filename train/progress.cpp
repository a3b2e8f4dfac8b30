// Training progress on the terminal: a bar redrawn in place on a TTY, plain lines otherwise.
#include "train/progress.hpp"
#include "train/output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace attograd::train {

std::string format_duration(double seconds) {
    const auto s = static_cast<std::int64_t>(std::max(0.0, std::round(seconds)));
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

Progress::Progress(std::int64_t first_step, std::int64_t total_steps, bool quiet)
    : first_step_(first_step),
      total_steps_(total_steps),
      tty_(::isatty(::fileno(stderr)) != 0),
      quiet_(quiet),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double Progress::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(std::int64_t step, double loss, double accuracy) {
    if (!tty_ || quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && step < total_steps_) return;
    last_draw_ = now;
    const double seconds = elapsed();
    const double rate = seconds > 0.0 ? static_cast<double>(step - first_step_) / seconds : 0.0;
    const double eta = rate > 0.0 ? static_cast<double>(total_steps_ - step) / rate : 0.0;
    constexpr int width = 24;
    const int filled = total_steps_ > 0 ? static_cast<int>(width * step / total_steps_) : width;
    std::string bar;
    for (int i = 0; i < width; ++i) bar += i < filled ? "\u2588" : "\u2591";
    output(stderr, "\r\x1b[2K{} step {}/{}  loss {:.4f}  acc {:.3f}  {:.0f} steps/s  ETA {}", bar, step,
           total_steps_, loss, accuracy, rate, format_duration(eta));
    std::fflush(stderr);
    drawn_ = true;
}

void Progress::line(const std::string& text) {
    if (quiet_) return;
    if (tty_ && drawn_) output(stderr, "\r\x1b[2K");
    output(stderr, "{}\n", text);
    drawn_ = false;
}

void Progress::finish() {
    if (tty_ && drawn_ && !quiet_) output(stderr, "\r\x1b[2K");
    drawn_ = false;
}

}  // namespace attograd::train
