// Writing a run directory: staging directory, checksummed files, config.json last, one swap.
#include "train/run_writer.hpp"
#include "train/file_io.hpp"
#include "train/run_lock.hpp"

#include "core/atomic_file.hpp"
#include "core/detail/held_directory.hpp"
#include "core/detail/process_umask.hpp"
#include "core/detail/sticky_owner.hpp"
#include "core/detail/unique_suffix.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/protected_path.hpp"
#include "core/serialization.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

namespace attograd::train {

namespace {

namespace fs = std::filesystem;

std::string staging_prefix(const fs::path& dir) {
    return fmt::format(".{}.staging-", dir.filename().string());
}

/// The PID in a staging directory's name `.NAME.staging-PID-N`, or 0.
pid_t staging_pid(const std::string& name, const std::string& prefix) {
    if (name.rfind(prefix, 0) != 0) return 0;
    long pid = 0;
    const char* begin = name.data() + prefix.size();
    const auto [end, error] = std::from_chars(begin, name.data() + name.size(), pid);
    return error == std::errc() && *end == '-' && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

/// The files a generation's config.json lists; empty when it cannot be read (a generation
/// whose writer died before config.json: nothing in it but run files).
std::set<std::string> listed_files(const fs::path& generation) {
    std::set<std::string> names;
    try {
        const std::string text = read_file(generation / "config.json", 64 << 20);
        check_json_depth(text, 64, "config.json");
        const auto json = nlohmann::json::parse(text);
        if (!json.is_object() || !json.contains("files") || !json["files"].is_object()) return names;
        for (const auto& [name, info] : json["files"].items()) names.insert(name);
        names.insert("config.json");
    } catch (const std::exception&) {
        names.clear();
    }
    return names;
}

/// Whether the entry `path` (not followed) may be taken as the caller's: anywhere but in a
/// sticky world-writable directory (/tmp), and there only when the caller (effective uid) or the
/// directory's owner owns it, as the kernel's protected_regular rule has it for files. Another
/// user may have planted anything else there.
bool owned_here(const fs::path& path) {
    struct stat entry {};
    struct stat parent {};
    if (::lstat(path.c_str(), &entry) != 0 || ::stat(path.parent_path().c_str(), &parent) != 0) return false;
    return detail::trusted_owner(entry.st_uid, parent);
}

/// The `n`th name (from 1) under which a user's entry `name` comes back beside one of the same
/// name: NAME.kept, NAME.kept-2, ...; NAME cut (at a UTF-8 character's start) so that the whole
/// fits the NAME_MAX bytes a file name may have.
std::string kept_name(const std::string& name, int n) {
    const std::string suffix = n == 1 ? ".kept" : fmt::format(".kept-{}", n);
    std::size_t keep = std::min(name.size(), std::size_t{NAME_MAX} - suffix.size());
    while (keep > 0 && keep < name.size() && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    return name.substr(0, keep) + suffix;
}

/// Moves the entries of `old` that are not its run files into `dir` (unless `dir` has one of
/// that name), then removes `old`. `old` is the directory a save replaced (`replaced`: every
/// entry not listed in its config.json is the user's, all of them when it has none, such as a
/// directory that was no run yet), or a dead
/// writer's staging directory (only run files and temporaries: moved only when it was committed).
void retire(const fs::path& old, const fs::path& dir, bool replaced, int dir_fd = -1) {
    std::error_code ec;
    // What a link put in DIR's place at the instant of the swap, or a directory another user
    // left: nothing is followed or taken from it. A link is removed (it now has the writer's
    // staging name); another user's directory is left where it is.
    if (fs::is_symlink(fs::symlink_status(old, ec))) {
        fs::remove(old, ec);
        return;
    }
    if (!owned_here(old)) return;
    const auto run_files = listed_files(old);
    bool kept_back = false;  // a user's entry that could not be moved: `old` stays, with it
    if ((replaced || !run_files.empty()) && fs::is_directory(dir, ec)) {
        // Into the directory swapped in, wherever it is now (dir_fd), or into `dir`.
        const int into = dir_fd >= 0 ? dir_fd : ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (const auto& entry : fs::directory_iterator(old, ec)) {
            const std::string name = entry.path().filename().string();
            if (run_files.contains(name)) continue;
            // A name DIR has already (say an inspect/ made since a killed save left this one
            // here) is the user's too: this one comes back beside it, as NAME.kept[-N].
            std::string free = name;
            struct stat st {};
            for (int n = 1;
                 into >= 0 && ::fstatat(into, free.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && n < 1000; ++n)
                free = kept_name(name, n);
            // Never over a name that appeared meanwhile.
            if (into < 0 ||
                ::renameat2(AT_FDCWD, entry.path().c_str(), into, free.c_str(), RENAME_NOREPLACE) != 0)
                kept_back = true;
            fault_point();
        }
        if (into >= 0 && into != dir_fd) ::close(into);
    }
    if (kept_back) return;
    fs::remove_all(old, ec);
    fault_point();
}

/// Refuses (IoError starting with `where`) a run directory `dir` that exists in a sticky
/// world-writable directory and belongs to another user (owned_here): a save would move its
/// entries, which that user chose, into the run.
void check_owned(const fs::path& dir, const std::string& where) {
    std::error_code ec;
    struct stat st {};
    AG_CHECK(!fs::exists(fs::symlink_status(dir, ec)) || owned_here(dir), IoError,
             "{}: is owned by uid {} in a sticky world-writable directory; not writing a run into another "
             "user's directory",
             where, ::lstat(dir.c_str(), &st) == 0 ? static_cast<long>(st.st_uid) : -1L);
}

/// Gives the new generation `staging` the permission bits of the run it replaces, `dir` (when
/// it exists): the directory's, and each file's of the same name (a private run stays private);
/// `new_dir_mode` when there is none.
void keep_modes(const fs::path& dir, const fs::path& staging, unsigned new_dir_mode) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        ::chmod(staging.c_str(), new_dir_mode);
        return;
    }
    ::chmod(staging.c_str(), st.st_mode & 07777);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(staging, ec)) {
        const fs::path before = dir / entry.path().filename();
        if (::lstat(before.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            ::chmod(entry.path().c_str(), st.st_mode & 07777);
    }
}

/// Refuses (IoError) to go on saving the run `dir` once its parent is no longer the directory
/// `parent_fd` the writer started in (moved aside, a link put in its place).
void check_parent(int parent_fd, const fs::path& dir) {
    AG_CHECK(detail::still_at(parent_fd, dir.parent_path()), IoError,
             "{}: cannot save the run: {}, the directory it is in, was moved or replaced while the run was "
             "written; not writing it there (the run went with the directory)",
             shown_path(dir), shown_path(dir.parent_path()));
}

/// Runs `write`, one step of saving a generation of the run `dir` whose parent the writer holds
/// open as `parent_fd`: an IoError it throws (a full disk, a file beyond `ulimit -f`) is rethrown
/// naming the run, whose directory is as it was, or saying that the parent was moved meanwhile.
template <class Write>
void saving(const fs::path& dir, int parent_fd, Write&& write) {
    check_parent(parent_fd, dir);
    try {
        write();
    } catch (const IoError& e) {
        check_parent(parent_fd, dir);
        std::error_code ec;
        const bool first_save = !fs::exists(fs::symlink_status(dir, ec));
        throw IoError(fmt::format("{}: cannot save the run ({}): {}", shown_path(dir),
                                  first_save ? "nothing was written" : "its directory is left as it was",
                                  e.what()));
    }
}

/// Removes the entry `name` of the open directory `parent` and, when it is a directory (never
/// followed through a link), everything in it.
void remove_tree_at(int parent, const std::string& name) {
    const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        std::vector<std::string> names;
        if (DIR* listing = ::fdopendir(fd)) {
            while (const dirent* entry = ::readdir(listing)) {
                const std::string entry_name = entry->d_name;
                if (entry_name != "." && entry_name != "..") names.push_back(entry_name);
            }
            for (const auto& entry_name : names)
                if (::unlinkat(fd, entry_name.c_str(), 0) != 0 && errno == EISDIR)
                    remove_tree_at(fd, entry_name);
            ::closedir(listing);
        } else {
            ::close(fd);
        }
        ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
        return;
    }
    ::unlinkat(parent, name.c_str(), 0);
}

bool plain_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

}  // namespace

void fault_point() {
    static const long kill_at = [] {
        const char* value = std::getenv("ATTOGRAD_TEST_KILL_AT");
        return value ? std::strtol(value, nullptr, 10) : 0L;
    }();
    static std::atomic<long> count{0};
    if (kill_at > 0 && ++count == kill_at) ::kill(::getpid(), SIGKILL);
}

bool holds_current_directory(const fs::path& dir) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (ec || cwd.empty()) return false;
    fs::path full;
    try {
        full = followed_path(dir, shown_path(dir));  // where the kernel goes: "missing/../link" too
    } catch (const IoError&) {
        return false;  // a link refused there is refused, with its reason, where it would be followed
    }
    return std::mismatch(full.begin(), full.end(), cwd.begin(), cwd.end()).first == full.end();
}

void check_not_current_directory(const fs::path& dir) {
    AG_CHECK(!holds_current_directory(dir), IoError,
             "{}: is the current directory or holds it; each save replaces the run directory with a new "
             "one, which would leave this process (and the shell that started it) in a deleted "
             "directory: choose a directory below it",
             shown_path(dir));
}

void check_room_for_saves(const fs::path& dir) {
    const fs::path full = followed_path(dir, shown_path(dir));
    // The name checked is the one the run is saved under: a link's target's.
    const std::string whose = full.filename() == dir.lexically_normal().filename()
                                  ? "its name"
                                  : fmt::format("the name it leads to ('{}')",
                                                data::escape_control(excerpt(full.filename().string(), 40)));
    // The staging directory beside it, ".NAME.staging-PID-N": a PID of up to 7 digits (pid_max is
    // at most 2^22), a counter of up to 20.
    const std::size_t name = full.filename().native().size(), staging = 1 + name + 9 + 7 + 1 + 20;
    AG_CHECK(staging <= NAME_MAX, IoError,
             "{}: {} is {} bytes, and the staging directory a save makes beside it (.NAME.staging-PID-N) "
             "would take up to {}, past the {} a name may have: choose a shorter name",
             shown_path(dir), whose, name, staging, NAME_MAX);
    // Both as the kernel resolves it and as given, which is how its files are opened.
    const std::size_t longest = std::max(full.native().size(), dir.native().size());
    AG_CHECK(longest + save_name_room < PATH_MAX, IoError,
             "{}: its path is {} bytes{}, and the names a save writes beside and inside it (a staging "
             "directory, temporary files) add up to {} more, past the {} the system takes: choose a shorter "
             "path",
             shown_path(dir), longest, longest == full.native().size() ? "" : " as given", save_name_room,
             PATH_MAX - 1);
}

void recover_killed_writers(const fs::path& dir) {
    const fs::path run = run_directory_path(dir);
    const std::string prefix = staging_prefix(run);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(run.parent_path(), ec)) {
        // Only a directory a writer made: anything else of that name (a symbolic link to
        // another run, say) is not followed, moved from or removed.
        const pid_t pid = staging_pid(entry.path().filename().string(), prefix);
        if (pid != 0 && pid != ::getpid() && entry.symlink_status(ec).type() == fs::file_type::directory &&
            owned_here(entry.path()) && ::kill(pid, 0) != 0 && errno == ESRCH)
            retire(entry.path(), run, false);
    }
}

