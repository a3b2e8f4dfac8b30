// What a file or directory is, whatever its path (device and inode), and whether one held open
// is still the one its path names (not moved, nor replaced).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <utility>

namespace attograd::detail {

/// (st_dev, st_ino): one file or directory, whatever path names it; (0, 0) for none. Each save
/// of a run swaps in a new directory, so this names one generation of a run.
using FileIdentity = std::pair<std::uint64_t, std::uint64_t>;

/// The entry `path` names, a symbolic link itself (not followed); (0, 0) when there is none.
inline FileIdentity entry_identity(const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return {0, 0};
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

/// The open file or directory `fd`; (0, 0) when it cannot be examined.
inline FileIdentity open_identity(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return {0, 0};
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

/// Whether the open directory `fd` is what `path` names now (same device and inode): false once
/// it was moved aside or something else was put at `path`.
inline bool still_at(int fd, const std::filesystem::path& path) {
    struct stat held {};
    struct stat now {};
    return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
           held.st_dev == now.st_dev;
}

}  // namespace attograd::detail
