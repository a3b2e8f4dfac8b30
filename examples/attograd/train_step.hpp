// What `attograd train` gives the library's Trainer: its step (a batch of the task, the model's
// loss), its held-out validation, and the callbacks that are the program's own (gradients
// averaged over MPI ranks, the run files beside the checkpoint, the lines it prints).
#pragma once

#include "config.hpp"
#include "models.hpp"

#include "optim/distributed.hpp"
#include "train/callbacks.hpp"
#include "train/trainer.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace attograd::cli {

/// One training step of `model` on a batch of `task` (seeded by the Trainer's generator): the
/// teacher-forced cross-entropy (+ REINFORCE's surrogate for hard attention), logging the whole
/// batch's "loss" and token "accuracy" (every rank's share summed). The model's own generator
/// is seeded per step and rank, so a resumed run samples as the uninterrupted one would have.
class TrainStep {
public:
    TrainStep(Model& model, Generator& model_generator, const RunConfig& config, const Task& task,
              const optim::ProcessGroup& ranks);
    train::StepOutput operator()(std::int64_t step, Generator& batch_generator);
    /// This rank's target tokens in the last step (its weight in the gradient average).
    double tokens() const { return tokens_; }

private:
    Model* model_;
    Generator* model_generator_;
    const RunConfig* config_;
    const Task* task_;
    const optim::ProcessGroup* ranks_;
    double tokens_ = 0.0;
};

/// The loss TrainStep logs at a run's first step (progress.initial_loss, divergence's yardstick):
/// `model` as the run's seed made it, in training mode, on the seed's first batch of `task`, as
/// `ranks` processes (mpirun -np N; 1: one process) take it: each rank's share with its own samples
/// (dropout, hard attention), the shares' losses weighted by their target tokens. Records no graph.
double first_step_loss(Model& model, Generator& model_generator, const RunConfig& config, const Task& task,
                       int ranks = 1);

/// Averages the ranks' gradients after backward, weighted by their target tokens
/// (optim::DistributedDataParallel; rank 0's parameters everywhere from construction).
class AverageGradients : public train::Callback {
public:
    AverageGradients(Model& model, const TrainStep& step);
    void on_after_backward(train::Trainer& trainer, const train::StepOutput& output) override;

private:
    optim::DistributedDataParallel ddp_;
    const TrainStep* step_;
};

/// A resumed run's attention snapshots, kept as they were when this run takes none.
class KeptSnapshots : public train::Callback {
public:
    void save_files(train::Trainer& trainer, train::RunWriter& writer) override;
    void load_files(train::Trainer& trainer, const std::filesystem::path& dir) override;

private:
    std::string bytes_;
};

/// Records at each save what the model predicts for the run's probes and its loss on them
/// (probe_outputs, in eval mode), as config.json's progress.probe_predictions and probe_losses,
/// which eval, inspect and --resume check the model they load against.
class ProbePredictions : public train::Callback {
public:
    ProbePredictions(Model& model, const RunConfig& config, const Task& task)
        : model_(&model), config_(&config), task_(&task) {}
    nlohmann::json state_dict() const override;
    /// probe_predictions and probe_losses, without the forwards state_dict() runs.
    std::vector<std::string> state_keys() const override { return {"probe_predictions", "probe_losses"}; }

private:
    Model* model_;
    const RunConfig* config_;
    const Task* task_;
};

/// Records at each save the kernels the run trained on: the GEMM library (gemm_library()) and the
/// CPU (machine_cpu()), as config.json's progress.gemm_library and progress.cpu; a resume on other
/// kernels is bit for bit the uninterrupted run only up to their rounding, and says so.
class KernelRecord : public train::Callback {
public:
    nlohmann::json state_dict() const override;
};

/// Records how many processes took the run's first step (progress.first_step_ranks): each rank
/// samples the dropout and hard attention of its share itself, so the first step's loss, which
/// eval, inspect and --resume compute again (first_step_loss), depends on them. A run with steps
/// keeps its record when resumed on another number.
class FirstStepRanks : public train::Callback {
public:
    /// `ranks`: the processes of this training (optim::ProcessGroup::size()).
    explicit FirstStepRanks(int ranks) : ranks_(ranks) {}
    nlohmann::json state_dict() const override { return {{"first_step_ranks", ranks_}}; }
    void load_state_dict(const nlohmann::json& progress) override;

private:
    std::int64_t ranks_;
};

/// The CPU's model name, as /proc/cpuinfo gives it ("unknown" when it gives none).
std::string machine_cpu();

/// heldout.tsv of a --data run: the held-out examples that eval and inspect read.
class HeldoutFile : public train::Callback {
public:
    HeldoutFile(const RunConfig& config, const Task& task) : config_(&config), task_(&task) {}
    void save_files(train::Trainer& trainer, train::RunWriter& writer) override;

private:
    const RunConfig* config_;
    const Task* task_;
};

/// Prints "step N  loss ...  held-out token ... sequence ..." at each validation.
class ValidationLine : public train::Callback {
public:
    explicit ValidationLine(std::shared_ptr<train::ProgressBar> bar) : bar_(std::move(bar)) {}
    void on_validation_end(train::Trainer& trainer, const train::Metrics& metrics) override;

private:
    std::shared_ptr<train::ProgressBar> bar_;
};

/// The held-out validation: token and sequence accuracy as "heldout_token_accuracy" and
/// "heldout_sequence_accuracy" (the examples split over the ranks; a Ctrl-C between batches
/// abandons it in a single process).
train::ValidationFunction heldout_validation(const Model& model, const RunConfig& config, const Task& task,
                                             const train::Trainer& trainer);

}  // namespace attograd::cli
