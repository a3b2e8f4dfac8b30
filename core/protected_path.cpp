// The kernel's protected_symlinks rule, applied to every link on a path we follow.
#include "core/protected_path.hpp"

#include "core/detail/sticky_owner.hpp"
#include "core/error.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace attograd {

namespace fs = std::filesystem;

void check_protected_link(const fs::path& link, const std::string& where) {
    struct stat link_stat {};
    struct stat dir_stat {};
    const fs::path dir = link.parent_path().empty() ? fs::path(".") : link.parent_path();
    AG_CHECK(::lstat(link.c_str(), &link_stat) == 0 && ::stat(dir.c_str(), &dir_stat) == 0, IoError,
             "{}: cannot examine the symbolic link '{}': {}", where, link.string(), std::strerror(errno));
    AG_CHECK(detail::trusted_owner(link_stat.st_uid, dir_stat), IoError,
             "{}: the symbolic link '{}' is owned by uid {} in a sticky world-writable directory owned "
             "by uid {}; not following it (another user may have planted it)",
             where, link.string(), link_stat.st_uid, dir_stat.st_uid);
}

fs::path followed_path(const fs::path& path, const std::string& where) {
    std::error_code ec;
    const fs::path full = fs::absolute(path, ec);
    if (ec) return path;  // no working directory: nothing is followed from it either
    // Components still to walk, the next one last; a link's target is pushed in its place.
    std::vector<fs::path> pending;
    const auto push = [&](const fs::path& p) {
        std::vector<fs::path> parts(p.begin(), p.end());
        for (auto it = parts.rbegin(); it != parts.rend(); ++it)
            if (!it->empty()) pending.push_back(*it);
    };
    push(full.relative_path());
    fs::path current = full.root_path();
    for (int links = 0; !pending.empty();) {
        const fs::path part = pending.back();
        pending.pop_back();
        if (part == ".") continue;
        if (part == "..") {
            current = current.parent_path();
            continue;
        }
        const fs::path next = current / part;
        struct stat st {};
        // A missing component will be made a directory (create_directories), so the walk goes on:
        // "missing/../link" reaches a link through it.
        if (::lstat(next.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
            current = next;
            continue;
        }
        AG_CHECK(++links <= 40, IoError, "{}: too many levels of symbolic links", where);
        check_protected_link(next, where);
        const fs::path target = fs::read_symlink(next, ec);
        AG_CHECK(!ec, IoError, "{}: cannot read the symbolic link '{}': {}", where, next.string(),
                 ec.message());
        if (target.is_absolute()) current = target.root_path();
        push(target.relative_path());
    }
    return current;
}

void check_protected_path(const fs::path& path, const std::string& where) {
    (void)followed_path(path, where);
}

}  // namespace attograd
