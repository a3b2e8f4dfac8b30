// Where the program writes a file: a --to path the user names, or a file it names itself.
#pragma once

#include "core/atomic_file.hpp"
#include "train/interrupt.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::cli {

/// Throws UsageError naming `--to PATH` when one of its file or folder names passes the system's
/// NAME_MAX bytes (the write would fail only after the work).
void check_name_lengths(const std::string& to);

/// Checks `--to PATH` (not `-`) of a command writing one file, before anything is computed: its
/// names' lengths (check_name_lengths), then the file.
/// Throws UsageError naming PATH when it is a directory (or names none), or when it is, or
/// links to, what is not a regular file (a pipe, device or socket: /dev/stdout on a terminal),
/// or reaches an open descriptor through /proc (/dev/stdout, /dev/fd/N on a file, which the
/// rename would replace behind the descriptor), saying that `--to -` writes to standard output.
void check_to_file(const std::string& to);

/// Refuses (IoError naming `path`) a symbolic link at `path`, a file or directory whose name the
/// program chose (inspect's files in a directory, RUN/inspect): it is never written through a
/// link, since the user did not name it.
void refuse_link(const std::filesystem::path& path);

/// Directories an output made, removed again when it fails: each one, deepest first and only
/// while empty, unless keep() was called, so that a failed write leaves no empty folder behind.
class MadeDirectories {
public:
    MadeDirectories() = default;
    /// Takes the directories `made`, outermost first.
    explicit MadeDirectories(std::vector<std::filesystem::path> made) : made_(std::move(made)) {}
    ~MadeDirectories();
    MadeDirectories(MadeDirectories&& other) noexcept : made_(std::move(other.made_)) { other.made_.clear(); }
    MadeDirectories& operator=(MadeDirectories&&) = delete;
    MadeDirectories(const MadeDirectories&) = delete;
    MadeDirectories& operator=(const MadeDirectories&) = delete;
    /// The output was written: the directories stay.
    void keep() { made_.clear(); }
    /// Removes them now (each while empty), as the destructor would.
    void remove();

private:
    std::vector<std::filesystem::path> made_;
};

/// Makes the directory `dir` of a --to path and the directories above it that are missing,
/// after holding every link on the way to the protected_symlinks rule (check_protected_path), so
/// that no directory is made through a link another user planted. Returns those it made. Throws
/// IoError naming `dir` and the component in the way (a link to nothing, a file) or the system's
/// reason.
MadeDirectories make_output_directory(const std::filesystem::path& dir);

/// Writes `contents` to `path` atomically (AtomicFile, links as `symlinks` says), unless a
/// SIGINT, SIGTERM or SIGHUP that `guard` holds off arrives first: then nothing replaces the old
/// file and no temporary is left. Returns the signal (0 when the file was written). Throws
/// IoError as AtomicFile does.
int write_unless_interrupted(const std::filesystem::path& path, std::string_view contents,
                             const train::InterruptGuard& guard,
                             AtomicFile::Symlinks symlinks = AtomicFile::Symlinks::follow);

/// Ends the program as `signal` (held off while a file was written, the run's lock and the
/// directories made for it given up since) would have; returns 128 + signal should it not.
int end_as_signal(int signal);

}  // namespace attograd::cli
