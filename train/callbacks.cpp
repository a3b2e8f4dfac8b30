// The Trainer's callbacks: checkpoints, early stopping, divergence, CSV rows, progress, snapshots.
#include "train/callbacks.hpp"
#include "train/metrics_csv.hpp"

#include "core/ops_reduce.hpp"
#include "train/file_io.hpp"
#include "train/interrupt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attograd::train {

namespace fs = std::filesystem;

namespace {

double progress_value(const nlohmann::json& progress, const char* key, double fallback) {
    if (!progress.contains(key)) return fallback;
    AG_CHECK(progress[key].is_number(), ValueError,
             "config.json: field 'progress.{}' must be a number, got {}", key, progress[key].dump());
    return progress[key].get<double>();
}

/// A count of config.json's "progress" (0 when absent): an integer in [0, 9e15), which a
/// double holds exactly. Throws ValueError naming the field otherwise.
std::int64_t progress_count(const nlohmann::json& progress, const char* key) {
    const double value = progress_value(progress, key, 0.0);
    AG_CHECK(value >= 0.0 && value == std::floor(value) && value < 9.0e15, ValueError,
             "config.json: progress.{} must be an integer in [0, 9e15), got {}", key, progress[key].dump());
    return static_cast<std::int64_t>(value);
}

}  // namespace

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(options) {
    AG_CHECK(options_.every_n_train_steps >= 0, ValueError,
             "ModelCheckpoint: every_n_train_steps must be >= 0 (0: at validations only), got {}",
             options_.every_n_train_steps);
}

void ModelCheckpoint::on_train_batch_end(Trainer& trainer) {
    const std::int64_t step = trainer.global_step(), every = options_.every_n_train_steps;
    const std::int64_t validation = trainer.options().val_check_interval;
    if ((every > 0 && step % every == 0) ||
        (options_.save_on_validation && validation > 0 && step % validation == 0))
        trainer.save_checkpoint();
}

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
    AG_CHECK(!options_.monitor.empty(), ValueError,
             "EarlyStopping: monitor (a validation metric's name) is empty");
    AG_CHECK(options_.mode == "max" || options_.mode == "min", ValueError,
             "EarlyStopping: mode must be \"max\" or \"min\", got \"{}\"", options_.mode);
    AG_CHECK(!std::isnan(options_.stopping_threshold), ValueError,
             "EarlyStopping: stopping_threshold is NaN, which no metric ever reaches");
}

void EarlyStopping::on_fit_start(Trainer& trainer) {
    if (reached_ && options_.stop) trainer.should_stop = true;  // a resumed run that had reached its target
}

void EarlyStopping::on_validation_end(Trainer& trainer, const Metrics& metrics) {
    const auto it = metrics.find(options_.monitor);
    if (it == metrics.end()) {
        std::string names;
        for (const auto& [name, value] : metrics) names += (names.empty() ? "" : ", ") + name;
        throw ValueError(fmt::format("EarlyStopping: monitor '{}' is not among the validation metrics ({})",
                                     options_.monitor, names.empty() ? "none" : names));
    }
    AG_CHECK(!options_.check_finite || std::isfinite(it->second), ValueError,
             "EarlyStopping: monitor '{}' is {} at step {}, not a finite value (check_finite): training "
             "stopped; the run keeps its last saved generation",
             options_.monitor, it->second, trainer.global_step());
    reached_ = options_.mode == "max" ? it->second >= options_.stopping_threshold
                                      : it->second <= options_.stopping_threshold;
    if (reached_ && options_.stop) trainer.should_stop = true;
}

nlohmann::json EarlyStopping::state_dict() const { return {{"reached_target", reached_}}; }

void EarlyStopping::load_state_dict(const nlohmann::json& progress) {
    if (!progress.contains("reached_target")) return;
    AG_CHECK(progress["reached_target"].is_boolean(), ValueError,
             "config.json: field 'progress.reached_target' must be true or false, got {}",
             progress["reached_target"].dump());
    reached_ = progress["reached_target"].get<bool>();
}

DivergenceMonitor::DivergenceMonitor(DivergenceMonitorOptions options) : options_(std::move(options)) {
    AG_CHECK(std::isfinite(options_.factor) && options_.factor > 1.0, ValueError,
             "DivergenceMonitor: factor must be finite and > 1, got {}", options_.factor);
    AG_CHECK(options_.patience >= 1, ValueError, "DivergenceMonitor: patience must be >= 1, got {}",
             options_.patience);
}

