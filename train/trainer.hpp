// The training loop as library code: a Trainer runs a user's step function with callbacks (in
// PyTorch Lightning's and Keras's manner), validates, logs, checkpoints into a run directory,
// saves and stops on SIGINT / SIGTERM / SIGHUP, and resumes a run bit for bit.
//
//     train::Trainer trainer(model, optimizer, {.max_steps = 1000, .default_root_dir = "runs/x"});
//     trainer.add_callback(std::make_shared<train::CSVLogger>());
//     trainer.fit(step, validate, train::ckpt_last);   // resumes runs/x when it holds a run
#pragma once

#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/tensor.hpp"
#include "nn/module.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/optimizer.hpp"
#include "train/interrupt.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attograd::train {

class Trainer;

/// Named scalar figures: a step's logs ("loss", "accuracy"), or validation metrics.
using Metrics = std::map<std::string, double>;

/// What one training step returns: the scalar loss to minimise (the Trainer calls backward()
/// on it) and figures to log. logs["loss"] defaults to loss.item(); set it when the figure to
/// report differs from the tensor minimised (e.g. a surrogate term added for REINFORCE).
struct StepOutput {
    Tensor loss{};   ///< the scalar to minimise (backward runs from it)
    Metrics logs{};  ///< figures to log by name
};

/// A training step: computes the loss of step `step` (the steps done before it, from 0) with
/// randomness drawn from `generator` only, which the Trainer seeds with step_seed(seed, step)
/// before each step, so that a resumed run draws exactly what the uninterrupted one did.
/// The Trainer zeroes the gradients before it and runs backward, clipping and the optimizer
/// (and schedule) step after it.
using StepFunction = std::function<StepOutput(std::int64_t step, Generator& generator)>;
/// A validation pass: returns the metrics (e.g. {"val_accuracy", 0.97}). It may call
/// Trainer::check_interrupt() between batches so that Ctrl-C during a long validation saves
/// the run at once (the validation is then done again first on resume).
using ValidationFunction = std::function<Metrics()>;

/// A seed for step `step` of a run seeded `seed` (SplitMix64 of both; Steele, Lea and Flood
/// 2014), so that each step's randomness depends on the step, not on the steps before it.
std::uint64_t step_seed(std::uint64_t seed, std::int64_t step);

/// Loads a run's optimizer.safetensors contents `state` (as read from `file`) into `optimizer`
/// (its "optimizer." entries) and `scheduler` (its "schedule." entries; null for none), as
/// fit() does on resume; a program may call it first to report a bad file before it starts.
/// Throws IoError "FILE: does not fit this run: ..." with what the optimizer or schedule refused.
void load_optimizer_state(optim::Optimizer& optimizer, optim::LRScheduler* scheduler,
                          const std::map<std::string, Tensor>& state, const std::filesystem::path& file);

/// fit()'s `ckpt_path` that resumes the run in TrainerOptions::default_root_dir when it holds
/// one and starts a new run there otherwise (Lightning's `ckpt_path="last"`).
inline constexpr const char* ckpt_last = "last";

/// The Trainer's settings, named as PyTorch Lightning's Trainer arguments where it has them.
struct TrainerOptions {
    std::int64_t max_steps = 1000;  ///< optimizer steps of the whole run (>= 0)
    /// Validate every this many steps and after the last step; 0: after the last step only.
    std::int64_t val_check_interval = 0;
    /// Log (callbacks' on_log, e.g. a CSVLogger row) every this many steps and at every
    /// validation; each row holds the means of the step logs since the previous row.
    std::int64_t log_every_n_steps = 10;
    /// Clip the gradients' global 2-norm to this (optim::clip_grad_norm) before each optimizer
    /// step; 0: no clipping.
    double gradient_clip_val = 0.0;
    /// The seed of every step's generator (step_seed). Saved in the run ("progress.seed"): a
    /// resumed run must have the same seed, as it is the same run (max_steps may grow).
    std::uint64_t seed = 0;
    /// The run directory (train/run_dir.hpp) where checkpoints go; empty: nothing is saved. It
    /// must not be the current directory or hold it (each save swaps in a new directory).
    std::filesystem::path default_root_dir{};
    /// Whether SIGINT / SIGTERM / SIGHUP save the run (when it has a directory) and end fit() after the
    /// step under way (FitResult::signal); a second signal ends the process at once.
    bool handle_signals = true;
    /// This process writes the run (false on the other ranks of a data-parallel run).
    bool is_global_zero = true;
    /// A new run (fit() without ckpt_path) may replace a run in default_root_dir (files there
    /// that are not the run's are kept); otherwise that is refused.
    bool replace_run = false;
    /// Data-parallel runs: turns this process's signal (0 for none) into the one every rank
    /// acts on, called by every rank after every step (a collective, e.g. the highest signal
    /// of any rank), so that all ranks stop at the same step. Empty: this process's own.
    std::function<int(int)> sync_signal{};
};

