// Where the program writes a file: a --to path the user names, or a file it names itself.
#pragma once

#include <filesystem>
#include <string>

namespace attograd::cli {

/// Checks `--to PATH` (not `-`) of a command writing one file, before anything is computed.
/// Throws UsageError naming PATH when it is a directory (or names none), or when it is, or
/// links to, what is not a regular file (a pipe, device or socket: /dev/stdout on a terminal),
/// or reaches an open descriptor through /proc (/dev/stdout, /dev/fd/N on a file, which the
/// rename would replace behind the descriptor), saying that `--to -` writes to standard output.
void check_to_file(const std::string& to);

/// Refuses (IoError naming `path`) a symbolic link at `path`, a file or directory whose name the
/// program chose (inspect's files in a directory, RUN/inspect): it is never written through a
/// link, since the user did not name it.
void refuse_link(const std::filesystem::path& path);

/// Makes the directory `dir` of a --to path and the directories above it that are missing,
/// after holding every link on the way to the protected_symlinks rule (check_protected_path), so
/// that no directory is made through a link another user planted. Throws IoError naming `dir`
/// and the component in the way (a link to nothing, a file) or the system's reason.
void make_output_directory(const std::filesystem::path& dir);

}  // namespace attograd::cli
