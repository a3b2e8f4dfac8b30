// The kernel's protected_symlinks rule, applied to every link on a path we follow.
#include "core/protected_path.hpp"

#include "core/detail/sticky_owner.hpp"
#include "core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iterator>
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

std::vector<fs::path> make_directories_protected(const fs::path& dir, const std::string& where) {
    std::vector<fs::path> made;
    // Each round makes what is missing of the path as checked; a name that appears meanwhile
    // (planted, or made by another process) sends the walk back to the check.
    for (int round = 0; round < 10; ++round) {
        const fs::path full = followed_path(dir, where);
        // Nothing in a longer one could be opened by its path, nor the folders made removed again.
        AG_CHECK(full.native().size() < PATH_MAX, IoError,
                 "{}: its path is {} bytes, more than the {} the system takes", where, full.native().size(),
                 PATH_MAX - 1);
        fs::path existing = full.root_path();
        std::vector<fs::path> missing;
        bool link_appeared = false;
        for (auto it = std::next(full.begin()); it != full.end() && !link_appeared; ++it) {
            struct stat st {};
            if (missing.empty() && ::lstat((existing / *it).c_str(), &st) == 0) {
                link_appeared = S_ISLNK(st.st_mode);  // since the check: check it
                AG_CHECK(link_appeared || S_ISDIR(st.st_mode), IoError,
                         "{}: cannot create the directory: '{}' is not a directory", where,
                         (existing / *it).string());
                existing /= *it;
            } else {
                missing.push_back(*it);
            }
        }
        if (link_appeared) continue;
        if (missing.empty()) return made;
        int fd = ::open(existing.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        AG_CHECK(fd >= 0, IoError, "{}: cannot open the directory '{}': {}", where, existing.string(),
                 std::strerror(errno));
        bool raced = false;
        for (const fs::path& name : missing) {
            if (::mkdirat(fd, name.c_str(), 0777) != 0) {
                const int error = errno;
                ::close(fd);
                AG_CHECK(error == EEXIST, IoError, "{}: cannot create the directory '{}': {}", where,
                         (existing / name).string(), std::strerror(error));
                raced = true;
                break;
            }
            existing /= name;
            made.push_back(existing);
            // Ours now: in a sticky directory no one else may rename or remove it.
            const int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            const int error = errno;
            ::close(fd);
            AG_CHECK(next >= 0, IoError, "{}: cannot open the directory '{}' just made: {}", where,
                     existing.string(), std::strerror(error));
            fd = next;
        }
        if (!raced) {
            ::close(fd);
            return made;
        }
    }
    throw IoError(fmt::format(
        "{}: its directories kept being made by another process while this one made them", where));
}

}  // namespace attograd
