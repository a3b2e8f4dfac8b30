// Files written whole or not at all: a temporary file in the same directory, then rename.
#include "core/atomic_file.hpp"

#include "core/detail/process_umask.hpp"
#include "core/detail/unique_suffix.hpp"
#include "core/error.hpp"
#include "core/protected_path.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace attograd {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

/// Removes the temporary files `.NAME.tmp.PID.N` in `dir` that a process no longer running
/// left (killed between creating and renaming one): regular files of the caller's only, never a
/// link, and never a temporary of a live process (which may be writing it).
void remove_stale_temporaries(const fs::path& dir, const std::string& name) {
    const std::string prefix = "." + name + ".tmp.";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
        const std::string file = entry.path().filename().string();
        if (file.rfind(prefix, 0) != 0) continue;
        const std::string rest = file.substr(prefix.size());
        const std::size_t dot = rest.find('.');
        const auto digits = [](std::string_view t, std::size_t most) {
            return !t.empty() && t.size() <= most &&
                   std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
        };
        // A PID, then a counter or a 63-bit random number (detail::unique_suffix).
        if (dot == std::string::npos || !digits(rest.substr(0, dot), 10) || !digits(rest.substr(dot + 1), 19))
            continue;
        const long pid = std::stol(rest.substr(0, dot));
        // Only a file of ours: in a shared directory another user's file of that name is theirs,
        // whatever its name says (and its PID may be of another PID namespace).
        struct stat st {};
        if (pid <= 0 || pid == ::getpid() || ::lstat(entry.path().c_str(), &st) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
            continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
    }
}

}  // namespace

