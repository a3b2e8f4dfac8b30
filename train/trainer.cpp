// The Trainer: the step loop, validation and logging cadence, checkpoints and resume.
#include "train/trainer.hpp"

#include "core/autograd.hpp"
#include "core/detail/held_directory.hpp"
#include "core/detail/json_integer.hpp"
#include "core/ops_reduce.hpp"
#include "optim/clip_grad.hpp"
#include "train/file_io.hpp"
#include "train/run_dir.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>

namespace attograd::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* window_prefix = "window_";
constexpr const char* window_suffix = "_sum";

std::map<std::string, Tensor> prefixed(const std::map<std::string, Tensor>& state,
                                       const std::string& prefix) {
    std::map<std::string, Tensor> out;
    for (const auto& [name, tensor] : state) out.emplace(prefix + name, tensor);
    return out;
}

std::map<std::string, Tensor> unprefixed(const std::map<std::string, Tensor>& state,
                                         const std::string& prefix) {
    std::map<std::string, Tensor> out;
    for (const auto& [name, tensor] : state)
        if (name.starts_with(prefix)) out.emplace(name.substr(prefix.size()), tensor);
    return out;
}

/// A number of config.json's "progress", named when it has the wrong type.
double progress_number(const nlohmann::json& progress, const std::string& key) {
    AG_CHECK(progress[key].is_number(), ValueError,
             "config.json: field 'progress.{}' must be a number, got {}", key, progress[key].dump());
    return progress[key].get<double>();
}

/// The checkpoint files of a run directory, read from one generation.
struct SavedRun {
    nlohmann::json config;
    std::map<std::string, Tensor> model, optimizer;
};

}  // namespace

std::uint64_t step_seed(std::uint64_t seed, std::int64_t step) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(step) + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void load_optimizer_state(optim::Optimizer& optimizer, optim::LRScheduler* scheduler,
                          const std::map<std::string, Tensor>& state, const fs::path& file) {
    try {
        optimizer.load_state_dict(unprefixed(state, "optimizer."));
        if (scheduler) scheduler->load_state_dict(unprefixed(state, "schedule."));
    } catch (const Error& e) {
        throw IoError(fmt::format("{}: does not fit this run: {}", shown_path(file), e.what()));
    }
}

Trainer::Trainer(nn::Module& model, optim::Optimizer& optimizer, TrainerOptions options)
    : model_(&model), optimizer_(&optimizer), options_(std::move(options)) {
    AG_CHECK(options_.max_steps >= 0, ValueError, "Trainer: max_steps must be >= 0, got {}",
             options_.max_steps);
    AG_CHECK(options_.val_check_interval >= 0, ValueError,
             "Trainer: val_check_interval must be >= 0 (0: after the last step only), got {}",
             options_.val_check_interval);
    AG_CHECK(options_.log_every_n_steps >= 1, ValueError, "Trainer: log_every_n_steps must be >= 1, got {}",
             options_.log_every_n_steps);
    AG_CHECK(std::isfinite(options_.gradient_clip_val) && options_.gradient_clip_val >= 0.0, ValueError,
             "Trainer: gradient_clip_val must be finite and >= 0 (0: no clipping), got {}",
             options_.gradient_clip_val);
    // An optimizer over another model's parameters would train nothing the Trainer saves.
    std::set<const detail::TensorImpl*> own;
    for (const Tensor& parameter : model_->parameters()) own.insert(parameter.impl().get());
    const auto& stepped = optimizer_->parameters();
    for (std::size_t i = 0; i < stepped.size(); ++i) {
        AG_CHECK(own.contains(stepped[i].impl().get()), ValueError,
                 "Trainer: the optimizer's parameter {} (of {}, shape {}) is not a parameter of the model "
                 "({}): its steps would never change the model the Trainer trains and saves; build the "
                 "optimizer over model.parameters()",
                 i, stepped.size(), stepped[i].shape(), model_->type_name());
    }
}

Trainer::~Trainer() = default;

