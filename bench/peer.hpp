// Side-by-side figures: a LibTorch peer program (libtorch_<name>) run from an attograd
// benchmark, and the BLAS library the peer's process loaded.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace bench {

/// The BLAS library this process loaded (from /proc/self/maps): OpenBLAS or the reference BLAS
/// (~10x slower for LibTorch, which makes the comparison meaningless); "none" when neither.
inline std::string loaded_blas() {
    std::ifstream maps("/proc/self/maps");
    std::string line, found = "none";
    while (std::getline(maps, line)) {
        const auto slash = line.find('/');
        if (slash == std::string::npos) continue;
        const std::string path = line.substr(slash);
        if (path.find("openblas") != std::string::npos) return path;
        if (path.find("libblas") != std::string::npos || path.find("libmkl") != std::string::npos)
            found = path;
    }
    return found;
}

/// Runs `program` from the directory of `self` with `[--threads N] name` (N when > 0); the peer
/// prints `blas <path>`, then `<name> <ms per step>`. Returns that figure, or a negative value when
/// the peer was not built or printed something else; `blas` gets the path it printed.
inline double peer_ms(const std::filesystem::path& self, const std::string& program, const std::string& name,
                      int threads, std::string& blas) {
    const auto peer = self.parent_path() / program;
    if (!std::filesystem::exists(peer)) return -1.0;
    const std::string args =
        (threads > 0 ? " --threads " + std::to_string(threads) : std::string()) + " " + name;
    FILE* pipe = popen((peer.string() + args).c_str(), "r");
    if (pipe == nullptr) return -1.0;
    char got[512];
    double ms = -1.0;
    if (std::fscanf(pipe, "blas %511s", got) == 1) blas = got;
    if (std::fscanf(pipe, "%511s %lf", got, &ms) != 2 || got != name) ms = -1.0;
    pclose(pipe);
    return ms;
}

}  // namespace bench
