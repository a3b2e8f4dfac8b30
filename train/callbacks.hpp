// The Trainer's callbacks, named as PyTorch Lightning's: ModelCheckpoint, EarlyStopping,
// CSVLogger, a progress bar, the divergence rule and attention snapshots over training.
#pragma once

#include "inspect/snapshot.hpp"
#include "train/progress.hpp"
#include "train/trainer.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attograd::train {

/// ModelCheckpoint's settings (Lightning's ModelCheckpoint arguments).
struct ModelCheckpointOptions {
    /// Save every this many steps; 0: only at validations (and at the end).
    std::int64_t every_n_train_steps = 100;
    /// Also save after each step that is a multiple of the Trainer's val_check_interval.
    bool save_on_validation = true;
};

/// Saves the run directory (Trainer::save_checkpoint) every N steps and at validations. The
/// Trainer itself always saves at the end of fit() and when a signal stops it; this callback
/// bounds what a crash or `kill -9` loses. Throws ValueError when every_n_train_steps < 0.
class ModelCheckpoint : public Callback {
public:
    /// Saves the run as `options` say (every N steps and at validation).
    explicit ModelCheckpoint(ModelCheckpointOptions options = {});
    void on_train_batch_end(Trainer& trainer) override;

private:
    ModelCheckpointOptions options_;
};

/// EarlyStopping's settings (Lightning's `monitor`, `stopping_threshold`, `mode`).
struct EarlyStoppingOptions {
    std::string monitor{};          ///< a validation metric's name
    double stopping_threshold = 0;  ///< stop once the metric reaches it
    std::string mode = "max";       ///< "max": reached when >= the threshold; "min": when <=
    bool stop = true;               ///< false: only record whether the target was reached
    /// Lightning's check_finite: a monitored value that is NaN or infinite ends fit() with a
    /// ValueError saying so (a NaN never reaches the target, and config.json cannot hold it).
    bool check_finite = true;
};

/// Stops training once a validation metric reaches its target (Lightning's EarlyStopping with
/// `stopping_threshold`). Its state "reached_target" is saved, so that a resumed run that had
/// reached it stops at once. Throws ValueError for an empty monitor or a mode other than
/// "max" / "min", and (at a validation) when the metrics lack the monitored one or, with
/// check_finite, when it is NaN or infinite.
class EarlyStopping : public Callback {
public:
    /// Stops when `options.monitor` reaches `options.stopping_threshold` (ValueError for bad options).
    explicit EarlyStopping(EarlyStoppingOptions options);
    void on_fit_start(Trainer& trainer) override;
    void on_validation_end(Trainer& trainer, const Metrics& metrics) override;
    nlohmann::json state_dict() const override;
    void load_state_dict(const nlohmann::json& progress) override;
    /// Whether the last validation reached the target.
    bool reached() const { return reached_; }

private:
    EarlyStoppingOptions options_;
    bool reached_ = false;
};

/// DivergenceMonitor's settings.
struct DivergenceMonitorOptions {
    double factor = 4.0;         ///< "far above": more than factor x the run's first loss
    std::int64_t patience = 20;  ///< for this many steps in a row
    /// Appended to each message, what to change.
    std::string hint = "try a lower learning rate or gradient clipping";
};

/// The divergence rule: training has diverged when a step's loss (logs["loss"]) is not finite,
/// when it has stayed above factor x the run's first loss for `patience` steps in a row, or
/// when an optimizer step made a parameter NaN or infinite. Throws Diverged ("training diverged
/// at step N: ...; HINT"), so that a run does not go on to save garbage as a result. Its state
/// (initial_loss, high_loss_steps) is saved and resumed. Throws ValueError when factor <= 1 or
/// patience < 1, and from load_state_dict when high_loss_steps is not below the patience (the
/// run would have stopped).
class DivergenceMonitor : public Callback {
public:
    /// Watches the loss with the rule `options` set (throws train::Diverged when it fires).
    explicit DivergenceMonitor(DivergenceMonitorOptions options = {});
    void on_before_backward(Trainer& trainer, const StepOutput& output) override;
    void on_after_optimizer_step(Trainer& trainer, const StepOutput& output) override;
    nlohmann::json state_dict() const override;
    void load_state_dict(const nlohmann::json& progress) override;

private:
    DivergenceMonitorOptions options_;
    double initial_loss_ = 0.0;  ///< the first step's loss; 0 before it
    std::int64_t high_loss_steps_ = 0;
};

/// A CSV column: the key of a step log or validation metric, and its header.
struct CSVColumn {
    std::string key;     ///< the metric's key in the step logs or validation metrics
    std::string header;  ///< the column's header in the CSV file
};

