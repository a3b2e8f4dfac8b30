// The lock that lets one `train` at a time write a run directory: flock on `.NAME.lock`.
#include "run_lock.hpp"
#include "quoting.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace attograd::cli {

namespace fs = std::filesystem;

fs::path RunLock::lock_path(const fs::path& dir) {
    fs::path full = fs::absolute(dir).lexically_normal();
    if (full.filename().empty()) full = full.parent_path();  // "runs/x/" names runs/x
    return full.parent_path() / fmt::format(".{}.lock", full.filename().string());
}

RunLock::RunLock(const fs::path& dir) : path_(lock_path(dir)) {
    std::error_code ec;
    fs::create_directories(path_.parent_path(), ec);
    AG_CHECK(!ec, IoError, "{}: cannot create the directory it goes in: {}", shown_path(dir), ec.message());
    // The holder removes the file when done: a lock taken on a file removed meanwhile is no
    // lock, so it is taken again on the file the path now names.
    for (;;) {
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        AG_CHECK(fd_ >= 0, IoError, "{}: cannot create the lock file {}: {}", shown_path(dir),
                 shown_path(path_), std::strerror(errno));
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int error = errno;
            char text[32] = {};
            const ssize_t n = ::pread(fd_, text, sizeof text - 1, 0);
            ::close(fd_);
            fd_ = -1;
            AG_CHECK(error != EWOULDBLOCK, IoError, "{} is being trained by another process (pid {})",
                     shown_path(dir), n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "unknown");
            throw IoError(fmt::format("{}: cannot lock {}: {}", shown_path(dir), shown_path(path_),
                                      std::strerror(error)));
        }
        struct stat held {
        }, named{};
        if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            break;
        ::close(fd_);
        fd_ = -1;
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the PID; the message of a second writer says "pid unknown".
    }
}

RunLock::~RunLock() {
    if (fd_ < 0) return;
    ::unlink(path_.c_str());  // still locked: whoever opened it meanwhile retries on a new file
    ::close(fd_);
}

std::optional<RunLock> lock_if_inside(const fs::path& run_dir, const fs::path& destination,
                                      const char* command) {
    const fs::path run = fs::weakly_canonical(run_dir), to = fs::weakly_canonical(destination);
    if (std::mismatch(run.begin(), run.end(), to.begin(), to.end()).first != run.end()) return std::nullopt;
    try {
        return std::optional<RunLock>(std::in_place, run_dir);
    } catch (const IoError& e) {
        throw IoError(
            fmt::format("{}; {} writes into a run only while no train writes it: pass --to a path "
                        "outside {}",
                        e.what(), command, shown_path(run_dir)));
    }
}

}  // namespace attograd::cli
