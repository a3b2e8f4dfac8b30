// Internal: LIBXSMM's singleton file in /tmp, made safe before LIBXSMM opens it.
#pragma once

#include <filesystem>

namespace attograd::detail {

/// The file LIBXSMM 1.17's libxsmm_init() opens: "/tmp/.libxsmm.<getuid()>", a fixed name in a
/// sticky world-writable directory, opened with O_WRONLY | O_CREAT and neither O_NOFOLLOW nor
/// O_EXCL (libxsmm_main.c), so that it follows a symbolic link another user planted there and
/// creates the file the link names (where fs.protected_symlinks is 0).
std::filesystem::path libxsmm_singleton_path();

/// Whether LIBXSMM may open `path` as its singleton file without following anything another
/// user planted: creates it as our own regular file when missing (O_EXCL | O_NOFOLLOW, mode
/// 0600) and returns true; when it exists, true only for a regular file (not a link) owned by
/// the effective or the real uid. Any other failure to create it (no such directory, no
/// permission, a read-only file system) returns true: LIBXSMM's own open then fails the same
/// way, harmlessly. Our file cannot be replaced by another user (the directory is sticky) until
/// LIBXSMM, in one of our processes, removes it at exit.
bool singleton_file_is_safe(const std::filesystem::path& path);

}  // namespace attograd::detail
