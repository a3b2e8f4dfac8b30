// Internal: the kernel's rule for entries in sticky world-writable directories (/tmp), shared by
// the protected_symlinks check, the run writer and the run lock.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

namespace attograd::detail {

/// Whether an entry owned by `owner` in the directory `dir` may be taken as the caller's:
/// anywhere but in a sticky world-writable directory, and there only when the caller (effective
/// uid) or the directory's owner owns it (protected_symlinks / protected_regular).
inline bool trusted_owner(uid_t owner, const struct stat& dir) {
    const bool shared = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & S_IWOTH) != 0;
    return !shared || owner == ::geteuid() || owner == dir.st_uid;
}

}  // namespace attograd::detail