Trainer& Trainer::add_callback(std::shared_ptr<Callback> callback) {
    AG_CHECK(callback != nullptr, ValueError, "Trainer::add_callback: the callback is null");
    callbacks_.push_back(std::move(callback));
    return *this;
}

Trainer& Trainer::set_lock(std::unique_ptr<RunLock> lock) {
    lock_ = std::move(lock);
    return *this;
}

Metrics Trainer::logged_metrics() const {
    Metrics means;
    for (const auto& [key, sum] : window_sums_)
        means[key] = window_steps_ > 0 ? sum / static_cast<double>(window_steps_) : 0.0;
    return means;
}

Trainer& Trainer::set_scheduler(optim::LRScheduler* scheduler) {
    AG_CHECK(scheduler == nullptr || &scheduler->optimizer() == optimizer_, ValueError,
             "Trainer::set_scheduler: the schedule drives another optimizer than this Trainer's: its steps "
             "would never change the learning rate the Trainer uses");
    scheduler_ = scheduler;
    return *this;
}

Trainer& Trainer::set_config(nlohmann::json config) {
    AG_CHECK(config.is_object(), ValueError, "Trainer::set_config: the config must be a JSON object, got {}",
             config.type_name());
    for (const char* reserved : {"progress", "files", config_checksum_field}) {
        AG_CHECK(
            !config.contains(reserved), ValueError,
            "Trainer::set_config: key '{}' is the run directory's own (config.json: progress, files, {})",
            reserved, config_checksum_field);
    }
    config_ = std::move(config);
    return *this;
}

