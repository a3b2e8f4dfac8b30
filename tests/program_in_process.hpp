// Running the attograd program inside the test's own process (attograd::cli::run_cli), for the
// tests of what a task registered in that process does to the program: a child process would not
// see the registration.
#pragma once

#include "cli_helpers.hpp"
#include "commands.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace cli_test {

/// Points file descriptor `fd` at a temporary file until destroyed; text() reads what arrived.
class Redirect {
public:
    explicit Redirect(int fd) : fd_(fd), file_(std::tmpfile()), saved_(::dup(fd)) {
        REQUIRE(file_ != nullptr);
        REQUIRE(saved_ >= 0);
        flush_all();
        ::dup2(::fileno(file_), fd_);
    }
    ~Redirect() {
        restore();
        std::fclose(file_);
    }
    Redirect(const Redirect&) = delete;
    Redirect& operator=(const Redirect&) = delete;

    std::string text() {
        restore();
        std::rewind(file_);
        std::string text;
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file_)) > 0;) text.append(buffer, n);
        return text;
    }

private:
    static void flush_all() {
        std::cout.flush();
        std::cerr.flush();
        std::fflush(stdout);
        std::fflush(stderr);
    }
    void restore() {
        if (saved_ < 0) return;
        flush_all();
        ::dup2(saved_, fd_);
        ::close(saved_);
        saved_ = -1;
    }

    int fd_;
    std::FILE* file_;
    int saved_;
};

/// Runs `attograd ARGS...` in this process (attograd::cli::run_cli), capturing stdout and stderr.
inline Outcome run_in_process(std::vector<std::string> args) {
    args.insert(args.begin(), "attograd");
    Outcome outcome;
    for (const auto& a : args) outcome.command += (outcome.command.empty() ? "" : " ") + a;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    Redirect out(STDOUT_FILENO), err(STDERR_FILENO);
    outcome.code = attograd::cli::run_cli(static_cast<int>(args.size()), argv.data());
    outcome.out = out.text();
    outcome.err = err.text();
    return outcome;
}

}  // namespace cli_test