RunWriter::RunWriter(fs::path dir) : dir_(run_directory_path(dir)) {
    check_not_current_directory(dir);
    AG_CHECK(!dir_.filename().empty() && dir_.has_parent_path() && dir_ != dir_.root_path(), IoError,
             "{}: not a directory name a run can be written to", shown_path(dir));
    std::error_code ec;
    const auto status = fs::symlink_status(dir_, ec);
    AG_CHECK(!fs::exists(status) || fs::is_directory(fs::status(dir_, ec)), IoError,
             "{}: exists and is not a directory", shown_path(dir));
    check_owned(dir_, shown_path(dir));
    dir_identity_ = detail::entry_identity(dir_);
    const fs::path parent = dir_.parent_path();
    make_directories_protected(parent, shown_path(dir));  // race-free against planted links
    parent_fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    AG_CHECK(parent_fd_ >= 0, IoError, "{}: cannot open the directory it goes in: {}", shown_path(dir),
             std::strerror(errno));
    recover_killed_writers(dir_);
    const std::string prefix = staging_prefix(dir_);
    // Made here and now (never an existing one, nor one a link points to): every file of the
    // generation is new in a directory only this writer writes. A name taken (left by an
    // earlier process of this PID, or planted) is passed over.
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
        staging_ =
            parent / fmt::format("{}{}-{}", prefix, ::getpid(), detail::unique_suffix(counter, attempt));
        if (::mkdir(staging_.c_str(), 0700) == 0) break;
        AG_CHECK(errno == EEXIST && attempt < 100, IoError, "{}: cannot create the directory {}: {}",
                 shown_path(dir), shown_path(staging_), std::strerror(errno));
    }
    created_ = true;
    // Private from the start while it is written (a private run's files are never readable in
    // between); it takes DIR's bits at the swap, or, for a new DIR, what mkdir gives under the
    // umask (and the set-group-ID bit a parent passes on).
    struct stat st {};
    new_dir_mode_ =
        (::stat(staging_.c_str(), &st) == 0 ? st.st_mode & 07000 : 0) | (0777 & ~detail::process_umask());
    staging_fd_ = ::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    AG_CHECK(staging_fd_ >= 0, IoError, "{}: cannot open the directory {}: {}", shown_path(dir),
             shown_path(staging_), std::strerror(errno));
}