AtomicFile::AtomicFile(const fs::path& path, std::string where, Symlinks symlinks)
    : target_(path), where_(std::move(where)) {
    AG_CHECK(!path.empty() && !path.filename().empty(), IoError, "{}: not a file name", where_);
    std::error_code ec;
    const bool link = fs::is_symlink(fs::symlink_status(path, ec));
    AG_CHECK(!link || symlinks == Symlinks::follow, IoError,
             "{}: is a symbolic link; not writing through it (remove it)", where_);
    // A planted link in any directory on the way is refused as the kernel's
    // protected_symlinks rule would refuse it (the last component's chain again below).
    check_protected_path(link ? path : path.parent_path(), where_);
    // What the path names, links followed by the kernel (also /dev/stdout's /proc/self/fd/1,
    // whose target "pipe:[N]" is no path): a pipe, device or socket is refused before any
    // link is read.
    const fs::file_status named = fs::status(path, ec);
    AG_CHECK(!fs::exists(named) || fs::is_regular_file(named) || fs::is_directory(named), IoError,
             "{}: exists and is not a regular file (a pipe, device or socket); not replacing it", where_);
    // A symbolic link is written through, not replaced: the new file goes where it points
    // (renaming over the link itself would turn it into a regular file). Each link of the chain
    // is checked as the kernel would (check_protected_link) before it is followed.
    fs::path resolved = path;
    for (int hops = 0; fs::is_symlink(fs::symlink_status(resolved, ec)); ++hops) {
        AG_CHECK(hops < 40, IoError, "{}: too many levels of symbolic links", where_);
        check_protected_link(resolved, where_);
        // read_symlink, not weakly_canonical alone: a dangling link's path would resolve to itself.
        const fs::path points_to = fs::read_symlink(resolved, ec);
        AG_CHECK(!ec, IoError, "{}: cannot read the symbolic link: {}", where_, ec.message());
        resolved = points_to.is_absolute() ? points_to : resolved.parent_path() / points_to;
    }
    if (link) {
        target_ = fs::weakly_canonical(resolved, ec);
        AG_CHECK(!ec && !target_.filename().empty(), IoError, "{}: cannot resolve the symbolic link: {}",
                 where_, ec.message());
    }
    const fs::path& target = target_;
    AG_CHECK(!fs::is_directory(target, ec), IoError, "{}: is a directory", where_);
    const fs::file_status existing = fs::status(target, ec);
    AG_CHECK(!fs::exists(existing) || fs::is_regular_file(existing), IoError,
             "{}: exists and is not a regular file (a pipe, device or socket); not replacing it", where_);
    // At most 200 bytes of the name: the temporary name must fit the 255-byte limit whenever
    // the target's does.
    const std::string name = target.filename().string().substr(0, 200);
    remove_stale_temporaries(target.parent_path(), name);
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
        temp_ = target.parent_path() /
                fmt::format(".{}.tmp.{}.{}", name, ::getpid(), detail::unique_suffix(counter, attempt));
        // Private until commit: one who opened it while it was readable could read it later.
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd_ >= 0) break;
        AG_CHECK(errno == EEXIST && attempt < 100, IoError, "{}: cannot create temporary file '{}': {}",
                 where_, temp_.string(), errno_text());
    }
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t bytes) {
    AG_CHECK(fd_ >= 0, IoError, "{}: write after commit", where_);
    const auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(fd_, p, std::min<std::size_t>(bytes, std::size_t{1} << 30));
        if (n < 0 && errno == EINTR) continue;
        AG_CHECK(n > 0, IoError, "{}: write failed: {}{}", where_, n < 0 ? errno_text() : "no progress",
                 n < 0 && errno == EFBIG ? " (beyond the file-size limit, `ulimit -f`)" : "");
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit() {
    AG_CHECK(fd_ >= 0, IoError, "{}: committed twice", where_);
    // The bits it takes once written: a replaced file's own (a private 0600 file stays private),
    // or what a new file gets under the umask.
    struct stat replaced {};
    const mode_t mode =
        ::stat(target_.c_str(), &replaced) == 0 ? replaced.st_mode & 07777 : 0666 & ~detail::process_umask();
    ::fchmod(fd_, mode);  // where a filesystem refuses, the file stays private (0600)
    AG_CHECK(::fsync(fd_) == 0, IoError, "{}: fsync failed: {}", where_, errno_text());
    const int fd = fd_;
    fd_ = -1;
    AG_CHECK(::close(fd) == 0, IoError, "{}: close failed: {}", where_, errno_text());
    AG_CHECK(::rename(temp_.c_str(), target_.c_str()) == 0, IoError, "{}: cannot rename '{}' to it: {}",
             where_, temp_.string(), errno_text());
    committed_ = true;
    // The data itself is already synced; this makes the rename durable.
    sync_directory(target_.parent_path());
}

void sync_directory(const fs::path& dir) {
    const fs::path d = dir.empty() ? fs::path(".") : dir;
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

fs::path replace_directory(const fs::path& staging, const fs::path& target, std::string_view where) {
    sync_directory(staging);
    std::error_code ec;
    fs::path old;
    if (!fs::exists(fs::symlink_status(target, ec))) {
        AG_CHECK(::rename(staging.c_str(), target.c_str()) == 0, IoError,
                 "{}: cannot rename '{}' to '{}': {}", where, staging.string(), target.string(),
                 errno_text());
    } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
        old = staging;
    } else {
        AG_CHECK(errno == EINVAL || errno == ENOSYS || errno == ENOTSUP, IoError,
                 "{}: cannot swap '{}' into '{}': {}", where, staging.string(), target.string(),
                 errno_text());
        old = staging.string() + ".old";
        AG_CHECK(::rename(target.c_str(), old.c_str()) == 0, IoError, "{}: cannot move '{}' aside: {}", where,
                 target.string(), errno_text());
        AG_CHECK(::rename(staging.c_str(), target.c_str()) == 0, IoError,
                 "{}: cannot rename '{}' to '{}': {}", where, staging.string(), target.string(),
                 errno_text());
    }
    sync_directory(target.parent_path());
    return old;
}

void write_file_atomic(const fs::path& path, std::string_view contents, AtomicFile::Symlinks symlinks) {
    AtomicFile file(path, path.string(), symlinks);
    file.write(contents.data(), contents.size());
    file.commit();
}

}  // namespace attograd
