// The lock that lets one `train` at a time write a run directory.
#pragma once

#include <filesystem>
#include <optional>

namespace attograd::cli {

/// An exclusive flock(2) on `.NAME.lock` beside the run directory DIR (in its parent, created
/// if missing), held for the life of the object, so that two `train --out DIR` or two
/// `train --resume DIR` cannot both write DIR (the last writer would silently win). The file
/// holds the holder's PID; it is removed on release. Readers (eval, inspect) take no lock:
/// load_run reads one generation whatever a writer does. Throws IoError "DIR is being trained
/// by another process (pid N)" when another process holds it, or naming the lock file when it
/// cannot be created (a read-only or missing parent: found before any training).
class RunLock {
public:
    explicit RunLock(const std::filesystem::path& dir);
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

    /// The lock file: `.NAME.lock` beside DIR.
    static std::filesystem::path lock_path(const std::filesystem::path& dir);

private:
    std::filesystem::path path_;
    int fd_ = -1;
};

/// The run's lock, held while `command` (eval, inspect) writes `destination` inside the run
/// directory `run_dir`; nullopt when `destination` is outside it. A train saving the run swaps
/// the directory whole, so a file written into it meanwhile could land in the generation being
/// replaced and be lost (exit 0, no file): the lock refuses that while a train holds it (IoError
/// saying to write outside the run), and keeps a train from starting until the file is written.
std::optional<RunLock> lock_if_inside(const std::filesystem::path& run_dir,
                                      const std::filesystem::path& destination, const char* command);

}  // namespace attograd::cli