RunWriter::~RunWriter() {
    if (created_ && !committed_) remove_tree_at(parent_fd_, staging_.filename().string());
    if (parent_fd_ >= 0) ::close(parent_fd_);
    if (staging_fd_ >= 0) ::close(staging_fd_);
}

void RunWriter::check_new_file(const std::string& name) const {
    AG_CHECK(plain_name(name) && name != "config.json", IoError, "RunWriter: '{}' is not a run file name",
             name);
    AG_CHECK(!files_.contains(name) && std::find(pending_.begin(), pending_.end(), name) == pending_.end(),
             ValueError,
             "RunWriter: '{}' is written twice in one save (two callbacks with the same file name?): the "
             "last would silently replace the first",
             name);
}

void RunWriter::write_file(const std::string& name, std::string_view contents) {
    check_new_file(name);
    // Names in the new staging directory are the writer's own: never written through a link.
    saving(dir_, parent_fd_,
           [&] { write_file_atomic(staging_ / name, contents, AtomicFile::Symlinks::refuse); });
    files_[name] = {{"bytes", contents.size()}, {"fnv1a64", fmt::format("{:016x}", fnv1a64(contents))}};
    fault_point();
}

void RunWriter::save_tensors(const std::string& name, const std::map<std::string, Tensor>& tensors) {
    check_new_file(name);
    const fs::path path = staging_ / name;
    saving(dir_, parent_fd_, [&] { save_safetensors(path, tensors, {}, AtomicFile::Symlinks::refuse); });
    files_[name] = {{"bytes", fs::file_size(path)}, {"fnv1a64", file_checksum(path)}};
    fault_point();
}