/// What fit() did.
struct FitResult {
    std::int64_t global_step = 0;  ///< optimizer steps done in total (a resumed run's included)
    Metrics validation;            ///< the last validation's metrics (empty: none)
    bool stopped_early = false;    ///< a callback set should_stop (EarlyStopping)
    int signal = 0;                ///< SIGINT / SIGTERM / SIGHUP that stopped it after saving, else 0
};

/// A Trainer's hooks (PyTorch Lightning's Callback), called in this order for each step:
/// on_train_batch_start, (the step function), on_before_backward, (backward), on_after_backward, (clipping,
/// optimizer and schedule step), on_after_optimizer_step; when due, on_validation_end and on_log; then
/// on_train_batch_end. A callback that has state to resume returns it from state_dict() (saved
/// in config.json's "progress", so use keys no other callback uses) and files it keeps from
/// save_files() / load_files(). Hooks may throw; fit() then ends with the exception, leaving
/// the run directory at its last checkpoint.
class Callback {
public:
    virtual ~Callback() = default;
    /// Before the first step of fit() (after a resumed run's state was loaded).
    virtual void on_fit_start(Trainer&) {}
    /// Before step `step` (steps done so far).
    virtual void on_train_batch_start(Trainer&, std::int64_t /*step*/) {}
    /// After the step function, before backward (the logs hold "loss").
    virtual void on_before_backward(Trainer&, const StepOutput&) {}
    /// After backward, before clipping and the optimizer step (e.g. averaging gradients).
    virtual void on_after_backward(Trainer&, const StepOutput&) {}
    /// After the optimizer and schedule step; Trainer::global_step() counts this step.
    virtual void on_after_optimizer_step(Trainer&, const StepOutput&) {}
    /// After a validation with its `metrics` (also Trainer::callback_metrics()).
    virtual void on_validation_end(Trainer&, const Metrics& /*metrics*/) {}
    /// When a row is due: `means` of the step logs since the last row, `validation` when this
    /// step validated, `lr` the learning rate the step used.
    virtual void on_log(Trainer&, const Metrics& /*means*/, const std::optional<Metrics>& /*validation*/,
                        double /*lr*/) {}
    /// At the end of a step that did not end the run.
    virtual void on_train_batch_end(Trainer&) {}
    /// After the last step (not after a signal or an exception).
    virtual void on_fit_end(Trainer&) {}
    /// After SIGINT / SIGTERM / SIGHUP (`signal`) stopped training and the run was saved.
    virtual void on_signal(Trainer&, int /*signal*/) {}
    /// State to resume: merged into config.json's "progress".
    virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
    /// Restores state_dict() from a resumed run's "progress" (keys may be missing in runs
    /// saved without this callback). Throws ValueError naming a key of the wrong type.
    virtual void load_state_dict(const nlohmann::json& /*progress*/) {}
    /// The keys state_dict() writes (Trainer::load_state_dict leaves them to this callback).
    /// Default: those of a state_dict() call; override where that call is costly.
    virtual std::vector<std::string> state_keys() const {
        std::vector<std::string> keys;
        const nlohmann::json state = state_dict();  // alive while its items are walked
        for (const auto& [key, value] : state.items()) keys.push_back(key);
        return keys;
    }
    /// Adds this callback's files to a generation of the run directory.
    virtual void save_files(Trainer&, RunWriter&) {}
    /// Reads this callback's files from a resumed run's directory `dir`.
    virtual void load_files(Trainer&, const std::filesystem::path& /*dir*/) {}
};

/// Runs a training loop (PyTorch Lightning's Trainer for a step function). Each step: the
/// generator is seeded (step_seed), the gradients zeroed, the step function run, backward, the
/// gradients clipped, the optimizer and the schedule stepped. Validation runs every
/// val_check_interval steps and after the last; rows are logged every log_every_n_steps.
///
/// With a default_root_dir, fit() holds the run's lock (RunLock: one writer per directory) and
/// checkpoints go there as complete generations (RunWriter): config.json (the user's config
/// fields, "progress", checksums), model.safetensors, optimizer.safetensors (the optimizer's
/// state_dict under "optimizer.", the schedule's under "schedule.") and the callbacks' files.
/// A resumed run (fit's ckpt_path) continues exactly as the uninterrupted run would have,
/// bit for bit, when the step function draws its randomness from the generator it is given.
class Trainer {
public:
    /// `model` and `optimizer` (over the model's parameters) must outlive the Trainer. Throws
    /// ValueError naming the option when max_steps < 0, val_check_interval < 0,
    /// log_every_n_steps < 1 or gradient_clip_val < 0, and naming the parameter when the
    /// optimizer steps a tensor that is not one of the model's parameters.
    Trainer(nn::Module& model, optim::Optimizer& optimizer, TrainerOptions options = {});
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    /// A lock on default_root_dir taken before the Trainer was made, by a program that reads
    /// or checks the run first; fit() holds it (and takes one itself when none was given).
    Trainer& set_lock(std::unique_ptr<RunLock> lock);
    /// Adds a callback; hooks run in the order callbacks were added. Returns *this.
    Trainer& add_callback(std::shared_ptr<Callback> callback);
    /// The learning-rate schedule stepped after each optimizer step (saved and resumed with
    /// it); null for none. It must drive this Trainer's optimizer and outlive the Trainer.
    Trainer& set_scheduler(optim::LRScheduler* scheduler);
    /// The user's settings: the fields of `config` (a JSON object) are written at the top level
    /// of config.json, beside "progress" and "files", so that a program can rebuild its model
    /// from a run. Throws ValueError when `config` is not an object or uses those keys.
    Trainer& set_config(nlohmann::json config);

