// The kernel's protected_symlinks rule, applied to every link on a path we follow.
#pragma once

#include <filesystem>
#include <string>

namespace attograd {

/// Refuses (IoError starting with `where`) to follow the symbolic link `link` where the kernel's
/// protected_symlinks rule (Documentation/admin-guide/sysctl/fs.rst) would not, whatever that
/// setting: in a sticky world-writable directory (/tmp), a link owned by neither the caller's
/// effective uid nor the directory's owner may have been planted there by another user.
void check_protected_link(const std::filesystem::path& link, const std::string& where);

/// Walks `path` component by component as the kernel resolves it (relative links against the
/// directory holding them, ".." after a link against its target) and applies
/// check_protected_link to every link it meets, in any component, not only the last. A component
/// that does not exist is walked as the directory it would be made (so "new/../link" reaches
/// link). Throws IoError starting with `where` for a refused link or
/// for more than 40 links.
void check_protected_path(const std::filesystem::path& path, const std::string& where);

}  // namespace attograd