void RunWriter::write_with(const std::string& name, const std::function<void(const fs::path&)>& write) {
    check_new_file(name);
    pending_.push_back(name);
    saving(dir_, parent_fd_, [&] { write(staging_ / name); });
}

void RunWriter::commit(nlohmann::json config) {
    AG_CHECK(!committed_, IoError, "{}: RunWriter committed twice", shown_path(dir_));
    check_parent(parent_fd_, dir_);
    for (const auto& name : pending_) {
        const fs::path path = staging_ / name;
        AG_CHECK(fs::is_regular_file(path), IoError, "{}: was not written", shown_path(path));
        files_[name] = {{"bytes", fs::file_size(path)}, {"fnv1a64", file_checksum(path)}};
        fault_point();
    }
    config["files"] = files_;
    config[config_checksum_field] = config_checksum(config);
    saving(dir_, parent_fd_, [&] {
        write_file_atomic(staging_ / "config.json", config.dump(2) + "\n", AtomicFile::Symlinks::refuse);
    });
    fault_point();
    // DIR as it is now, not as it was when this writer started: a link or another user's
    // directory put in its place meanwhile is refused, and a private run stays private.
    std::error_code ec;
    AG_CHECK(!fs::is_symlink(fs::symlink_status(dir_, ec)), IoError,
             "{}: cannot save the run: the directory was replaced by a symbolic link while the run was "
             "written; not "
             "saving through it (remove the link)",
             shown_path(dir_));
    check_owned(dir_, shown_path(dir_));
    check_parent(parent_fd_, dir_);
    AG_CHECK(detail::entry_identity(dir_) == dir_identity_, IoError,
             "{}: cannot save the run: {} while the run was written; not saving over it (the run is "
             "wherever the directory it had went)",
             shown_path(dir_),
             dir_identity_.second == 0 ? "a directory appeared in its place"
                                       : "the directory was moved or replaced");
    keep_modes(dir_, staging_, new_dir_mode_);
    identity_ = detail::open_identity(staging_fd_);
    const fs::path old = replace_directory(staging_, dir_, shown_path(dir_));
    committed_ = true;
    fault_point();
    if (!old.empty()) retire(old, dir_, true, staging_fd_);
}

