// The lock that lets one training process at a time write a run directory.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace attograd::train {

/// The directory a run path names, as the lock and the writer of a run use it: absolute, every
/// symbolic link resolved (a run reached through `link -> runs/x` is runs/x, and a save
/// replaces runs/x, never the link), no trailing '/'. Throws IoError naming `dir` when it is a
/// symbolic link to nothing or to what is not a directory (no directory is created where a
/// dangling link points), or when its name is one the writers use beside a run NAME
/// (`.NAME.lock`, `.NAME.staging-*`).
std::filesystem::path run_directory_path(const std::filesystem::path& dir);

/// What RunLock throws when another process holds the run's lock (the run is being written).
class RunBusy : public IoError {
public:
    using IoError::IoError;
};

/// An exclusive flock(2) on `.NAME.lock` beside the run directory DIR (in its parent, created
/// if missing; DIR as run_directory_path resolves it, so every path to one run takes one lock),
/// held for the life of the object, so that two training processes (two Trainers, two
/// `attograd train --out DIR`) cannot both write DIR (the last writer would silently win). The file holds the
/// holder's PID; it is removed on release. Readers take no lock: read_consistently reads one generation
/// whatever a writer does. The lock file is never written through a symbolic link, and an
/// existing one is rewritten only when it is what a holder leaves (a regular file with one link,
/// holding at most a PID). Throws RunBusy "DIR is being written by another process (pid N: ...)"
/// when another process holds it, IoError or naming the lock file when it cannot be created (a
/// read-only or missing parent: found before any training), is a symbolic link or is not a lock
/// file.
class RunLock {
public:
    /// Takes the lock of the run directory `dir` (IoError naming the holder when another process has it).
    explicit RunLock(const std::filesystem::path& dir);
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

    /// The lock file: `.NAME.lock` beside DIR (resolved by run_directory_path).
    static std::filesystem::path lock_path(const std::filesystem::path& dir);

    /// Makes sure the lock is still held before the holder writes the run (a Trainer calls it
    /// before every save): when the lock file was removed (by hand, or a cleaner of old files),
    /// a second writer could take a new one, so the lock is taken again on a new file. Throws
    /// IoError "DIR is being written by another process (pid N: ...)" when another process holds
    /// that new lock by then: the run is then left to it, never written by both; and IoError
    /// when the directory holding DIR was moved or replaced since the lock was taken.
    void check_held();

private:
    // Takes the lock on a new or existing lock file (the constructor's work).
    void acquire();

    // Throws IoError when the directory holding the lock file is no longer the one it was made
    // in (moved aside, a link put in its place): the run went with it.
    void check_parent() const;

    std::filesystem::path dir_, path_;
    int fd_ = -1;
    int parent_fd_ = -1;  ///< the directory the lock file was made in, whatever its path becomes
    /// Directories made for the lock file (DIR's missing parents), removed on release while empty:
    /// a run whose first save failed leaves no empty folders.
    std::vector<std::filesystem::path> made_;
};

/// The run's lock, held while `command` (e.g. a program's eval or inspect) writes `destination` inside the
/// run directory `run_dir`; nullopt when `destination` is outside it. A train saving the run swaps the
/// directory whole, so a file written into it meanwhile could land in the generation being replaced and be
/// lost (exit 0, no file): the lock refuses that while a train holds it (RunBusy saying to write outside the
/// run; RunLock's other errors as they are), and keeps a train from starting until the file is written.
std::optional<RunLock> lock_if_inside(const std::filesystem::path& run_dir,
                                      const std::filesystem::path& destination, const char* command);

/// Refuses (IoError naming `command` and both paths) a file `destination` that is the run directory
/// `run_dir` itself or a file directly in it: those names are the run's own files (config.json,
/// the checkpoint, the lock), which an output written there would replace; so are the lock file
/// and staging directories of this or any other run (`.NAME.lock`, `.NAME.staging-*` beside an
/// entry NAME), in any component of `destination` once resolved (relative, through links).
/// Folders inside the run (RUN/inspect/) stay writable.
void refuse_run_file(const std::filesystem::path& run_dir, const std::filesystem::path& destination,
                     const char* command);

}  // namespace attograd::train
