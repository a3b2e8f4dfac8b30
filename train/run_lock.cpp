// The lock that lets one `train` at a time write a run directory: flock on `.NAME.lock`.
#include "train/run_lock.hpp"
#include "train/file_io.hpp"
#include "train/run_dir.hpp"
#include "train/run_writer.hpp"

#include "core/detail/held_directory.hpp"
#include "core/detail/sticky_owner.hpp"
#include "core/error.hpp"
#include "core/protected_path.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>

namespace attograd::train {

namespace fs = std::filesystem;

namespace {

/// Whether the open file `fd` is what a lock holder leaves: a regular file with one name
/// (not a hard link to some other file), holding nothing but a PID. Only such a file may be
/// truncated and rewritten.
bool is_lock_file(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size > 20) return false;
    char text[21] = {};
    ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    if (n > 0 && text[n - 1] == '\n') --n;  // `echo PID > .DIR.lock` is a PID too
    return n >= 0 &&
           std::all_of(text, text + n, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

/// Whether the open file `fd` in directory `dir` may be taken as the caller's: anywhere but in
/// a sticky world-writable directory (/tmp), and there only when the caller (effective uid) or
/// the directory's owner owns it (the kernel's protected_regular rule).
bool owned_here(int fd, const fs::path& dir) {
    struct stat file {};
    struct stat parent {};
    if (::fstat(fd, &file) != 0 || ::stat(dir.c_str(), &parent) != 0) return false;
    return detail::trusted_owner(file.st_uid, parent);
}

/// Whether `path` (a symbolic link not followed) names the open file `fd`.
bool names_file(const fs::path& path, int fd) {
    const auto held = detail::open_identity(fd);
    return held.second != 0 && held == detail::entry_identity(path);
}

/// Where a write to `path` lands (followed_path): a relative `.run.lock`, a link to it or
/// `missing/../link-to-it` is the lock file as much as `/abs/.run.lock`.
fs::path landing_path(const fs::path& path) { return followed_path(path, shown_path(path)); }

/// The run NAME whose writer owns an entry named `.NAME.lock` or `.NAME.staging-*`, or "".
std::string writer_entry_owner(const std::string& entry) {
    if (!entry.starts_with(".")) return "";
    if (const auto staging = entry.rfind(".staging-"); staging != std::string::npos && staging > 0)
        return entry.substr(1, staging - 1);
    if (entry.ends_with(".lock") && entry.size() > 6) return entry.substr(1, entry.size() - 6);
    return "";
}

/// Whether `up` names a writer's entry: a `.NAME.lock` or `.NAME.staging-*` beside an entry NAME
/// or beside NAME's lock file (a run, or one training before its first save), or such an entry
/// that exists.
bool is_writer_entry(const fs::path& up) {
    const std::string owner = writer_entry_owner(up.filename().string());
    std::error_code ec;
    const auto there = [&](const fs::path& p) { return fs::exists(fs::symlink_status(p, ec)); };
    return !owner.empty() && (there(up.parent_path() / owner) || there(up) ||
                              there(up.parent_path() / fmt::format(".{}.lock", owner)));
}

/// The first component of the resolved `path` (itself included) that is a writer's entry
/// (is_writer_entry); empty when there is none.
fs::path writer_entry_on(const fs::path& path) {
    for (fs::path up = path; !up.empty() && up != up.parent_path(); up = up.parent_path())
        if (is_writer_entry(up)) return up;
    return {};
}

/// Whether `dir` holds a run a RunWriter saved: a config.json with its "files" and its own
/// checksum (a config.json of anything else is not taken for one).
bool holds_saved_run(const fs::path& dir) {
    std::error_code ec;
    const fs::path config = dir / "config.json";
    if (!fs::is_regular_file(fs::symlink_status(config, ec))) return false;
    try {
        const nlohmann::json json = read_run_json(config);
        return json.is_object() && json.contains("files") && json.contains(config_checksum_field);
    } catch (const Error&) {
        return false;
    }
}

/// Whether a train is writing a run at `dir` (or left its lock there): `.NAME.lock` beside it,
/// also before the run's first save, when `dir` does not exist yet.
bool has_lock_file(const fs::path& dir) {
    // What a train leaves: one regular file (no link, no second name), its own or, in a sticky
    // world-writable directory, not another user's entry (which is theirs, not a run's lock).
    const fs::path lock = dir.parent_path() / fmt::format(".{}.lock", dir.filename().string());
    const fs::path parent = lock.parent_path().empty() ? fs::path(".") : lock.parent_path();
    struct stat st {};
    struct stat parent_st {};
    return ::lstat(lock.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
           ::stat(parent.c_str(), &parent_st) == 0 && detail::trusted_owner(st.st_uid, parent_st);
}

/// The first component of the resolved `path` (itself included) that is a run directory or is
/// being written as one (holds_saved_run, has_lock_file); empty when there is none.
fs::path run_directory_on(const fs::path& path) {
    for (fs::path up = path; !up.empty() && up != up.parent_path(); up = up.parent_path())
        if (has_lock_file(up) || holds_saved_run(up)) return up;
    return {};
}

/// The run whose writer's entry `entry` (from writer_entry_on) is.
fs::path entry_owner_run(const fs::path& entry) {
    return entry.parent_path() / writer_entry_owner(entry.filename().string());
}

/// Opens the lock file `path`, creating it when missing, never through a symbolic link.
/// `created` says whether this call made it. -1 with errno on failure.
int open_lock_file(const fs::path& path, bool& created) {
    for (;;) {
        const int fd =
            ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        created = fd >= 0;
        if (fd >= 0 || errno != EEXIST) return fd;
        const int existing = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (existing >= 0 || errno != ENOENT) return existing;
        // Removed by its holder between the two calls: create it again.
    }
}

}  // namespace

fs::path run_directory_path(const fs::path& dir) {
    fs::path full = fs::absolute(dir);
    if (full.filename().empty()) full = full.parent_path();  // "runs/x/" names runs/x
    // Those names are the writers' own entries beside a run NAME: a run there would be taken for
    // a lock file or removed as a dead writer's staging directory.
    AG_CHECK(writer_entry_owner(full.filename().string()).empty(), IoError,
             "{}: is the name of a run's lock file or staging directory (.NAME.lock, .NAME.staging-*), "
             "which attograd's writers use: choose another name",
             shown_path(dir));
    // Where the kernel goes: "link/../x" is beside link's target, "new/../link" (new missing) is
    // link's target, as "link" alone is; a link there must lead to a directory that exists.
    const fs::path resolved = followed_path(full, shown_path(dir));
    if (const fs::path last = full.filename(); last != "." && last != "..") {
        const fs::path entry = followed_path(full.parent_path(), shown_path(dir)) / last;
        std::error_code ec;
        AG_CHECK(!fs::is_symlink(fs::symlink_status(entry, ec)) || fs::is_directory(fs::status(entry, ec)),
                 IoError,
                 "{}: is a symbolic link to {}, which is not a directory; a run directory must be one",
                 shown_path(dir), shown_path(fs::read_symlink(entry, ec)));
    }
    const fs::path host = run_directory_on(resolved.parent_path());
    AG_CHECK(host.empty(), IoError,
             "{}: is inside {}, a run directory (or one a train is writing or was killed writing: its lock "
             "file is beside it), whose saves replace it whole: choose a directory outside it",
             shown_path(dir), shown_path(host));
    const fs::path inside = writer_entry_on(resolved.parent_path());
    AG_CHECK(inside.empty(), IoError,
             "{}: is inside {}, the lock file or a staging directory of the run {}, which only the run's "
             "writer uses (its next save would remove what is there): choose another directory",
             shown_path(dir), shown_path(inside), shown_path(entry_owner_run(inside)));
    AG_CHECK(writer_entry_owner(resolved.filename().string()).empty(), IoError,
             "{}: leads to {}, the name of a run's lock file or staging directory (.NAME.lock, "
             ".NAME.staging-*), which attograd's writers use: choose another name",
             shown_path(dir), shown_path(resolved));
    return resolved;
}

fs::path RunLock::lock_path(const fs::path& dir) {
    const fs::path full = run_directory_path(dir);
    return full.parent_path() / fmt::format(".{}.lock", full.filename().string());
}

RunLock::RunLock(const fs::path& dir) : dir_(dir), path_(lock_path(dir)) {
    // The run's own length, links resolved, rather than that of a folder on the way to it.
    const std::size_t run_bytes = run_directory_path(dir).native().size();
    AG_CHECK(run_bytes < PATH_MAX && path_.native().size() < PATH_MAX, IoError,
             "{}: its path{} is {} bytes, more than the {} the system takes", shown_path(dir),
             run_bytes < PATH_MAX ? " with its lock file's name (.NAME.lock)" : "",
             run_bytes < PATH_MAX ? path_.native().size() : run_bytes, PATH_MAX - 1);
    // Made race-free: a link planted in a missing folder's place meanwhile is never followed.
    made_ = make_directories_protected(path_.parent_path(), shown_path(dir));
    parent_fd_ = ::open(path_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    AG_CHECK(parent_fd_ >= 0, IoError, "{}: cannot open the directory it goes in: {}", shown_path(dir),
             std::strerror(errno));
    try {
        acquire();
    } catch (...) {
        ::close(parent_fd_);
        parent_fd_ = -1;
        throw;
    }
    // The one writer now: what a killed one left (the user's entries among it) is taken up
    // before anything reads or refuses the run.
    recover_killed_writers(dir_);
}

void RunLock::check_parent() const {
    AG_CHECK(detail::still_at(parent_fd_, path_.parent_path()), IoError,
             "{}: cannot save the run: {}, the directory it is in, was moved or replaced since training "
             "started; not writing it there (the run went with the directory)",
             shown_path(dir_), shown_path(path_.parent_path()));
}

void RunLock::check_held() {
    check_parent();
    if (fd_ >= 0 && names_file(path_, fd_)) return;
    // Removed (or replaced) under us: whoever opens the path now gets another file, so this
    // lock no longer excludes anyone. The old descriptor keeps its flock until the new one holds.
    const int old = fd_;
    fd_ = -1;
    try {
        acquire();
    } catch (...) {
        if (old >= 0) ::close(old);
        throw;
    }
    if (old >= 0) ::close(old);
}

void RunLock::acquire() {
    const fs::path& dir = dir_;
    // The holder removes the file when done: a lock taken on a file removed meanwhile is no
    // lock, so it is taken again on the file the path now names.
    for (;;) {
        bool created = false;
        fd_ = open_lock_file(path_, created);
        if (fd_ < 0 && errno == ELOOP) {
            throw IoError(
                fmt::format("{}: the lock file {} is a symbolic link; attograd does not write "
                            "through it: remove it",
                            shown_path(dir), shown_path(path_)));
        }
        if (fd_ < 0 && errno == ENAMETOOLONG && path_.filename().native().size() > NAME_MAX) {
            throw IoError(fmt::format(
                "{}: its name is {} bytes, too long for the name of its lock file (.NAME.lock), past "
                "the {} a name may have: rename the run to at most {} bytes",
                shown_path(dir), path_.filename().native().size() - 6, NAME_MAX, NAME_MAX - 6));
        }
        AG_CHECK(fd_ >= 0, IoError, "{}: cannot create the lock file {}: {}", shown_path(dir),
                 shown_path(path_), std::strerror(errno));
        if (!created && !owned_here(fd_, path_.parent_path())) {
            struct stat st {};
            ::fstat(fd_, &st);
            ::close(fd_);
            fd_ = -1;
            throw IoError(
                fmt::format("{}: the lock file {} is owned by uid {} in a sticky world-writable "
                            "directory; attograd does not take another user's file: remove it",
                            shown_path(dir), shown_path(path_), st.st_uid));
        }
        if (!created && !is_lock_file(fd_)) {
            ::close(fd_);
            fd_ = -1;
            throw IoError(
                fmt::format("{}: {} is not a lock file attograd left (not a regular file with one "
                            "link holding a PID); attograd does not overwrite it: remove it",
                            shown_path(dir), shown_path(path_)));
        }
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int error = errno;
            char text[32] = {};
            ssize_t n = ::pread(fd_, text, sizeof text - 1, 0);
            if (n > 0 && text[n - 1] == '\n') --n;
            ::close(fd_);
            fd_ = -1;
            AG_CHECK(
                error != EWOULDBLOCK, RunBusy,
                "{} is being written by another process (pid {}: a train, or an inspect writing into it)",
                shown_path(dir), n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "unknown");
            throw IoError(fmt::format("{}: cannot lock {}: {}", shown_path(dir), shown_path(path_),
                                      std::strerror(error)));
        }
        if (names_file(path_, fd_)) break;
        ::close(fd_);
        fd_ = -1;
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the PID; the message of a second writer says "pid unknown".
    }
}

RunLock::~RunLock() {
    if (fd_ >= 0) {
        // Still locked: whoever opened it meanwhile retries on a new file. Only the file this lock
        // holds is removed, not whatever took its name, and in the directory it was made in even
        // when that was moved meanwhile.
        struct stat held {};
        struct stat named {};
        const std::string name = path_.filename().string();
        if (::fstat(fd_, &held) == 0 &&
            ::fstatat(parent_fd_, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev)
            ::unlinkat(parent_fd_, name.c_str(), 0);
        ::close(fd_);
    }
    if (parent_fd_ >= 0) ::close(parent_fd_);
    // Only while empty, and never a link put in a folder's place (rmdir does not remove one).
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());
}

std::optional<RunLock> lock_if_inside(const fs::path& run_dir, const fs::path& destination,
                                      const char* command) {
    const fs::path run = landing_path(run_dir), to = landing_path(destination);
    if (std::mismatch(run.begin(), run.end(), to.begin(), to.end()).first != run.end()) return std::nullopt;
    try {
        return std::optional<RunLock>(std::in_place, run_dir);
    } catch (const RunBusy& e) {
        throw RunBusy(
            fmt::format("{}; {} writes into a run only while no train writes it: pass --to a path "
                        "outside {}",
                        e.what(), command, shown_path(run_dir)));
    }
}

void refuse_run_file(const fs::path& run_dir, const fs::path& destination, const char* command) {
    const fs::path run = landing_path(run_dir), to = landing_path(destination);
    // Any run's lock file and staging directories beside it are its writers' own: `.NAME.lock` or
    // `.NAME.staging-*` next to an entry NAME (this run's, or another one's that may be training).
    const fs::path entry = writer_entry_on(to);
    AG_CHECK(entry.empty(), IoError,
             "{}: --to {} is the lock file or a staging directory of the run {}, which only the run's "
             "writer uses: write it elsewhere",
             command, shown_path(destination), shown_path(entry_owner_run(entry)));
    // Another run: one a train is writing (before its first save too) finds nothing of ours in
    // its place or inside it, and a saved one holds only its own files, which a save checks.
    for (fs::path up = to; !up.empty() && up != up.parent_path() && up != run; up = up.parent_path())
        AG_CHECK(
            !has_lock_file(up), IoError,
            "{}: --to {} is in the place of the run {}, which a train is writing or was killed writing (its "
            "lock file is beside it; remove that if no train runs): write it elsewhere",
            command, shown_path(destination), shown_path(up));
    AG_CHECK(to.parent_path() == run || !holds_saved_run(to.parent_path()), IoError,
             "{}: --to {} is in the run directory {}, which holds only the run's own files (a save checks "
             "every one): write it outside that run or into a folder of it",
             command, shown_path(destination), shown_path(to.parent_path()));
    AG_CHECK(to != run && to.parent_path() != run, IoError,
             "{}: --to {} is in the run directory {} itself, which holds only the run's own files (a save "
             "replaces them and checks every one): write it outside the run or into a folder of it",
             command, shown_path(destination), shown_path(run_dir));
}

}  // namespace attograd::train
