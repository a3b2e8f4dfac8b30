// The process's umask, read without changing it.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace attograd::detail {

/// The process's umask, read without changing it (umask(2) would, for every thread at once):
/// Linux reports it in /proc/self/status; 022, the usual one, where it does not.
inline mode_t process_umask() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("Umask:")) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    return 022;
}

}  // namespace attograd::detail
