// A run directory: what `train` writes and `eval` / `inspect` / `train --resume` read.
//
//   DIR/config.json         the RunConfig (format version, task, model, training, vocabulary),
//                           the run's progress, and "files": each other file's size and
//                           checksum, verified on load. A generation of the directory is
//                           written whole and swapped in with one rename (run_writer.hpp), so
//                           DIR is always the last complete checkpoint.
//   DIR/model.safetensors   the model's state_dict
//   DIR/optimizer.safetensors  the optimizer's and schedule's state (for --resume)
//   DIR/metrics.csv         step, loss, accuracies, lr, seconds
//   DIR/heldout.tsv         user data runs: the held-out examples
//   DIR/attention_snapshots.safetensors  the first held-out examples' attention every
//                           --snapshot-every steps (inspect::save_snapshots; absent when off)
#pragma once

#include "config.hpp"
#include "core/error.hpp"
#include "data/translate_task.hpp"
#include "data/tsv.hpp"
#include "models.hpp"
#include "train/callbacks.hpp"
#include "train/run_dir.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attograd::cli {

using train::check_all_finite;
using train::read_consistently;
using train::read_run_json;

/// config.json's "progress": how far training got, and what a resumed run needs to continue
/// exactly as the uninterrupted one would have.
struct RunProgress {
    std::int64_t steps_done = 0;
    /// The Trainer's seed (train.seed, which it checks on resume).
    std::optional<std::uint64_t> seed;
    double seconds = 0.0;  ///< training time so far (wall clock)
    double heldout_token_accuracy = 0.0;
    double heldout_sequence_accuracy = 0.0;
    bool reached_target = false;
    double window_loss_sum = 0.0;  ///< sums over the steps since the last metrics.csv line
    double window_accuracy_sum = 0.0;
    std::int64_t window_steps = 0;
    double initial_loss = 0.0;         ///< the first step's loss (0 before it): divergence's yardstick
    std::int64_t high_loss_steps = 0;  ///< consecutive steps with the loss far above initial_loss
    /// The attention snapshot period reached (train.snapshot_every doubled each time the
    /// 32-snapshot cap thinned them; 0 = none yet), so that a resumed run thins alike.
    std::int64_t snapshot_period = 0;
    /// A SIGINT / SIGTERM stopped the held-out evaluation after step steps_done: that step is in
    /// the window but its metrics line and evaluation are still to come, and a resumed run does
    /// them first (with pending_lr, the step's learning rate), as the uninterrupted one did.
    bool evaluation_pending = false;
    double pending_lr = 0.0;
    /// What the saved model predicts for each of the run's probes, and its mean cross-entropy on
    /// them (probe_outputs), recorded at each save, so that a model setting edited since, which
    /// keeps every weight's shape, is refused on load even without snapshots.
    std::optional<std::vector<std::vector<std::string>>> probe_predictions;
    std::optional<std::vector<double>> probe_losses;
    /// The kernels of the last save's process (KernelRecord): a resume on others warns.
    std::string gemm_library, cpu;
    /// The processes that took the first step (FirstStepRanks): its loss depends on them.
    std::int64_t first_step_ranks = 1;
};

/// The most seconds of training progress.seconds may record (63 years: an edit, never a run), and
/// the most a run may hold to be resumed: a resume adds one process's wall time, far less than
/// the difference, so train never saves seconds it would refuse to read.
inline constexpr double kRecordedSeconds = 2e9, kResumableSeconds = 1e9;

/// Reads config.json's "progress". Throws ValueError naming the field ("progress.steps_done")
/// when one has the wrong type or an impossible value, or when "progress", its seed, its
/// probes' records or its kernels are missing (train writes them at every save: without them a setting edited
/// since could not be told). Fields train writes only with some settings (snapshot_period, the
/// window's sums, the held-out accuracies) are checked by check_progress.
RunProgress read_progress(const nlohmann::json& json);
/// Refuses (ValueError, "config.json: progress.FIELD must be ..., got X") a field outside the
/// range train writes: counts in [0, steps done] (steps done in [0, train.steps]), accuracies
/// in [0, 1], seconds finite in [0, kRecordedSeconds], loss sums, initial_loss and pending_lr finite and
/// >= 0, an evaluation pending only with a step in the window.
void check_progress(const RunProgress& progress, const RunConfig& config);
/// Refuses (ValueError naming config.json: task.name) a task whose tokens are not all in the
/// run's vocabulary or whose sources or targets are longer than the model takes: config.json
/// edited to name another task than the model was trained on.
void check_task_fits(const RunConfig& config, const Task& task);
/// The "progress" object of config.json.
nlohmann::json to_json(const RunProgress& progress);

