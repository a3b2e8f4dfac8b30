// The program's step, validation and callbacks for the library's Trainer.
#include "train_step.hpp"
#include "data_parallel.hpp"
#include "fraction_text.hpp"
#include "snapshot_probes.hpp"

#include "core/autograd.hpp"
#include "core/gemm_backend.hpp"
#include "core/ops.hpp"
#include "data/tsv.hpp"
#include "train/file_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace attograd::cli {

namespace {

/// Teacher-forced token accuracy of logits [B, T, V] against target [B, T] (pads skipped).
double batch_accuracy(const Tensor& logits, const Tensor& target) {
    const std::int64_t n = target.numel(), v = logits.size(-1);
    const Tensor l = to_dtype(logits.detach(), DType::Float32);
    const float* data = l.data<float>();
    const std::int64_t* y = target.data<std::int64_t>();
    std::int64_t right = 0, counted = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        if (y[i] == Vocabulary::pad_id) continue;
        const float* row = data + i * v;
        right += (std::max_element(row, row + v) - row) == y[i];
        ++counted;
    }
    return counted > 0 ? static_cast<double>(right) / static_cast<double>(counted) : 0.0;
}

/// Target tokens of target [B, T] that are not padding (the weight of a rank's mean loss).
double target_tokens(const Tensor& target) {
    const std::int64_t* y = target.data<std::int64_t>();
    return static_cast<double>(
        std::count_if(y, y + target.numel(), [](std::int64_t id) { return id != Vocabulary::pad_id; }));
}

}  // namespace

TrainStep::TrainStep(Model& model, Generator& model_generator, const RunConfig& config, const Task& task,
                     const optim::ProcessGroup& ranks)
    : model_(&model), model_generator_(&model_generator), config_(&config), task_(&task), ranks_(&ranks) {}

namespace {

/// The teacher-forced forward of step `step`'s batch, this rank's `share` of it: the batch drawn
/// from `batch_generator` (seeded by the Trainer), the model's own samples (hard attention,
/// dropout) seeded per step and rank.
struct StepForward {
    Batch batch;
    ForwardResult result;
    Tensor flat_logits, flat_target, loss;
};

StepForward forward_step(Model& model, Generator& model_generator, const RunConfig& config, const Task& task,
                         int rank, const Share& share, std::int64_t step, Generator& batch_generator) {
    const TrainConfig& t = config.train;
    model_generator.manual_seed(train::step_seed(~t.seed + static_cast<std::uint64_t>(rank), step));
    std::vector<std::vector<std::int64_t>> sources, targets;
    for (std::int64_t i = 0; i < t.batch; ++i) {
        const Example example = task.train_example(batch_generator);
        if (i < share.start || i >= share.start + share.length) continue;
        sources.push_back(config.vocab.encode(example.source));
        targets.push_back(vocabularies(config).target.encode(example.target));
    }
    StepForward out;
    out.batch = model.make_batch(sources, &targets);
    out.result = model.forward(out.batch);
    out.flat_logits = reshape(out.result.logits, {-1, out.result.logits.size(-1)});
    out.flat_target = reshape(out.batch.target, {-1});
    out.loss = cross_entropy(out.flat_logits, out.flat_target, {.ignore_index = Vocabulary::pad_id});
    return out;
}

}  // namespace

double first_step_loss(Model& model, Generator& model_generator, const RunConfig& config, const Task& task,
                       int ranks) {
    NoGradGuard no_grad;
    double loss_sum = 0.0, tokens = 0.0;  // as whole_batch adds the ranks' shares
    for (int rank = 0; rank < ranks; ++rank) {
        Generator batch_generator(train::step_seed(config.train.seed, 0));  // every rank draws the batch
        const StepForward out = forward_step(model, model_generator, config, task, rank,
                                             share_of(config.train.batch, rank, ranks), 0, batch_generator);
        const double count = target_tokens(out.batch.target);
        loss_sum += out.loss.item() * count;
        tokens += count;
    }
    return loss_sum / std::max(tokens, 1.0);
}

