// Whether a directory held open is still the one its path names (not moved, nor replaced).
#pragma once

#include <sys/stat.h>

#include <filesystem>

namespace attograd::detail {

/// Whether the open directory `fd` is what `path` names now (same device and inode): false once
/// it was moved aside or something else was put at `path`.
inline bool still_at(int fd, const std::filesystem::path& path) {
    struct stat held {};
    struct stat now {};
    return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
           held.st_dev == now.st_dev;
}

}  // namespace attograd::detail
