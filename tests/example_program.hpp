// Running an example program as a child process from a test.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace testing {

/// Runs `command` through the shell; returns its exit status (-1 when it did not exit) and its
/// standard output.
inline std::pair<int, std::string> run_command(const std::string& command) {
    std::FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace testing