void DivergenceMonitor::on_before_backward(Trainer& trainer, const StepOutput& output) {
    const double loss = output.logs.at("loss");
    const std::int64_t step = trainer.global_step() + 1;
    if (!std::isfinite(loss))
        throw Diverged(fmt::format("training diverged at step {} (loss {}); {}", step,
                                   std::isnan(loss) ? std::string("nan") : fmt::format("{}", loss),
                                   options_.hint));
    if (initial_loss_ == 0.0) initial_loss_ = loss;
    high_loss_steps_ = loss > options_.factor * initial_loss_ ? high_loss_steps_ + 1 : 0;
    if (high_loss_steps_ >= options_.patience) {
        throw Diverged(
            fmt::format("training diverged at step {}: the loss ({:.4g}) has been above {:g}x its first "
                        "value ({:.4g}) for "
                        "{} steps; {}",
                        step, loss, options_.factor, initial_loss_, options_.patience, options_.hint));
    }
}

void DivergenceMonitor::on_after_optimizer_step(Trainer& trainer, const StepOutput&) {
    // An update that overflows shows here before the next loss.
    for (const auto& [name, parameter] : trainer.model().named_parameters()) {
        if (!all_finite(parameter)) {
            throw Diverged(fmt::format(
                "training diverged at step {}: the update made parameter '{}' NaN or infinite; {}",
                trainer.global_step(), name, options_.hint));
        }
    }
}

nlohmann::json DivergenceMonitor::state_dict() const {
    return {{"initial_loss", initial_loss_}, {"high_loss_steps", high_loss_steps_}};
}

void DivergenceMonitor::load_state_dict(const nlohmann::json& progress) {
    initial_loss_ = progress_value(progress, "initial_loss", 0.0);
    AG_CHECK(std::isfinite(initial_loss_) && initial_loss_ >= 0.0, ValueError,
             "config.json: progress.initial_loss must be finite and >= 0, got {}", initial_loss_);
    high_loss_steps_ = progress_count(progress, "high_loss_steps");
    AG_CHECK(high_loss_steps_ < options_.patience, ValueError,
             "config.json: progress.high_loss_steps is {}, but training stops as diverged when it reaches {} "
             "(the patience), so no run saved it",
             high_loss_steps_, options_.patience);
}

CSVLogger::CSVLogger(CSVLoggerOptions options) : options_(std::move(options)) {
    const std::string& name = options_.filename;
    AG_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                 name != "config.json",
             ValueError, "CSVLogger: filename '{}' is not a plain file name of the run directory", name);
    AG_CHECK(name != "model.safetensors" && name != "optimizer.safetensors", ValueError,
             "CSVLogger: filename '{}' is the Trainer's own checkpoint, which the log would replace", name);
    for (const auto* columns : {&options_.train_columns, &options_.val_columns})
        for (const CSVColumn& column : *columns)
            AG_CHECK(!column.key.empty() && !column.header.empty(), ValueError,
                     "CSVLogger: a column needs a key and a header, got '{}' / '{}'", column.key,
                     column.header);
    text_ = header();
}

std::string CSVLogger::header() const {
    std::string line = "step";
    for (const auto* columns : {&options_.train_columns, &options_.val_columns})
        for (const CSVColumn& column : *columns) line += "," + column.header;
    return line + ",lr,seconds\n";
}

void CSVLogger::on_log(Trainer& trainer, const Metrics& means, const std::optional<Metrics>& validation,
                       double lr) {
    std::string row = fmt::format("{}", trainer.global_step());
    for (const CSVColumn& column : options_.train_columns) {
        const auto it = means.find(column.key);
        row += it == means.end() ? std::string(",") : fmt::format(",{:.6f}", it->second);
    }
    for (const CSVColumn& column : options_.val_columns) {
        const auto it = validation ? validation->find(column.key) : Metrics::const_iterator{};
        row += !validation || it == validation->end() ? std::string(",") : fmt::format(",{:.6f}", it->second);
    }
    text_ += row + fmt::format(",{:.6g},{:.3f}\n", lr, trainer.seconds());
}

