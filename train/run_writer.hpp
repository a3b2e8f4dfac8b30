// Writing a run directory so that no complete run is ever lost: each generation is written
// whole into a staging directory next to DIR and swapped in with one rename.
#pragma once

#include "core/tensor.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::train {

/// Takes up what writers of the run `dir` that were killed left beside it: each dead writer's
/// staging directory `.NAME.staging-PID-N` (the caller's or, in a sticky world-writable
/// directory, not another user's), whose user entries (an `inspect/` report, notes) a save killed
/// after its swap had not yet moved into DIR: they move in now (as NAME.kept, NAME.kept-2 ...
/// beside an entry of their name made since), and the directory is removed. Call it holding the
/// run's lock (RunLock does, and so does RunWriter); nothing is thrown.
void recover_killed_writers(const std::filesystem::path& dir);

/// Bytes a save's names may add to the run directory's path: its staging directory beside it
/// (`.NAME.staging-PID-N`) and a temporary file inside that (`.FILE.tmp.PID.N`).
inline constexpr std::size_t save_name_room = 128;

/// Throws IoError naming `dir` when its path, links resolved, leaves less than save_name_room
/// bytes below the system's PATH_MAX, or its name leaves no room in NAME_MAX for its staging
/// directory's (any PID, any counter): a save would fail for a name too long after the steps
/// before it were spent. Trainer::fit calls it before the first step.
void check_room_for_saves(const std::filesystem::path& dir);

/// One generation of a run directory DIR (see run_dir.hpp). Files go into `.NAME.staging-PID-N`
/// next to DIR; commit() writes config.json last, recording every file's size and checksum in
/// its "files" field, then swaps the staging directory in place of DIR with one atomic rename
/// (attograd::replace_directory). So at every instant DIR is either its old complete contents
/// or the new ones, and a killed writer leaves at most a staging directory beside it, which the
/// next writer removes. Entries of the old DIR that are not run files (an `inspect/` report,
/// the user's notes) move over to the new one after the swap; they are missing from DIR only
/// in that moment, and a writer killed then leaves them for the next writer to move.
class RunWriter {
public:
    /// Creates the staging directory (and DIR's parent), after removing stale staging
    /// directories of DIR's writers that are no longer running. DIR is resolved by
    /// run_directory_path: a run reached through a symbolic link is written where the link
    /// points, and the link stays. Throws IoError naming the path when DIR exists and is not a
    /// directory, is the current directory or holds it (check_not_current_directory), or when
    /// the directory cannot be created.
    explicit RunWriter(std::filesystem::path dir);
    /// Removes the staging directory unless commit() succeeded (in the directory it was made in,
    /// even when that was moved meanwhile). The staging directory is private (0700) until the
    /// swap, when it takes DIR's permission bits (a new DIR: the umask's).
    ~RunWriter();
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    /// Writes `name` (a plain file name) into the new generation. Every file of the run goes
    /// through here or save_tensors(), so config.json's checksums cover it. Throws IoError, and
    /// ValueError when this save has written `name` already (as do save_tensors and write_with).
    void write_file(const std::string& name, std::string_view contents);
    /// Saves `tensors` as the safetensors file `name` of the new generation. Throws as
    /// attograd::save_safetensors does.
    void save_tensors(const std::string& name, const std::map<std::string, Tensor>& tensors);
    /// Writes file `name` of the new generation by calling `write(path)`, for writers that take
    /// a path (e.g. inspect::save_snapshots); its size and checksum are recorded at commit().
    /// Throws IoError for a name that is not a plain file name, or naming the run when `write`
    /// throws IoError.
    void write_with(const std::string& name, const std::function<void(const std::filesystem::path&)>& write);
    /// Adds "files" and config.json's own checksum (config_checksum()) to `config`, writes it as
    /// config.json and swaps the generation in. Throws
    /// IoError when a step fails (DIR is then as it was), and when DIR itself or its parent was
    /// moved or replaced since the writer started (another directory there is not merged).
    void commit(nlohmann::json config);
    /// (st_dev, st_ino) of the directory commit() swapped in as DIR, or (0, 0) before: what DIR is
    /// as long as nothing else is put in its place (taken before the swap, so a directory moved
    /// there right after it is not mistaken for the run).
    std::pair<std::uint64_t, std::uint64_t> identity() const { return identity_; }

private:
    // IoError unless `name` is a plain file name other than config.json; ValueError when this
    // save has written it already.
    void check_new_file(const std::string& name) const;

    std::filesystem::path dir_, staging_;
    int parent_fd_ = -1;  ///< DIR's parent as it was when this writer started
    /// DIR as it was when this writer started (device and inode; 0, 0: it did not exist), so
    /// that a directory put in its place meanwhile is not swapped out and merged into the run.
    std::pair<std::uint64_t, std::uint64_t> dir_identity_{0, 0};
    int staging_fd_ = -1;  ///< the staging directory, open: entries of the old DIR move into it
    std::pair<std::uint64_t, std::uint64_t> identity_{0, 0};
    unsigned new_dir_mode_ = 0;  ///< what mkdir gives a directory under the umask: a first save's DIR
    nlohmann::json files_ = nlohmann::json::object();
    std::vector<std::string> pending_;  ///< names written by write_with(), checksummed at commit()
    bool created_ = false;              ///< staging_ was made by this writer
    bool committed_ = false;
};

/// The field in which config.json records its own checksum.
inline constexpr const char* config_checksum_field = "config_fnv1a64";
/// The value of config_checksum_field that turns its check off (a hand-edited config.json).
inline constexpr const char* config_unchecked = "unchecked";

/// config.json's checksum of itself: fnv1a64 (16 hex digits) of `config` without
/// config_checksum_field, as compact JSON with sorted keys (nlohmann::json's dump()), so it
/// covers every setting, the progress and the "files" list.
std::string config_checksum(nlohmann::json config);

/// Checks config.json's own checksum: `config` (read from `path`) must hold
/// config_checksum_field equal to config_checksum(config), or "unchecked" (the documented way to
/// edit config.json by hand; the next save records a checksum again). Throws IoError naming
/// `path` when the field is missing or differs (a changed byte, a deleted "files" entry).
void verify_config_checksum(const nlohmann::json& config, const std::filesystem::path& path);

/// Checks every file that `config`'s "files" field lists in `dir`: present, a regular file, of
/// the recorded size and checksum. Throws IoError naming the file and what differs (a flipped
/// byte, a truncated or replaced file), or the field when "files" is malformed.
void verify_run_files(const nlohmann::json& config, const std::filesystem::path& dir);

/// Whether the directory `dir` is the current working directory or holds it. Each save swaps a
/// new directory in place of a run directory, which would leave this process (and the shell that
/// started it) in a deleted directory.
bool holds_current_directory(const std::filesystem::path& dir);

/// Throws IoError naming `dir` when holds_current_directory(dir): a run directory must not be
/// the current directory or hold it.
void check_not_current_directory(const std::filesystem::path& dir);

/// Test hook for fault injection: when the environment variable ATTOGRAD_TEST_KILL_AT is k,
/// the k-th call in this process (counting every file written and every rename of a run
/// directory) kills the process with SIGKILL, as a power cut or `kill -9` would at that
/// instant. Without the variable it does nothing.
void fault_point();

}  // namespace attograd::train
