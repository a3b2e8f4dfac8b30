// The kernel's protected_symlinks rule, applied to every link on a path we follow.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attograd {

/// Refuses (IoError starting with `where`) to follow the symbolic link `link` where the kernel's
/// protected_symlinks rule (Documentation/admin-guide/sysctl/fs.rst) would not, whatever that
/// setting: in a sticky world-writable directory (/tmp), a link owned by neither the caller's
/// effective uid nor the directory's owner may have been planted there by another user.
void check_protected_link(const std::filesystem::path& link, const std::string& where);

/// Where `path` leads: walks it component by component as the kernel resolves it (relative links
/// against the directory holding them, ".." after a link against its target, the last component
/// followed too, a dangling link to where its file would be made) and applies
/// check_protected_link to every link it meets. A component that does not exist is walked as the
/// directory it would be made (so "new/../link" reaches link's target). Returns an absolute path
/// without links, "." or ".." (`path` made absolute when there is no working directory). Throws
/// IoError starting with `where` for a refused link or for more than 40 links.
std::filesystem::path followed_path(const std::filesystem::path& path, const std::string& where);

/// followed_path for its checks alone: refuses a planted link in any component of `path`.
void check_protected_path(const std::filesystem::path& path, const std::string& where);

/// Makes the directory `dir` and those above it that are missing (as `mkdir -p`), race-free
/// against another user: after followed_path, each missing directory is made in its parent's
/// open descriptor and opened without following a link, so nothing planted in a missing one's
/// place between the check and the making is ever followed (something that appears there is
/// checked again from the start). Returns the directories it made (as followed_path gives
/// them), outermost first. Throws IoError starting with `where` for a refused link, a component
/// that is no directory, a path of PATH_MAX bytes or more (before making anything), or the
/// system's reason.
std::vector<std::filesystem::path> make_directories_protected(const std::filesystem::path& dir,
                                                              const std::string& where);

}  // namespace attograd