void CSVLogger::save_files(Trainer&, RunWriter& writer) { writer.write_file(options_.filename, text_); }

void CSVLogger::load_files(Trainer& trainer, const fs::path& dir) {
    const fs::path path = dir / options_.filename;
    AG_CHECK(fs::exists(path), IoError, "{}: missing; this run cannot be resumed", shown_path(path));
    text_ = read_file(path, std::size_t{1} << 30);
    check_metrics_header(text_, header(), shown_path(path));
    // Rows the run cannot have written (a step past it, an accuracy of 5) would be carried on.
    read_metrics_csv(text_, trainer.global_step(), shown_path(path));
}

ProgressBar::ProgressBar(std::string metric, bool quiet) : metric_(std::move(metric)), quiet_(quiet) {}

void ProgressBar::on_fit_start(Trainer& trainer) {
    progress_ = std::make_unique<Progress>(trainer.global_step(), trainer.options().max_steps,
                                           quiet_ || !trainer.options().is_global_zero);
}

void ProgressBar::on_after_optimizer_step(Trainer& trainer, const StepOutput&) {
    const Metrics means = trainer.logged_metrics();
    const auto mean = [&](const std::string& key) {
        const auto it = means.find(key);
        return it == means.end() ? 0.0 : it->second;
    };
    if (progress_)
        progress_->update(trainer.global_step(), mean("loss"), metric_.empty() ? 0.0 : mean(metric_));
}

void ProgressBar::on_fit_end(Trainer&) {
    if (progress_) progress_->finish();
}

void ProgressBar::on_signal(Trainer&, int) {
    if (progress_) progress_->finish();
}

void ProgressBar::line(const std::string& text) {
    if (progress_)
        progress_->line(text);
    else if (!quiet_)
        Progress(0, 0, false).line(text);
}

AttentionSnapshots::AttentionSnapshots(nn::Module& model, std::vector<inspect::SnapshotProbe> probes,
                                       AttentionSnapshotsOptions options)
    : snapshotter_(model, std::move(probes), options.snapshot), options_(std::move(options)) {}

void AttentionSnapshots::on_train_batch_start(Trainer&, std::int64_t step) {
    snapshotter_.maybe_snapshot(step);
}

void AttentionSnapshots::on_fit_end(Trainer& trainer) {
    const auto& taken = snapshotter_.snapshots();
    if (taken.empty() || taken.back().step < trainer.global_step())
        snapshotter_.snapshot(trainer.global_step());  // the trained model
}

nlohmann::json AttentionSnapshots::state_dict() const { return {{"snapshot_period", snapshotter_.every()}}; }

void AttentionSnapshots::load_state_dict(const nlohmann::json& progress) {
    const std::int64_t period = progress_count(progress, "snapshot_period");
    saved_period_ = options_.resume_period ? period : 0;
}

void AttentionSnapshots::save_files(Trainer&, RunWriter& writer) {
    writer.write_with(options_.filename, [&](const fs::path& path) {
        inspect::save_snapshots(path, snapshotter_.snapshots(), AtomicFile::Symlinks::refuse);
    });
}

void AttentionSnapshots::load_files(Trainer& trainer, const fs::path& dir) {
    if (!fs::exists(dir / options_.filename)) return;
    auto earlier = inspect::load_snapshots(dir / options_.filename);
    // The file is saved with the run's other files, as one generation: no snapshot is later.
    for (const inspect::AttentionSnapshot& snapshot : earlier)
        AG_CHECK(
            snapshot.step <= trainer.global_step(), IoError,
            "load_snapshots: '{}': a snapshot has step {}, after the {} steps the run has trained (the file "
            "or config.json's progress.steps_done was edited)",
            (dir / options_.filename).string(), snapshot.step, trainer.global_step());
    if (options_.check_loaded) {
        try {
            options_.check_loaded(earlier, trainer.global_step());
        } catch (const ValueError& e) {
            throw IoError(
                fmt::format("load_snapshots: '{}': {}", (dir / options_.filename).string(), e.what()));
        }
    }
    try {
        snapshotter_.resume(std::move(earlier), saved_period_);
    } catch (const ValueError& e) {
        throw IoError(
            fmt::format("config.json: progress.snapshot_period does not fit this run: {}", e.what()));
    }
}

}  // namespace attograd::train
