// Reading a run directory: config.json bounded and parsed, checkpoints checked for NaN, and every
// read of a directory that a writer may swap meanwhile taken from one generation.
//
// The layout a Trainer writes (train/trainer.hpp; train/run_writer.hpp writes each generation):
//
//   DIR/config.json            the user's settings (any JSON object fields), "progress" (the
//                              Trainer's and callbacks' state_dict()s), "files" (each other file's
//                              size and checksum) and config.json's own checksum
//   DIR/model.safetensors      the model's state_dict
//   DIR/optimizer.safetensors  the optimizer's state ("optimizer." keys) and the learning-rate
//                              schedule's ("schedule.last_epoch")
//   DIR/metrics.csv            CSVLogger's rows
//   DIR/attention_snapshots.safetensors  AttentionSnapshots' snapshots (when used)
//   DIR/...                    any file a callback adds (Callback::save_files)
#pragma once

#include "core/error.hpp"
#include "core/tensor.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

namespace attograd::train {

/// Reads and parses a config.json: a regular file of at most 64 MiB, JSON nested at most 64
/// levels. Throws IoError naming the path otherwise, or when it is not valid JSON.
nlohmann::json read_run_json(const std::filesystem::path& path);

/// Throws IoError naming `file` and the tensor when a floating tensor of `state` holds NaN or
/// Inf: a flipped byte can leave a well-formed checkpoint whose weights would be drawn as
/// confident garbage, or whose optimizer state would look like a diverged run.
void check_all_finite(const std::map<std::string, Tensor>& state, const std::filesystem::path& file);

/// Holds the directory at `dir` open (O_DIRECTORY) so that a reader can tell whether `dir`
/// still names it: a writer swaps in each new generation as a new directory (run_writer.hpp),
/// and the held one cannot be replaced by a later directory of the same inode while open.
class DirectoryPin {
public:
    /// Opens `dir`; when that fails the pin is empty and moved() is false (the reader reports
    /// the missing directory itself).
    explicit DirectoryPin(const std::filesystem::path& dir);
    ~DirectoryPin();
    DirectoryPin(const DirectoryPin&) = delete;
    DirectoryPin& operator=(const DirectoryPin&) = delete;
    /// True when `dir` now names another directory (or none) than the one opened.
    bool moved() const;

private:
    std::filesystem::path dir_;
    int fd_ = -1;
};

/// The attempts read_consistently() makes before it gives up on a run that keeps changing.
inline constexpr int kRunReadAttempts = 64;

/// Runs `read()`, which reads files of the run directory `dir` by path, so that all it reads
/// comes from one generation: when `dir` was swapped for a new generation while it ran (a
/// Trainer writing the run), its result or IoError is discarded and it runs again. Without this
/// a reader could check an old config.json against a new optimizer file and report false
/// corruption. Each retry means a whole new save landed meanwhile, so only a writer saving
/// continuously exhausts the kRunReadAttempts attempts; then it throws IoError saying the run
/// kept changing (never a mixed generation, never a false "corrupted"). Rethrows what `read()`
/// throws when `dir` did not move. A `read` that takes a `std::shared_ptr<const DirectoryPin>`
/// is given the pin of the generation it reads, to keep: a file read later from `dir` is of that
/// generation as long as the pin has not moved().
template <class Read>
auto read_consistently(const std::filesystem::path& dir, Read&& read) {
    for (int attempt = 1; attempt <= kRunReadAttempts; ++attempt) {
        const auto pin = std::make_shared<const DirectoryPin>(dir);
        try {
            auto result = [&] {
                if constexpr (std::is_invocable_v<Read&, std::shared_ptr<const DirectoryPin>>)
                    return read(pin);
                else
                    return read();
            }();
            if (!pin->moved()) return result;
        } catch (const IoError&) {
            if (!pin->moved()) throw;
        }
    }
    throw IoError(
        fmt::format("{}: the run was saved again {} times while being read (a train is writing it "
                    "without pause); try again",
                    dir.string(), kRunReadAttempts));
}

/// Opens the run directory `dir` for reading: it must exist, be a directory and hold a
/// config.json, whose own checksum and every listed file's size and checksum are verified
/// (train/run_writer.hpp). Returns config.json. Throws IoError naming the path and what is wrong
/// ("no such run directory", "is a regular file, not a run directory", "not a run directory (no
/// config.json ...)", a checksum that differs). Call it inside read_consistently().
nlohmann::json open_run(const std::filesystem::path& dir);

/// Reads the safetensors checkpoint `file` of a run and checks it as check_all_finite(). Throws
/// IoError naming the file.
std::map<std::string, Tensor> load_checkpoint(const std::filesystem::path& file);

}  // namespace attograd::train