std::string config_checksum(nlohmann::json config) {
    if (config.is_object()) config.erase(config_checksum_field);
    return fmt::format("{:016x}", fnv1a64(config.dump()));
}

void verify_config_checksum(const nlohmann::json& config, const fs::path& path) {
    const bool present = config.is_object() && config.contains(config_checksum_field);
    AG_CHECK(present, IoError,
             "{}: missing field '{}' (config.json's own checksum; to load a config.json edited by hand, "
             "set \"{}\": \"{}\")",
             shown_path(path), config_checksum_field, config_checksum_field, config_unchecked);
    const auto& recorded = config[config_checksum_field];
    if (recorded == config_unchecked) return;
    AG_CHECK(recorded.is_string() && is_checksum_text(recorded.get<std::string>()), IoError,
             "{}: field '{}' must be 16 lowercase hex digits (as train writes it) or \"{}\", got {}",
             shown_path(path), config_checksum_field, config_unchecked,
             data::escape_control(excerpt(recorded.dump(), 40)));
    const std::string sum = config_checksum(config);
    AG_CHECK(
        recorded.is_string() && recorded.get<std::string>() == sum, IoError,
        "{}: checksum {} differs from the {} it records in '{}': the file was corrupted or changed after "
        "it was written (to load a config.json edited by hand, set \"{}\": \"{}\")",
        shown_path(path), sum, excerpt(recorded.dump()), config_checksum_field, config_checksum_field,
        config_unchecked);
}

void verify_run_files(const nlohmann::json& config, const fs::path& dir) {
    const std::string where = shown_path(dir / "config.json");
    AG_CHECK(config.contains("files"), IoError, "{}: missing field 'files' (the run's file checksums)",
             where);
    AG_CHECK(config["files"].is_object(), IoError,
             "{}: field 'files' must be an object of the run's file checksums, got {}", where,
             config["files"].type_name());
    for (const auto& [name, info] : config["files"].items()) {
        AG_CHECK(plain_name(name), IoError, "{}: files: '{}' is not a file name in the run directory", where,
                 excerpt(name));
        const bool ok = info.is_object() && info.contains("bytes") && info["bytes"].is_number_unsigned() &&
                        info.contains("fnv1a64") && info["fnv1a64"].is_string();
        AG_CHECK(ok, IoError, "{}: field 'files.{}' must be {{\"bytes\": N, \"fnv1a64\": \"HEX\"}}", where,
                 excerpt(name));
        // Checked before the file is read: a malformed record is the config's fault, not the file's.
        const std::string recorded = info["fnv1a64"].get<std::string>();
        AG_CHECK(
            is_checksum_text(recorded), IoError,
            "{}: field 'files.{}.fnv1a64' must be 16 lowercase hex digits (as train writes it), got '{}'",
            where, excerpt(name), data::escape_control(excerpt(recorded, 40)));
        const fs::path path = dir / name;
        const InputFile file(path, shown_path(path));
        const auto expected = info["bytes"].get<std::uint64_t>();
        const auto wrong_size = [&](std::uint64_t size) {
            return IoError(fmt::format(
                "{}: holds {} bytes but config.json records {} (truncated or replaced after it was written)",
                shown_path(path), size, expected));
        };
        if (file.size() != expected) throw wrong_size(file.size());  // before reading a byte of it
        const std::string bytes = file.read_all(static_cast<std::size_t>(1) << 32);
        if (bytes.size() != expected) throw wrong_size(bytes.size());  // changed while read
        const std::string sum = fmt::format("{:016x}", fnv1a64(bytes));
        AG_CHECK(sum == recorded, IoError,
                 "{}: checksum {} differs from the {} config.json records: the file was corrupted or changed "
                 "after it was written",
                 shown_path(path), sum, recorded);
    }
    // Every file train writes is recorded: an entry deleted from a hand-edited ("unchecked")
    // config.json would let its file be read unchecked.
    for (const char* name :
         {"model.safetensors", "optimizer.safetensors", "metrics.csv", "attention_snapshots.safetensors"}) {
        AG_CHECK(config["files"].contains(name) || !fs::exists(dir / name), IoError,
                 "{}: field 'files' has no entry for {}, which the run holds (every file train writes is "
                 "recorded with its size and checksum)",
                 where, name);
    }
}

}  // namespace attograd::train
