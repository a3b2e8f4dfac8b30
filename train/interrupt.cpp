// SIGINT / SIGTERM / SIGHUP during training: recorded in a flag, read by the training loop.
#include "train/interrupt.hpp"

#include <signal.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace attograd::train {

namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_previous_int {
}, g_previous_term{}, g_previous_hup{};

int g_depth = 0;  // guards alive: only the outermost installs and restores the handlers

extern "C" void record_signal(int signal) { g_signal = signal; }

}  // namespace

InterruptGuard::InterruptGuard() {
    if (g_depth++ > 0) return;  // nested: the outer guard's handlers, and any signal it recorded, stay
    g_signal = 0;
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the process at once
    // A signal ignored when the guard starts stays ignored (`nohup`, a shell's background job).
    const auto install = [&](int signal, struct sigaction& previous) {
        ::sigaction(signal, nullptr, &previous);
        if (previous.sa_handler != SIG_IGN) ::sigaction(signal, &action, nullptr);
    };
    install(SIGINT, g_previous_int);
    install(SIGTERM, g_previous_term);
    install(SIGHUP, g_previous_hup);  // the terminal closed (ssh dropped): save too
}

InterruptGuard::~InterruptGuard() {
    if (--g_depth > 0) return;
    ::sigaction(SIGINT, &g_previous_int, nullptr);
    ::sigaction(SIGTERM, &g_previous_term, nullptr);
    ::sigaction(SIGHUP, &g_previous_hup, nullptr);
    g_signal = 0;
}

int InterruptGuard::signal() const { return g_signal; }

void InterruptGuard::check() const {
    if (g_signal != 0) throw Interrupted(g_signal);
}

void InterruptGuard::test_hook(std::int64_t step) const {
    const char* value = std::getenv("ATTOGRAD_TEST_SIGNAL_AT_STEP");
    if (value == nullptr || std::strtoll(value, nullptr, 10) != step) return;
    ::raise(std::strstr(value, ":TERM") != nullptr  ? SIGTERM
            : std::strstr(value, ":HUP") != nullptr ? SIGHUP
                                                    : SIGINT);
}

const char* signal_name(int signal) {
    if (signal == SIGINT) return "SIGINT";
    if (signal == SIGTERM) return "SIGTERM";
    if (signal == SIGHUP) return "SIGHUP";
    return "a signal";
}

}  // namespace attograd::train