    /// Trains until max_steps (or a callback sets should_stop, or a signal). `ckpt_path`: empty
    /// starts a new run (refused with IoError when default_root_dir holds a run already); a
    /// run directory resumes it; ckpt_last resumes default_root_dir's run when there is one.
    /// A resumed run that has done max_steps returns at once. Throws IoError for a run directory that
    /// another process trains ("is being written by another process"), that is not a
    /// directory, that is the current directory or holds it, or that is corrupt; ValueError when
    /// the run was saved with another seed; Diverged when a save meets non-finite parameters or
    /// optimizer state (save_checkpoint); ValueError / Diverged from the step, validation and
    /// callbacks. Each saved generation is complete: an exception leaves the last one.
    FitResult fit(const StepFunction& step, const ValidationFunction& validate = {},
                  const std::filesystem::path& ckpt_path = {});

    /// Writes the run as it stands now as a new generation of default_root_dir (nothing on a
    /// process that is not is_global_zero or without a directory). Throws Diverged, on every
    /// process, when a parameter or an optimizer state tensor holds NaN or Inf (the directory
    /// keeps its last generation: a run never saves what it cannot resume); IoError.
    void save_checkpoint();
    /// Throws Interrupted when SIGINT / SIGTERM / SIGHUP arrived (for long validations).
    void check_interrupt() const;

    /// Optimizer steps done in total (a resumed run's included).
    std::int64_t global_step() const { return global_step_; }
    /// Seconds of training in total (wall clock; a resumed run's included).
    double seconds() const;
    /// The means of the step logs since the last logged row (Lightning's logged_metrics).
    Metrics logged_metrics() const;
    /// The last validation's metrics (empty before one).
    const Metrics& callback_metrics() const { return callback_metrics_; }
    /// Set by a callback to end fit() after the current step (EarlyStopping).
    bool should_stop = false;
    /// Whether this fit() resumed a saved run.
    bool resumed() const { return resumed_; }

    /// The model trained.
    nn::Module& model() { return *model_; }
    /// The optimizer stepping it.
    optim::Optimizer& optimizer() { return *optimizer_; }
    /// The options given.
    const TrainerOptions& options() const { return options_; }
    /// The Trainer's own state (steps, seconds, the open log window, a validation interrupted
    /// midway) followed by every callback's: config.json's "progress".
    nlohmann::json state_dict() const;

private:
    void load_run(const std::filesystem::path& dir);
    void load_state_dict(const nlohmann::json& progress);
    int validate_now(const ValidationFunction& validate);
    void log_row(double lr, const std::optional<Metrics>& validation);

    nn::Module* model_;
    optim::Optimizer* optimizer_;
    optim::LRScheduler* scheduler_ = nullptr;
    TrainerOptions options_;
    nlohmann::json config_ = nlohmann::json::object();
    std::vector<std::shared_ptr<Callback>> callbacks_;
    std::int64_t global_step_ = 0;
    double prior_seconds_ = 0.0;
    std::chrono::steady_clock::time_point start_;
    Metrics window_sums_;  ///< sums of the step logs since the last row
    std::int64_t window_steps_ = 0;
    Metrics callback_metrics_;
    bool validation_pending_ = false;  ///< a signal stopped the validation of step global_step_
    double pending_lr_ = 0.0;
    bool resumed_ = false;
    std::unique_ptr<InterruptGuard> interrupts_;
    std::unique_ptr<RunLock> lock_;
    std::filesystem::path run_path_;  ///< default_root_dir as the lock resolved it
    /// The run directory this Trainer last loaded or saved (st_dev, st_ino; 0 before either): a
    /// save finding another one there (another process saved meanwhile) refuses to replace it.
    std::pair<std::uint64_t, std::uint64_t> run_identity_{0, 0};
};

/// Training diverged (DivergenceMonitor's rule, or a save meeting non-finite parameters): a
/// ValueError every rank of a data-parallel run meets at the same step, as it is decided from
/// figures they all share. Its message starts "training diverged"; catch it apart from other
/// ValueErrors to tell a diverged run from a bad input.
class Diverged : public ValueError {
public:
    using ValueError::ValueError;
};

}  // namespace attograd::train