train::StepOutput TrainStep::operator()(std::int64_t step, Generator& batch_generator) {
    const Share share =
        share_of(config_->train.batch, ranks_->rank(), ranks_->size());  // all of it in one process
    auto [batch, result, flat_logits, flat_target, loss] = forward_step(
        *model_, *model_generator_, *config_, *task_, ranks_->rank(), share, step, batch_generator);
    const StepFigures mine{.loss = loss.item(),
                           .accuracy = batch_accuracy(result.logits, batch.target),
                           .tokens = target_tokens(batch.target)};
    tokens_ = mine.tokens;
    const StepFigures figures = whole_batch(mine);  // the same on every rank: so are the decisions
    if (!result.reinforce.empty()) {
        // REINFORCE reward: minus each sequence's summed token loss (a constant, off the tape;
        // the surrogate loss itself must be recorded).
        const Tensor reward = [&] {
            NoGradGuard no_grad;
            const Tensor per_token =
                cross_entropy(flat_logits.detach(), flat_target,
                              {.reduction = Reduction::None, .ignore_index = Vocabulary::pad_id});
            return -sum(reshape(per_token, {batch.size, -1}), {1});
        }();
        loss = loss + result.reinforce.loss(reward);
    }
    return {.loss = loss, .logs = {{"loss", figures.loss}, {"accuracy", figures.accuracy}}};
}

AverageGradients::AverageGradients(Model& model, const TrainStep& step)
    : ddp_(model.parameters()), step_(&step) {}

void AverageGradients::on_after_backward(train::Trainer&, const train::StepOutput&) {
    ddp_.average_gradients(step_->tokens());  // the whole batch's mean-loss gradient on every rank
}

void KeptSnapshots::save_files(train::Trainer&, train::RunWriter& writer) {
    if (!bytes_.empty()) writer.write_file(snapshot_file, bytes_);
}

void KeptSnapshots::load_files(train::Trainer&, const std::filesystem::path& dir) {
    if (std::filesystem::exists(dir / snapshot_file)) bytes_ = train::read_file(dir / snapshot_file);
}

nlohmann::json ProbePredictions::state_dict() const {
    std::vector<std::vector<std::string>> predictions;
    std::vector<double> losses;
    std::vector<ProbeOutput> outputs =
        probe_outputs(*model_, config_->model, *task_, vocabularies(*config_), probe_loss_count);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (std::ssize(predictions) < snapshot_probe_count)
            predictions.push_back(std::move(outputs[i].prediction));
        losses.push_back(outputs[i].loss);
    }
    return {{"probe_predictions", predictions}, {"probe_losses", losses}};
}

nlohmann::json KernelRecord::state_dict() const {
    return {{"gemm_library", gemm_library()}, {"cpu", machine_cpu()}};
}

void FirstStepRanks::load_state_dict(const nlohmann::json& progress) {
    // (Checked by the program's run reader before.)
    if (progress.value("steps_done", 0) > 0 && progress.contains("first_step_ranks"))
        ranks_ = progress["first_step_ranks"].get<std::int64_t>();
}

std::string machine_cpu() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) != 0 || line.find(':') == std::string::npos) continue;
        std::string name = line.substr(line.find(':') + 1);
        name.erase(0, name.find_first_not_of(' '));
        if (!name.empty()) return name;
    }
    return "unknown";
}

void HeldoutFile::save_files(train::Trainer&, train::RunWriter& writer) {
    if (config_->task.name == "data")
        writer.write_file("heldout.tsv", data::to_tsv(task_->held_out(), config_->task.chars));
}

void ValidationLine::on_validation_end(train::Trainer& trainer, const train::Metrics& metrics) {
    const train::Metrics window = trainer.logged_metrics();
    const auto value = [](const train::Metrics& figures, const char* key) {
        const auto it = figures.find(key);
        return it == figures.end() ? 0.0 : it->second;
    };
    // The window's training figures, where there was a step (not an evaluation at step 0).
    const std::string training = window.contains("loss")
                                     ? fmt::format("  loss {:.4f}  train acc {}", value(window, "loss"),
                                                   fraction_text(value(window, "accuracy"), 3))
                                     : std::string();
    bar_->line(fmt::format("step {:>5}{}  held-out token {} sequence {}  ({:.1f} s)", trainer.global_step(),
                           training, fraction_text(value(metrics, "heldout_token_accuracy"), 3),
                           fraction_text(value(metrics, "heldout_sequence_accuracy"), 3), trainer.seconds()));
}

train::ValidationFunction heldout_validation(const Model& model, const RunConfig& config, const Task& task,
                                             const train::Trainer& trainer) {
    return [&model, &config, &task, &trainer] {
        const Evaluation last =
            evaluate_split(model, vocabularies(config), task.held_out(), [&] { trainer.check_interrupt(); });
        return train::Metrics{{"heldout_token_accuracy", last.token_accuracy},
                              {"heldout_sequence_accuracy", last.sequence_accuracy}};
    };
}

}  // namespace attograd::cli