/// CSVLogger's settings.
struct CSVLoggerOptions {
    std::string filename = "metrics.csv";  ///< in the run directory
    /// Means of step logs over the rows' window ({:.6f}; empty when a log is missing).
    std::vector<CSVColumn> train_columns = {{"loss", "loss"}};
    /// Validation metrics ({:.6f}; empty in rows without a validation).
    std::vector<CSVColumn> val_columns{};
};

/// Writes one CSV row per Trainer::on_log (Lightning's CSVLogger): `step,<train
/// columns>,<validation columns>,lr,seconds`, with lr as {:.6g} and seconds as {:.3f}. The
/// file is part of every checkpoint and is read back on resume, so a resumed run's file equals
/// the uninterrupted run's up to the seconds column. Throws ValueError for a filename that is
/// not a plain file name or a column without key or header.
class CSVLogger : public Callback {
public:
    /// Writes the columns `options` name to the run's metrics CSV.
    explicit CSVLogger(CSVLoggerOptions options = {});
    void on_log(Trainer& trainer, const Metrics& means, const std::optional<Metrics>& validation,
                double lr) override;
    void save_files(Trainer& trainer, RunWriter& writer) override;
    void load_files(Trainer& trainer, const std::filesystem::path& dir) override;
    /// The whole file so far (header first).
    const std::string& text() const { return text_; }
    /// The header line (with its newline).
    std::string header() const;

private:
    CSVLoggerOptions options_;
    std::string text_;
};

/// Training progress on a terminal (Lightning's progress bar): a bar with the step, the mean
/// loss and `metric` of the open log window, steps/s and ETA, redrawn on a TTY only (see
/// Progress), cleared at the end. Quiet on the processes that are not is_global_zero.
class ProgressBar : public Callback {
public:
    /// `metric`: the step log shown as "acc" ("" for none); `quiet`: draw nothing.
    explicit ProgressBar(std::string metric = "accuracy", bool quiet = false);
    void on_fit_start(Trainer& trainer) override;
    void on_after_optimizer_step(Trainer& trainer, const StepOutput& output) override;
    void on_fit_end(Trainer& trainer) override;
    void on_signal(Trainer& trainer, int signal) override;
    /// Prints a whole line above the bar (nothing when quiet).
    void line(const std::string& text);

private:
    std::string metric_;
    bool quiet_;
    std::unique_ptr<Progress> progress_;
};

/// AttentionSnapshots' settings.
struct AttentionSnapshotsOptions {
    inspect::SnapshotOptions snapshot{};                       ///< the period and the most snapshots kept
    std::string filename = "attention_snapshots.safetensors";  ///< the file in the run directory
    /// On resume, continue with the period the earlier run had reached (it doubles as the
    /// snapshots are thinned); false when the period was changed for the resumed run.
    bool resume_period = true;
    /// On resume, called with the saved snapshots (none after the resumed step: load_files
    /// refuses a later one with an IoError naming the file) and that step before they are used (e.g. to check
    /// their tokens and steps against the run); a ValueError it throws becomes an IoError naming the file.
    /// Empty: no check beyond load_snapshots'.
    std::function<void(const std::vector<inspect::AttentionSnapshot>&, std::int64_t)> check_loaded{};
};

/// Attention snapshots over training (inspect::AttentionSnapshotter): the probes' attention
/// before every options.every-th step and after the last, saved as `filename` in the run
/// directory (inspect::save_snapshots) and continued on resume, thinned as the uninterrupted
/// run thins them (state "snapshot_period"). Snapshots draw no random numbers, so training is
/// the same with and without them. Throws as inspect::AttentionSnapshotter.
class AttentionSnapshots : public Callback {
public:
    /// `model` must outlive the callback.
    AttentionSnapshots(nn::Module& model, std::vector<inspect::SnapshotProbe> probes,
                       AttentionSnapshotsOptions options = {});
    void on_train_batch_start(Trainer& trainer, std::int64_t step) override;
    void on_fit_end(Trainer& trainer) override;
    nlohmann::json state_dict() const override;
    void load_state_dict(const nlohmann::json& progress) override;
    void save_files(Trainer& trainer, RunWriter& writer) override;
    void load_files(Trainer& trainer, const std::filesystem::path& dir) override;
    /// The snapshots taken so far (and loaded on resume), oldest first.
    const std::vector<inspect::AttentionSnapshot>& snapshots() const { return snapshotter_.snapshots(); }

private:
    inspect::AttentionSnapshotter snapshotter_;
    AttentionSnapshotsOptions options_;
    std::int64_t saved_period_ = 0;  ///< a resumed run's period (0: none)
};

}  // namespace attograd::train