/// A run opened from its directory.
struct LoadedRun {
    std::filesystem::path dir;
    RunConfig config;
    nlohmann::json progress;  ///< config.json's "progress" object as saved (checked by read_progress)
    RunProgress counters;     ///< the same, read
    std::unique_ptr<Task> task;
    /// Whether `task` draws training examples: not a --data run's read without its TSV file.
    bool draws_training_examples = true;
    std::unique_ptr<Generator> generator;  ///< the model's generator (hard attention samples from it)
    std::shared_ptr<Model> model;
    /// The generation of `dir` that was read, held open: a file read from `dir` later (the
    /// report's metrics.csv and snapshots) is of the same save as long as it has not moved().
    std::shared_ptr<const train::DirectoryPin> generation;
};

/// Refuses (IoError naming DIR and `command`) to write what was read from `run` once DIR was saved
/// again since load_run read it (a train writing it meanwhile): the output would mix two saves,
/// or put a report of the older one into the newer.
void check_still_read(const LoadedRun& run, const char* command);

/// A --data TSV file read once: its examples, and the size and checksum config.json records
/// of it (task.data_bytes, task.data_fnv1a64).
struct TrainingData {
    data::TsvDataset dataset;
    std::uint64_t bytes = 0;
    std::string fnv1a64;
};

/// The translate task's options for language `lang` (the library's defaults otherwise).
data::TranslateTaskOptions translate_options(const std::string& lang);

/// Reads and parses the TSV file `path` (at most 256 MiB). Throws as data::TsvDataset::read.
TrainingData read_training_data(const std::filesystem::path& path, bool chars);

/// The vocabularies train builds for a --data run on `dataset`: its tokens in byte order, each
/// once (data::TsvDataset::symbols), for both sides (`separate` false: no target vocabulary), or
/// one of the sources' tokens (config.vocab) and one of the targets' (config.target_vocab). A
/// canonical order lets eval and inspect tell a reordered vocabulary without the data file.
std::pair<Vocabulary, std::optional<Vocabulary>> data_vocabularies(const data::TsvDataset& dataset,
                                                                   bool separate);

/// The held-out examples saved in `dir`/heldout.tsv of a --data run. Throws as
/// data::TsvDataset::read (a malformed file, `<unk>`, a control character, an empty target), and
/// IoError naming the file and the example when a token is not in config.json's vocabulary.
std::vector<data::Example> read_saved_heldout(const RunConfig& config, const std::filesystem::path& dir);

/// The files attograd writes in a run directory besides config.json (heldout.tsv for a
/// --data run only).
std::vector<std::string> run_file_names(bool data_run);

/// The columns of a run's metrics.csv (train::CSVLogger): loss and training token accuracy of
/// each logged step, then the held-out token and sequence accuracies of an evaluated one.
train::CSVLoggerOptions metrics_csv_options();

/// Refuses (IoError naming DIR/config.json and the name) a "files" entry of config.json `json`
/// that is not one of run_file_names(data_run): each save replaces the files listed and drops
/// the rest, so a hand-edited entry naming a file of the user's (notes.txt) would lose it.
/// A "files" field that is missing or not an object is left to train::open_run to refuse.
void check_run_file_names(const nlohmann::json& json, bool data_run, const std::filesystem::path& dir);

/// What config.json's task.heldout_fnv1a64 records of a task's held-out examples: the fnv1a64
/// (16 hex digits) of the TSV text data::to_tsv makes of them (a --data run's heldout.tsv).
std::string heldout_checksum(const std::vector<data::Example>& held_out, bool chars);

/// What a translate run records of its pairs in task.data_bytes and task.data_fnv1a64: the size
/// and fnv1a64 of the TSV text (data::to_tsv) of its training then its held-out examples, so that
/// eval, inspect and --resume refuse a task that this machine's gettext catalogs, changed since,
/// build differently.
std::pair<std::uint64_t, std::string> translate_pairs_checksum(const data::TranslateTask& task);

/// The task `config` names: a bundled task, or user data: the TSV file named in the config, or,
/// not `for_training` and without that file as the run started on it, the held-out examples
/// saved in `dir`/heldout.tsv (then `*draws_training_examples`, when given, is set false). For
/// training, throws IoError naming the TSV file when it is not the data the run started on (its
/// size or checksum differs from config.json's), which a resumed run would silently train and
/// evaluate on. Otherwise, when the TSV file is still there with the size and checksum the run
/// started on, throws IoError naming heldout.tsv when it is not that file's held-out split.
std::unique_ptr<Task> task_for_run(const RunConfig& config, const std::filesystem::path& dir,
                                   bool for_training, bool* draws_training_examples = nullptr);

/// Opens `dir`: reads config.json (refusing other format versions), checks every file's size
/// and checksum against it, rebuilds the task and the model and loads model.safetensors.
/// Throws IoError naming the file when the directory or a file is missing, unreadable, not a
/// regular file or corrupt, or when the checkpoint does not fit config.json;
/// ValueError for a bad config. The model is in eval mode. Reads through read_consistently(),
/// so a run being written meanwhile loads as one generation.
LoadedRun load_run(const std::filesystem::path& dir, bool for_training = false);

}  // namespace attograd::cli
