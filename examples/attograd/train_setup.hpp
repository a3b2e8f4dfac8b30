// `attograd train` from its command line to the objects it trains: the run (new or resumed), its
// optimizer and schedule, and the checks a resumed run's saved state must pass.
#pragma once

#include "commands.hpp"
#include "config.hpp"
#include "models.hpp"
#include "run_dir.hpp"

#include "optim/distributed.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/optimizer.hpp"
#include "train/run_lock.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace attograd::cli {

/// A run ready to train: its settings, task and model, and for a resumed run its progress.
struct TrainSetup {
    bool resuming = false;
    RunConfig config;
    std::unique_ptr<Task> task;
    std::shared_ptr<Model> model;
    std::unique_ptr<Generator> model_generator;  ///< the model's own samples (hard attention, dropout)
    RunProgress counters;                        ///< a resumed run's config.json "progress"
    std::int64_t run_snapshot_every = 0;         ///< a resumed run's saved train.snapshot_every
    std::filesystem::path out;                   ///< the run directory
    std::unique_ptr<train::RunLock> lock;        ///< rank 0: held from before the run is read
};

/// Builds the run `args` ask for: with --resume, the saved run (only the flags that do not change
/// it are allowed) with --steps, --eval-every, --checkpoint-every, --snapshot-every and
/// --no-early-stop applied; otherwise the task (bundled or --data), its defaults with the flags
/// over them, validated, checked against the memory, and --out checked and locked (rank 0).
/// Throws UsageError for bad usage, IoError / ValueError for a bad run or data file.
TrainSetup setup_training(const TrainArgs& args, const optim::ProcessGroup& ranks);

/// The optimizer train.optim names over `params`.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& t, std::vector<Tensor> params);

/// Linear warm-up from lr / (warmup + 1), then cosine annealing to 0 at the last step, or
/// constant. Null when the lr never changes.
std::unique_ptr<optim::LRScheduler> make_schedule(optim::Optimizer& optimizer, const TrainConfig& t);

/// Loads `dir`/optimizer.safetensors into `optimizer` and `schedule` (made from config.json's
/// train settings `t`), refusing (IoError naming the file and field) one this run cannot have
/// written: NaN or Inf, state of another optimizer or other settings (train.optim,
/// train.weight_decay, ...), a schedule position, lr or update count that does not fit `t` and
/// `steps_done`. Returns the state as read.
std::map<std::string, Tensor> load_optimizer_file(const std::filesystem::path& dir, const TrainConfig& t,
                                                  std::int64_t steps_done, optim::Optimizer& optimizer,
                                                  optim::LRScheduler* schedule);

/// Refuses (IoError naming `file`) optimizer state `state` (as load_optimizer_file returns it)
/// whose saved lr is not what `schedule` (made from the train settings the run was saved with,
/// its state loaded) gives at its step: a train.schedule, warmup, steps or lr edited since.
void check_scheduled_lr(const std::map<std::string, Tensor>& state, const std::filesystem::path& file,
                        const optim::LRScheduler& schedule);

/// Refuses a resumed run's optimizer.safetensors as load_optimizer_file, and (UsageError) a run
/// that has nothing left to do: all its steps done, or its target reached with early stopping on.
/// The optimizer and schedule are loaded from the file here, so that a bad one is reported
/// before training starts.
void check_resume_state(const TrainSetup& setup, optim::Optimizer& optimizer, optim::LRScheduler* schedule);

/// One line describing the model ("seq2seq model: 2 encoder layer(s), ...").
std::string describe(const RunConfig& c, std::int64_t parameters);

}  // namespace attograd::cli