double Trainer::seconds() const {
    return prior_seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Trainer::check_interrupt() const {
    if (interrupts_) interrupts_->check();
}

nlohmann::json Trainer::state_dict() const {
    nlohmann::json state = {{"steps_done", global_step_},
                            {"seed", options_.seed},
                            {"seconds", seconds()},
                            {"window_steps", window_steps_},
                            {"evaluation_pending", validation_pending_},
                            {"pending_lr", pending_lr_}};
    for (const auto& [key, sum] : window_sums_) state[window_prefix + key + window_suffix] = sum;
    for (const auto& [key, value] : callback_metrics_) state[key] = value;
    for (const auto& callback : callbacks_) state.update(callback->state_dict());
    return state;
}

void Trainer::load_state_dict(const nlohmann::json& progress) {
    AG_CHECK(progress.is_object(), ValueError, "config.json: field 'progress' must be an object, got {}",
             progress.type_name());
    std::set<std::string> own = {"steps_done",         "seed",      "seconds", "window_steps",
                                 "evaluation_pending", "pending_lr"};
    for (const auto& callback : callbacks_) {
        callback->load_state_dict(progress);
        for (std::string& key : callback->state_keys()) own.insert(std::move(key));
    }
    const auto count = [&](const char* key) {
        const double value = progress.contains(key) ? progress_number(progress, key) : 0.0;
        AG_CHECK(value >= 0.0 && value == std::floor(value) && value < 9.0e15, ValueError,
                 "config.json: field 'progress.{}' must be an integer in [0, 9e15), got {}", key,
                 progress[key].dump());
        return static_cast<std::int64_t>(value);
    };
    global_step_ = count("steps_done");
    if (progress.contains("seed"))  // runs saved before the seed was recorded have none
        AG_CHECK(detail::json_integer<std::uint64_t>(progress["seed"]), ValueError,
                 "config.json: field 'progress.seed' must be an integer in {}, got {}",
                 detail::json_integer_range<std::uint64_t>(), progress["seed"].dump());
    window_steps_ = count("window_steps");
    prior_seconds_ = progress.contains("seconds") ? progress_number(progress, "seconds") : 0.0;
    pending_lr_ = progress.contains("pending_lr") ? progress_number(progress, "pending_lr") : 0.0;
    validation_pending_ = progress.value("evaluation_pending", false) == true;
    window_sums_.clear();
    callback_metrics_.clear();
    for (const auto& [key, value] : progress.items()) {
        if (own.contains(key)) continue;
        if (key.starts_with(window_prefix) && key.ends_with(window_suffix) && key.size() > 11) {
            window_sums_[key.substr(7, key.size() - 11)] = progress_number(progress, key);
        } else if (value.is_number()) {
            callback_metrics_[key] = value.get<double>();  // a validation metric
        }
    }
    AG_CHECK(global_step_ <= options_.max_steps, ValueError,
             "config.json: the run has done {} steps, more than the Trainer's max_steps {}", global_step_,
             options_.max_steps);
    AG_CHECK(window_steps_ <= global_step_ && (!validation_pending_ || window_steps_ >= 1), ValueError,
             "config.json: progress.window_steps {} does not fit progress.steps_done {}", window_steps_,
             global_step_);
}

void Trainer::load_run(const fs::path& dir) {
    const SavedRun saved = read_consistently(dir, [&] {
        SavedRun run;
        run.config = open_run(dir);
        for (const char* file : {"model.safetensors", "optimizer.safetensors"})
            AG_CHECK(fs::exists(dir / file), IoError, "{}: missing; this run cannot be resumed",
                     shown_path(dir / file));
        run.model = load_checkpoint(dir / "model.safetensors");
        run.optimizer = load_checkpoint(dir / "optimizer.safetensors");
        return run;
    });
    const fs::path optimizer_file = dir / "optimizer.safetensors";
    try {
        load_state_dict(saved.config.value("progress", nlohmann::json::object()));
    } catch (const ValueError& e) {
        // Its messages name the field as "config.json: ...": said once, as the path.
        std::string_view what = e.what();
        if (what.starts_with("config.json: ")) what.remove_prefix(std::string_view("config.json: ").size());
        throw IoError(fmt::format("{}: {}", shown_path(dir / "config.json"), what));
    }
    // A resumed run is the same run: another seed would draw other steps from here on.
    if (const auto progress = saved.config.value("progress", nlohmann::json::object());
        progress.contains("seed")) {
        const std::uint64_t seed = *detail::json_integer<std::uint64_t>(progress["seed"]);
        AG_CHECK(seed == options_.seed, ValueError,
                 "Trainer::fit: the run in {} was trained with seed {}, but this Trainer's seed is {}: a "
                 "resumed run must be the same run (resume it with seed {}, or start a new run)",
                 shown_path(dir), seed, options_.seed, seed);
    }
    const auto epoch = saved.optimizer.find("schedule.last_epoch");
    AG_CHECK(epoch != saved.optimizer.end() && epoch->second.numel() == 1 &&
                 epoch->second.item() == static_cast<double>(global_step_),
             IoError,
             "{}: 'schedule.last_epoch' is {}, but the run has done {} steps (config.json: "
             "progress.steps_done)",
             shown_path(optimizer_file),
             epoch != saved.optimizer.end() && epoch->second.numel() == 1 ? epoch->second.item() : -1.0,
             global_step_);
    try {
        model_->load_state_dict(saved.model);
    } catch (const Error& e) {
        throw IoError(
            fmt::format("{}: does not fit the model: {}", shown_path(dir / "model.safetensors"), e.what()));
    }
    load_optimizer_state(*optimizer_, scheduler_, saved.optimizer, optimizer_file);
    for (const auto& callback : callbacks_) callback->load_files(*this, dir);
    if (!run_path_.empty() && run_directory_path(dir) == run_path_)
        run_identity_ = detail::entry_identity(run_path_);
    resumed_ = true;
}

void Trainer::save_checkpoint() {
    if (options_.default_root_dir.empty()) return;
    // Checked on every rank (they hold the same parameters), so that all of them stop together.
    const auto model_state = model_->state_dict();
    const auto optimizer_state = optimizer_->state_dict();
    for (const auto* state : {&model_state, &optimizer_state}) {
        for (const auto& [name, tensor] : *state) {
            if (!all_finite(tensor))
                throw Diverged(fmt::format(
                    "training diverged by step {}: {} '{}' holds NaN or Inf values, so the run was not "
                    "saved ({} keeps its last saved generation); try a lower learning rate or gradient "
                    "clipping",
                    global_step_, state == &model_state ? "parameter" : "optimizer state", name,
                    shown_path(options_.default_root_dir)));
        }
    }
    if (!options_.is_global_zero || run_path_.empty()) return;
    if (lock_) lock_->check_held();  // its file removed meanwhile: never two writers of one run
    // The directory resolved when training started, still a directory and still the one this
    // Trainer last read or wrote: a link or another process's save put there since is not
    // followed or replaced.
    std::error_code ec;
    AG_CHECK(!fs::is_symlink(fs::symlink_status(run_path_, ec)), IoError,
             "{}: cannot save the run: {} was replaced by a symbolic link since training started; not "
             "following it",
             shown_path(options_.default_root_dir), shown_path(run_path_));
    const auto now = detail::entry_identity(run_path_);
    AG_CHECK(run_identity_.second == 0 || now == run_identity_, IoError,
             "{}: cannot save the run: the directory is no longer the one this training last read or wrote "
             "(replaced, or saved by another process after its lock file was removed); not replacing it",
             shown_path(options_.default_root_dir));
    RunWriter writer(run_path_);
    writer.save_tensors("model.safetensors", model_state);
    auto state = prefixed(optimizer_state, "optimizer.");
    // Saved with or without a schedule: it is the check that the files are of one generation.
    state.insert_or_assign("schedule.last_epoch", scheduler_ ? scheduler_->state_dict().at("last_epoch")
                                                             : index_tensor({global_step_}, {}));
    writer.save_tensors("optimizer.safetensors", state);
    for (const auto& callback : callbacks_) callback->save_files(*this, writer);
    nlohmann::json config = config_;
    config["progress"] = state_dict();
    writer.commit(std::move(config));
    run_identity_ = writer.identity();  // not what is at DIR now: something may have been moved there
}

int Trainer::validate_now(const ValidationFunction& validate) {
    validation_pending_ = true;
    model_->eval();
    Metrics metrics;
    try {
        metrics = validate();
    } catch (const Interrupted& interrupted) {
        model_->train();
        return interrupted.signal();  // still pending: a resumed run validates this step first
    }
    model_->train();
    validation_pending_ = false;
    callback_metrics_ = metrics;
    for (const auto& callback : callbacks_) callback->on_validation_end(*this, metrics);
    return 0;
}

void Trainer::log_row(double lr, const std::optional<Metrics>& validation) {
    const Metrics means = logged_metrics();
    for (const auto& callback : callbacks_) callback->on_log(*this, means, validation, lr);
    window_sums_.clear();
    window_steps_ = 0;
}

FitResult Trainer::fit(const StepFunction& step, const ValidationFunction& validate,
                       const fs::path& ckpt_path) {
    AG_CHECK(static_cast<bool>(step), ValueError, "Trainer::fit: the step function is empty");
    // However fit() ends, the lock and the signal handlers go with it.
    struct Release {
        Trainer* trainer;
        ~Release() {
            trainer->interrupts_.reset();
            trainer->lock_.reset();
        }
    } release{this};
    const fs::path& dir = options_.default_root_dir;
    const bool last = ckpt_path == ckpt_last;
    if (!dir.empty()) {  // before any step is spent (on every rank: they stop alike)
        check_not_current_directory(dir);
        check_room_for_saves(dir);
    }
    AG_CHECK(!last || !dir.empty(), ValueError,
             "Trainer::fit: ckpt_path \"last\" resumes the run in default_root_dir, which is not set");
    if (!dir.empty() && options_.is_global_zero) {
        if (!lock_)
            lock_ = std::make_unique<RunLock>(dir);  // one writer per run directory, until the last save
        run_path_ = run_directory_path(dir);
    }
    const bool holds_run = !dir.empty() && fs::exists(dir / "config.json");
    resumed_ = false;
    if (!ckpt_path.empty() && !last) {
        load_run(ckpt_path);
    } else if (last && holds_run) {
        load_run(dir);
    } else {
        AG_CHECK(!holds_run || options_.replace_run, IoError,
                 "{}: holds a run already; fit(..., train::ckpt_last) resumes it, or choose another "
                 "default_root_dir",
                 shown_path(dir));
        if (!run_path_.empty()) RunWriter probe(run_path_);  // a bad directory fails now, not after training
    }
    FitResult result;
    if (resumed_ && global_step_ >= options_.max_steps && !validation_pending_) {  // nothing left to do
        result.global_step = global_step_;
        result.validation = callback_metrics_;
        return result;
    }
    if (options_.handle_signals) interrupts_ = std::make_unique<InterruptGuard>();
    start_ = std::chrono::steady_clock::now();
    should_stop = false;
    const auto stop_for_signal = [&](int signal) {
        save_checkpoint();
        for (const auto& callback : callbacks_) callback->on_signal(*this, signal);
        result.global_step = global_step_;
        result.validation = callback_metrics_;
        result.signal = signal;
        return result;
    };
    const auto due = [&](std::int64_t every) { return every > 0 && global_step_ % every == 0; };

    for (const auto& callback : callbacks_) callback->on_fit_start(*this);
    Generator generator(options_.seed);
    model_->train();
    bool validated = false;
    double lr = pending_lr_;
    while (!should_stop && (global_step_ < options_.max_steps || validation_pending_)) {
        if (!validation_pending_) {
            for (const auto& callback : callbacks_) callback->on_train_batch_start(*this, global_step_);
            generator.manual_seed(step_seed(options_.seed, global_step_));
            optimizer_->zero_grad();
            StepOutput out = step(global_step_, generator);
            AG_CHECK(out.loss.defined() && out.loss.numel() == 1, ValueError,
                     "Trainer::fit: the step function must return a scalar loss, got {}",
                     out.loss.defined() ? fmt::format("shape {}", out.loss.shape()) : std::string("none"));
            if (!out.logs.contains("loss")) out.logs["loss"] = out.loss.item();
            for (const auto& callback : callbacks_) callback->on_before_backward(*this, out);
            out.loss.backward();
            for (const auto& callback : callbacks_) callback->on_after_backward(*this, out);
            if (options_.gradient_clip_val > 0.0)
                optim::clip_grad_norm(optimizer_->parameters(), options_.gradient_clip_val);
            lr = optimizer_->lr();
            optimizer_->step();
            if (scheduler_) scheduler_->step();
            ++global_step_;
            for (const auto& [key, value] : out.logs) window_sums_[key] += value;
            ++window_steps_;
            for (const auto& callback : callbacks_) callback->on_after_optimizer_step(*this, out);
        }
        const bool validation_due =
            due(options_.val_check_interval) || global_step_ == options_.max_steps || validation_pending_;
        if (due(options_.log_every_n_steps) || validation_due) {
            std::optional<Metrics> validation;
            if (validation_due && validate) {
                pending_lr_ = lr;
                if (const int signal = validate_now(validate); signal != 0) return stop_for_signal(signal);
                validated = true;
                validation = callback_metrics_;
            }
            validation_pending_ = false;
            log_row(lr, validation);
        }
        if (should_stop || global_step_ == options_.max_steps) break;
        if (interrupts_) interrupts_->test_hook(global_step_);
        int signal = interrupts_ ? interrupts_->signal() : 0;
        if (options_.sync_signal) signal = options_.sync_signal(signal);
        if (signal != 0) return stop_for_signal(signal);
        for (const auto& callback : callbacks_) callback->on_train_batch_end(*this);
    }
    if (!validated && validate) {
        pending_lr_ = lr;
        if (const int signal = validate_now(validate); signal != 0) return stop_for_signal(signal);
    }
    for (const auto& callback : callbacks_) callback->on_fit_end(*this);
    save_checkpoint();
    result.global_step = global_step_;
    result.validation = callback_metrics_;
    result.stopped_early = should_stop;
    return result;
}

}  // namespace attograd::train
