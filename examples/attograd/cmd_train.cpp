// `attograd train`: builds the task and model, trains with held-out evaluation and early
// stopping, and writes the run directory (see run_dir.hpp).
#include "commands.hpp"
#include "config.hpp"
#include "console.hpp"
#include "data_parallel.hpp"
#include "evaluation.hpp"
#include "train/file_io.hpp"
#include "train/interrupt.hpp"
#include "memory_check.hpp"
#include "models.hpp"
#include "train/progress.hpp"
#include "run_dir.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"
#include "snapshot_probes.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/serialization.hpp"
#include "data/tsv.hpp"
#include "optim/adam.hpp"
#include "optim/clip_grad.hpp"
#include "optim/distributed.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/sgd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

namespace attograd::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* metrics_header =
    "step,loss,train_token_accuracy,heldout_token_accuracy,heldout_sequence_accuracy,lr,seconds\n";

/// The options --resume accepts (the rest would change the saved run).
constexpr std::array resume_options = {"resume",         "steps",         "eval-every", "checkpoint-every",
                                       "snapshot-every", "no-early-stop", "quiet"};

/// Divergence (documented in the README): the loss is not finite, or it has stayed above
/// kDivergedFactor times the run's first loss for kDivergedSteps steps in a row.
constexpr double kDivergedFactor = 4.0;
constexpr std::int64_t kDivergedSteps = 20;

// The name of the first parameter holding a NaN or an infinity, or "" when all are finite: an
// update that overflows shows here before the next loss, an evaluation or a snapshot reads it.
std::string first_non_finite(const nn::Module& model) {
    for (const auto& [name, p] : model.named_parameters())
        if (!all_finite(p)) return name;
    return {};
}

/// Refuses an --out that holds anything but nothing or, with --force, a run: re-running a
/// command must not silently replace the result of the last one.
void check_out_is_free(const fs::path& out, bool force) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(out, ec))) return;
    if (!fs::is_directory(out, ec))
        throw UsageError(fmt::format("--out {}: exists and is not a directory", shown_path(out)));
    if (fs::is_empty(out, ec)) return;
    if (!fs::exists(out / "config.json")) {
        throw UsageError(fmt::format(
            "--out {}: holds files that are not an attograd run; choose another --out", shown_path(out)));
    }
    if (!force) {
        throw UsageError(
            fmt::format("--out {}: holds a run already; pass --force to replace it, --resume {} to "
                        "continue it, or choose another --out",
                        shown_path(out), shell_quote(out.string())));
    }
}

/// Refuses a run directory that is the current directory or holds it: each save swaps a new
/// directory in place of DIR, which would leave the calling shell in a deleted directory.
void check_not_cwd(const fs::path& dir, const char* option) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec), full = fs::weakly_canonical(fs::absolute(dir), ec);
    if (ec || cwd.empty()) return;
    auto c = cwd.begin();
    for (auto d = full.begin(); d != full.end(); ++d, ++c) {
        if (d->empty()) continue;  // a trailing "/"
        if (c == cwd.end() || *c != *d) return;
    }
    throw UsageError(fmt::format(
        "{} {}: is the current directory or holds it; each save replaces the run directory, which "
        "would leave your shell in a deleted directory: run attograd from outside it",
        option, shown_path(dir)));
}

/// Held-out examples whose attention `train` snapshots, and the most snapshots a run keeps
/// (a longer run thins them and doubles the period: inspect::SnapshotOptions).
constexpr std::int64_t snapshot_probe_count = 3, max_snapshots = 32;

/// A seed for the batch of step `step` (SplitMix64 of both), so that a resumed run draws the
/// same batches as an uninterrupted one.
std::uint64_t batch_seed(std::uint64_t seed, std::int64_t step) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(step) + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// Refuses the flags of another kind of model (`kind`, the --model of the run): the recurrent
/// model's without --model rnn, the Transformer layers' with it.
void check_model_flags(const TrainArgs& a, const std::string& kind) {
    for (const char* name : {"cell", "decoder", "bidirectional", "rnn-layers"}) {
        if (kind != "rnn" && a.was_given(name))
            throw UsageError(fmt::format("--{} applies to --model rnn only", name));
    }
    for (const char* name : {"layers", "decoder-layers", "ffn-dim", "next-token"}) {
        if (kind == "rnn" && a.was_given(name))
            throw UsageError(fmt::format(
                "--{} sets the Transformer models' layers; --model rnn takes --rnn-layers, --cell, --decoder",
                name));
    }
}

void apply_overrides(const TrainArgs& a, RunConfig& c) {
    ModelConfig& m = c.model;
    TrainConfig& t = c.train;
    if (a.was_given("model")) m.kind = a.model;
    if (a.was_given("score")) m.score = a.score;
    if (a.was_given("attention")) m.attention = a.attention;
    if (a.was_given("estimator")) m.estimator = a.estimator;
    if (a.was_given("window")) m.window = a.window;
    if (a.was_given("local")) m.local = a.local;
    if (a.was_given("heads")) m.heads = a.heads;
    if (a.was_given("layers")) m.layers = a.layers;
    if (a.was_given("decoder-layers")) m.decoder_layers = a.decoder_layers;
    if (a.was_given("embed-dim")) m.embed_dim = a.embed_dim;
    if (a.was_given("ffn-dim")) m.ffn_dim = a.ffn_dim;
    if (a.was_given("next-token")) m.next_token = a.next_token;
    if (a.was_given("cell")) m.cell = a.cell;
    if (a.was_given("decoder")) m.decoder = a.decoder;
    if (a.was_given("bidirectional")) m.bidirectional = a.bidirectional;
    if (a.was_given("rnn-layers")) m.rnn_layers = a.rnn_layers;
    // The recurrent decoders' own scores unless one is asked for: the additive score of Bahdanau
    // et al. and Luong et al.'s "general" (bilinear) score.
    if (m.kind == "rnn" && !a.was_given("score")) m.score = m.decoder == "luong" ? "bilinear" : "additive";
    if (m.kind == "rnn" && !a.was_given("heads")) m.heads = 1;  // a task's Transformer default (dates: 4)
    if (a.was_given("optim")) t.optim = a.optim;
    if (a.was_given("lr")) t.lr = a.lr;
    if (a.was_given("momentum")) t.momentum = a.momentum;
    if (a.was_given("weight-decay")) t.weight_decay = a.weight_decay;
    if (a.was_given("clip")) t.clip = a.clip;
    if (a.was_given("batch")) t.batch = a.batch;
    if (a.was_given("steps")) t.steps = a.steps;
    if (a.was_given("seed")) t.seed = a.seed;
    if (a.was_given("warmup")) t.warmup = a.warmup;
    if (a.was_given("schedule")) t.schedule = a.schedule;
    if (a.was_given("eval-every")) t.eval_every = a.eval_every;
    t.checkpoint_every = a.checkpoint_every;  // its default is the flag's
    if (a.was_given("snapshot-every")) t.snapshot_every = a.snapshot_every;
    if (a.no_early_stop) t.early_stop = false;
    if (m.kind == "encoder" && !a.was_given("layers")) m.layers = std::max<std::int64_t>(m.layers, 1);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& t, std::vector<Tensor> params) {
    if (t.optim == "sgd") {
        return std::make_unique<optim::SGD>(
            std::move(params),
            optim::SGDOptions{.lr = t.lr, .momentum = t.momentum, .weight_decay = t.weight_decay});
    }
    if (t.optim == "adamw") {
        return std::make_unique<optim::AdamW>(
            std::move(params), optim::AdamWOptions{.lr = t.lr, .weight_decay = t.weight_decay});
    }
    return std::make_unique<optim::Adam>(std::move(params),
                                         optim::AdamOptions{.lr = t.lr, .weight_decay = t.weight_decay});
}

/// Linear warm-up from lr / (warmup + 1), then cosine annealing to 0 at the last step, or
/// constant. Null when the lr never changes.
std::unique_ptr<optim::LRScheduler> make_schedule(optim::Optimizer& optimizer, const TrainConfig& t) {
    const std::int64_t warmup = std::min(t.warmup, std::max<std::int64_t>(t.steps - 1, 0));
    const bool cosine = t.schedule == "cosine" && t.steps - warmup >= 1;
    if (warmup == 0 && !cosine) return nullptr;
    const optim::LinearWarmupOptions ramp{.start_factor = 1.0 / static_cast<double>(warmup + 1),
                                          .warmup_steps = std::max<std::int64_t>(warmup, 1)};
    if (!cosine) return std::make_unique<optim::LinearWarmup>(optimizer, ramp);
    const optim::CosineAnnealingLROptions anneal{.T_max = t.steps - warmup};
    if (warmup == 0) return std::make_unique<optim::CosineAnnealingLR>(optimizer, anneal);
    auto warm = std::make_shared<optim::LinearWarmup>(optimizer, ramp);
    auto cos = std::make_shared<optim::CosineAnnealingLR>(optimizer, anneal);
    return std::make_unique<optim::SequentialLR>(optimizer,
                                                 std::vector<std::shared_ptr<optim::LRScheduler>>{warm, cos},
                                                 std::vector<std::int64_t>{warmup});
}

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

std::map<std::string, Tensor> prefixed(const std::map<std::string, Tensor>& state,
                                       const std::string& prefix) {
    std::map<std::string, Tensor> out;
    for (const auto& [name, tensor] : state) out.emplace(prefix + name, tensor);
    return out;
}

std::map<std::string, Tensor> unprefixed(const std::map<std::string, Tensor>& state,
                                         const std::string& prefix) {
    std::map<std::string, Tensor> out;
    for (const auto& [name, tensor] : state) {
        if (name.rfind(prefix, 0) == 0) out.emplace(name.substr(prefix.size()), tensor);
    }
    return out;
}

/// Refuses schedule state in optimizer.safetensors that this run cannot have written:
/// schedule.last_epoch must be the steps done (the schedule steps once per training step) and
/// optimizer.initial_lr (set by a schedule), or optimizer.lr when saved without a schedule, the
/// configured lr. Throws IoError naming the field.
void check_schedule_state(const std::map<std::string, Tensor>& state, const fs::path& file,
                          std::int64_t steps_done, const TrainConfig& t) {
    const auto it = state.find("schedule.last_epoch");
    AG_CHECK(it != state.end(), IoError, "{}: 'schedule.last_epoch' is missing", shown_path(file));
    AG_CHECK(
        it->second.shape().empty() && it->second.dtype() == DType::Int64 &&
            it->second.data<std::int64_t>()[0] == steps_done,
        IoError,
        "{}: 'schedule.last_epoch' is {}, but the run has done {} steps (config.json: progress.steps_done)",
        shown_path(file), it->second.numel() == 1 ? it->second.item() : -1.0, steps_done);
    // Saved with a schedule, the lr it started from is initial_lr; saved without one, the lr
    // never changed from train.lr.
    const auto initial_lr = state.find("optimizer.initial_lr");
    const char* key = initial_lr != state.end() ? "optimizer.initial_lr" : "optimizer.lr";
    if (const auto lr = state.find(key); lr != state.end()) {
        AG_CHECK(lr->second.numel() == 1 && lr->second.item() == t.lr, IoError,
                 "{}: '{}' is {}, but the run's lr is {} (config.json: train.lr)", shown_path(file), key,
                 lr->second.numel() == 1 ? lr->second.item() : -1.0, t.lr);
    }
}

std::string describe(const RunConfig& c, std::int64_t parameters) {
    const ModelConfig& m = c.model;
    std::string attention = m.score + " " + m.attention;
    if (m.window >= 0) attention += fmt::format(" local-{} (D = {})", m.local, m.window);
    if (m.kind == "rnn") {
        return fmt::format(
            "rnn model: {} {} encoder layer(s){}, {} decoder, {} attention, E = {}, {} parameters",
            m.rnn_layers, m.cell, m.bidirectional ? " (bidirectional)" : "", m.decoder, attention,
            m.embed_dim, parameters);
    }
    if (m.kind == "encoder") {
        return fmt::format(
            "encoder model: {} self-attention layer(s) x {} head(s), {} attention, E = {}, {} parameters",
            m.layers, m.heads, attention, m.embed_dim, parameters);
    }
    return fmt::format(
        "seq2seq model: {} encoder layer(s), {} decoder layer(s), {} head(s), {} attention, E = {}, {} "
        "parameters",
        m.layers, m.decoder_layers, m.heads, attention, m.embed_dim, parameters);
}

}  // namespace

int cmd_train(const TrainArgs& args) {
    const bool resuming = !args.resume.empty();
    RunConfig config;
    std::unique_ptr<Task> task;
    std::shared_ptr<Model> model;
    std::unique_ptr<Generator> model_generator;
    RunProgress counters;
    std::int64_t run_snapshot_every = 0;  // a resumed run's saved train.snapshot_every
    fs::path out;
    std::optional<train::RunLock> lock;  // held until the last save: one writer per run directory
    train::InterruptGuard interrupts;    // from here on Ctrl-C saves the run instead of losing it
    // Under mpirun every rank trains on its share of each batch; rank 0 prints and writes.
    const optim::ProcessGroup& ranks = train_world();

    if (resuming) {
        for (const auto& name : args.given) {
            if (std::find(resume_options.begin(), resume_options.end(), name) == resume_options.end() &&
                !(name == "out" && fs::path(args.out) == fs::path(args.resume))) {
                throw UsageError(fmt::format(
                    "--resume continues a run with its saved configuration; --{} cannot be given "
                    "with it (allowed: --steps, --eval-every, --checkpoint-every, --snapshot-every, "
                    "--no-early-stop, --quiet)",
                    name));
            }
        }
        check_not_cwd(args.resume, "--resume");
        if (ranks.is_main()) lock.emplace(args.resume);  // before reading: no save slips in between
        LoadedRun run = load_run(args.resume, true);
        config = run.config;
        run_snapshot_every = config.train.snapshot_every;
        task = std::move(run.task);
        model = run.model;
        model_generator = std::move(run.generator);
        counters = run.counters;
        out = run.dir;
        if (args.was_given("steps")) config.train.steps = args.steps;
        if (args.was_given("eval-every")) config.train.eval_every = args.eval_every;
        if (args.was_given("checkpoint-every")) config.train.checkpoint_every = args.checkpoint_every;
        if (args.was_given("snapshot-every")) config.train.snapshot_every = args.snapshot_every;
        if (args.no_early_stop) config.train.early_stop = false;
        for (const char* file : {"optimizer.safetensors", "metrics.csv"}) {
            AG_CHECK(fs::exists(out / file), IoError, "{}: missing; this run cannot be resumed",
                     shown_path(out / file));
        }
    } else {
        std::optional<TrainingData> training_data;
        if (!args.data.empty()) {
            if (args.was_given("task") && args.task != "data") {
                throw UsageError(fmt::format(
                    "--task {} and --data do not combine: --data trains on your file", args.task));
            }
            training_data = read_training_data(args.data, args.chars);
            task = data::make_data_task(std::move(training_data->dataset));
        } else {
            if (args.chars) throw UsageError("--chars applies to --data files only");
            if (args.task.empty())
                throw UsageError("train needs --task NAME (see `attograd tasks`) or --data FILE.tsv");
            if (args.task == "data") throw UsageError("--task data needs --data FILE.tsv");
            task = data::make_task(args.task);
        }
        config = default_config(*task);
        if (!args.data.empty()) {
            config.task.data = fs::absolute(args.data).string();
            config.task.chars = args.chars;
            config.task.data_bytes = training_data->bytes;  // what --resume checks the file against
            config.task.data_fnv1a64 = training_data->fnv1a64;
        }
        if (args.was_given("local") && !args.was_given("window")) {
            throw UsageError("--local needs --window D (the half-width of the local window)");
        }
        if (args.was_given("estimator") &&
            (args.was_given("attention") ? args.attention : config.model.attention) != "hard") {
            throw UsageError("--estimator applies to --attention hard only");
        }
        if (args.was_given("window") && args.window < 0) {
            throw UsageError(fmt::format("--window must be >= 0, got {} (leave it out for global attention)",
                                         args.window));
        }
        check_model_flags(args, args.was_given("model") ? args.model : config.model.kind);
        apply_overrides(args, config);
        validate(config, task->info());
        check_memory(config, SettingNames::flags(), available_bytes());  // before the model is built
        out = args.out.empty() ? fs::path("runs") / config.task.name : fs::path(args.out);
        if (ranks.is_main()) {
            check_not_cwd(out, "--out");
            lock.emplace(out);  // a second `train --out` of the same DIR exits here
            check_out_is_free(out, args.force);
            train::RunWriter probe(out);  // a bad --out fails now, not after training
        }
        model_generator = std::make_unique<Generator>(config.train.seed);
        model = make_model(config.model, config.vocab, *model_generator);
    }
    // Every save goes to the directory the lock was taken on (a run reached through a symbolic
    // link is written where it points, and the link stays).
    const fs::path run_path = ranks.is_main() ? train::run_directory_path(out) : out;
    // On --resume the settings are config.json's but for the flags it allows.
    validate(config, task->info(), resuming ? SettingNames::config_file(args.given) : SettingNames::flags());
    const TaskInfo& info = task->info();
    const TrainConfig& t = config.train;
    // As PyTorch's LinearLR with total_iters beyond the run, a long warm-up is not an error; but
    // it never reaches the peak lr there, and make_schedule cuts it so that the run does.
    if (args.was_given("warmup") && t.steps > 0 && t.warmup >= t.steps && ranks.is_main()) {
        output(stderr,
               "attograd: warning: --warmup {} is not shorter than --steps {}: the warm-up is cut to {} "
               "step(s), so the learning rate reaches --lr {:g} only at the last step\n",
               t.warmup, t.steps, t.steps - 1, t.lr);
    }

    auto optimizer = make_optimizer(t, model->parameters());
    auto schedule = make_schedule(*optimizer, t);
    std::int64_t step = 0;
    double prior_seconds = 0.0;
    std::string metrics = metrics_header;
    if (resuming) {
        const auto state = load_safetensors(out / "optimizer.safetensors");
        check_all_finite(state, out / "optimizer.safetensors");
        check_schedule_state(state, out / "optimizer.safetensors", counters.steps_done, t);
        try {
            optimizer->load_state_dict(unprefixed(state, "optimizer."));
            if (schedule) schedule->load_state_dict(unprefixed(state, "schedule."));
        } catch (const Error& e) {
            throw IoError(fmt::format("{}: does not fit this run: {}",
                                      shown_path(out / "optimizer.safetensors"), e.what()));
        }
        step = counters.steps_done;
        // A parameter's update count cannot exceed the run's steps (config.json's progress).
        for (const auto& [name, tensor] : state) {
            if (!name.starts_with("optimizer.state.") || !name.ends_with(".step") || tensor.numel() != 1)
                continue;
            AG_CHECK(tensor.item() <= static_cast<double>(step), IoError,
                     "{}: '{}' counts {} updates, but the run has done {} steps (config.json: "
                     "progress.steps_done)",
                     shown_path(out / "optimizer.safetensors"), name, tensor.item(), step);
        }
        prior_seconds = counters.seconds;
        metrics = train::read_file(out / "metrics.csv");
        if (step >= t.steps && !counters.evaluation_pending) {
            throw UsageError(
                fmt::format("the run in {} has done {} steps already; pass --steps N with N > {}",
                            shown_path(out), step, step));
        }
        if (counters.reached_target && t.early_stop) {
            throw UsageError(
                fmt::format("the run in {} reached its target at step {} and stopped early; pass "
                            "--no-early-stop to train it further",
                            shown_path(out), step));
        }
    }

    if (t.batch < ranks.size())
        throw UsageError(
            fmt::format("--batch {} is smaller than the number of ranks ({})", t.batch, ranks.size()));
    if (!setup_agreed()) return 2;                            // another rank's set-up failed and said why
    optim::DistributedDataParallel ddp(model->parameters());  // rank 0's parameters everywhere

    // With finite parameters the outputs can still overflow (a huge --lr): an evaluation or a
    // snapshot then meets NaN, which is the run diverging, not a bad input.
    const auto diverged_if_it_fails = [&](auto&& body) {
        try {
            return body();
        } catch (const ValueError& e) {
            throw ValueError(
                fmt::format("training diverged at step {}: {}; try a lower --lr or --clip", step, e.what()));
        }
    };
    std::int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    train::Progress progress(step, t.steps, args.quiet || !ranks.is_main());
    progress.line(fmt::format("{} {}: {}", resuming ? "resuming" : "training", info.name,
                              describe(config, parameters)));
    progress.line(
        fmt::format("{} lr {:g}, batch {}, {} steps from step {}; target {:.0f}% held-out {} accuracy on {} "
                    "examples",
                    t.optim, t.lr, t.batch, t.steps, step, 100 * target_accuracy(info.name),
                    info.metric == Metric::Sequence ? "sequence" : "token", task->held_out().size()));

    const std::int64_t log_every = std::max<std::int64_t>(1, std::min<std::int64_t>(t.eval_every, 10));
    // The window of steps since the last metrics line continues across a resume.
    double loss_sum = counters.window_loss_sum, accuracy_sum = counters.window_accuracy_sum;
    double shown_loss = 0.0, shown_accuracy = 0.0;
    std::int64_t logged = counters.window_steps;
    Evaluation last;
    last.token_accuracy = counters.heldout_token_accuracy;
    last.sequence_accuracy = counters.heldout_sequence_accuracy;
    bool evaluated = false, reached = counters.reached_target;

    // Snapshots of the first held-out examples' attention (they draw no random numbers: the
    // training is the same with and without them).
    std::unique_ptr<inspect::AttentionSnapshotter> snapshotter;
    if (t.snapshot_every > 0 && ranks.is_main()) {
        auto probes = snapshot_probes(*model, config.model, *task, config.vocab, snapshot_probe_count);
        if (!probes.empty()) {
            snapshotter = std::make_unique<inspect::AttentionSnapshotter>(
                *model, std::move(probes),
                inspect::SnapshotOptions{.every = t.snapshot_every, .max_snapshots = max_snapshots});
            if (resuming && fs::exists(out / snapshot_file)) {
                auto earlier = inspect::load_snapshots(out / snapshot_file);
                std::erase_if(earlier, [&](const inspect::AttentionSnapshot& s) { return s.step > step; });
                // The period the earlier run reached, unless --snapshot-every changed it.
                const bool same_period =
                    !args.was_given("snapshot-every") || args.snapshot_every == run_snapshot_every;
                try {
                    snapshotter->resume(std::move(earlier), same_period ? counters.snapshot_period : 0);
                } catch (const ValueError& e) {
                    throw IoError(fmt::format(
                        "config.json: progress.snapshot_period does not fit this run: {}", e.what()));
                }
            }
        }
    }

    // Writes the run as it stands: a complete, resumable generation of the directory.
    const auto save_run = [&] {
        if (!ranks.is_main()) return;
        counters.steps_done = step;
        counters.seconds = prior_seconds + progress.elapsed();
        counters.heldout_token_accuracy = last.token_accuracy;
        counters.heldout_sequence_accuracy = last.sequence_accuracy;
        counters.reached_target = reached;
        counters.window_loss_sum = loss_sum;
        counters.window_accuracy_sum = accuracy_sum;
        counters.window_steps = logged;
        if (snapshotter) counters.snapshot_period = snapshotter->every();
        train::RunWriter writer(run_path);
        writer.save_tensors("model.safetensors", model->state_dict());
        auto state = prefixed(optimizer->state_dict(), "optimizer.");
        // Saved with or without a schedule, so that a resume whose --steps adds one finds it.
        state.insert_or_assign("schedule.last_epoch",
                               schedule ? schedule->state_dict().at("last_epoch") : index_tensor({step}, {}));
        writer.save_tensors("optimizer.safetensors", state);
        if (snapshotter) {
            writer.write_with(snapshot_file, [&](const fs::path& path) {
                inspect::save_snapshots(path, snapshotter->snapshots());
            });
        } else if (resuming && fs::exists(out / snapshot_file)) {
            writer.write_file(snapshot_file, train::read_file(out / snapshot_file));  // kept from the earlier run
        }
        writer.write_file("metrics.csv", metrics);
        if (config.task.name == "data")
            writer.write_file("heldout.tsv", data::to_tsv(task->held_out(), config.task.chars));
        nlohmann::json json = to_json(config);
        json["progress"] = to_json(counters);
        writer.commit(std::move(json));
    };

    // A run interrupted in the held-out evaluation of its last step resumes with that
    // evaluation (and the step's metrics line), then goes on as the uninterrupted run did.
    bool resume_evaluation = counters.evaluation_pending;
    const auto stop_for_signal = [&](int signal) {
        progress.finish();
        save_run();
        if (ranks.is_main())
            output(stderr,
                   "attograd: {} at step {} of {}: saved the run; continue it with `attograd train "
                   "--resume {}`\n",
                   train::signal_name(signal), step, t.steps, shell_quote(out.string()));
        return 128 + signal;
    };
    // After step `step`: its figures, the metrics line when due, the held-out evaluation when due
    // (abandoned at a Ctrl-C between batches, train::Interrupted, to be done again on --resume). True
    // when training ends at this step (the target reached, or the last step).
    const auto after_step = [&](double lr) {
        const bool eval_due = step % t.eval_every == 0 || step == t.steps;
        counters.evaluation_pending = false;
        if (step % log_every == 0 || eval_due) {
            shown_loss = loss_sum / static_cast<double>(logged);
            shown_accuracy = accuracy_sum / static_cast<double>(logged);
            std::string heldout = ",";
            if (eval_due) {
                counters.evaluation_pending = true;
                counters.pending_lr = lr;
                model->eval();
                last = diverged_if_it_fails([&] {
                    return evaluate_split(*model, config.vocab, task->held_out(),
                                          [&] { interrupts.check(); });
                });
                model->train();
                counters.evaluation_pending = false;
                evaluated = true;
                heldout = fmt::format("{:.6f},{:.6f}", last.token_accuracy, last.sequence_accuracy);
                const double metric =
                    info.metric == Metric::Sequence ? last.sequence_accuracy : last.token_accuracy;
                reached = metric >= target_accuracy(info.name);
                progress.line(
                    fmt::format("step {:>5}  loss {:.4f}  train acc {:.3f}  held-out token {:.3f} sequence "
                                "{:.3f}  ({:.1f} s)",
                                step, shown_loss, shown_accuracy, last.token_accuracy, last.sequence_accuracy,
                                prior_seconds + progress.elapsed()));
            }
            metrics += fmt::format("{},{:.6f},{:.6f},{},{:.6g},{:.3f}\n", step, shown_loss, shown_accuracy,
                                   heldout, lr, prior_seconds + progress.elapsed());
            loss_sum = accuracy_sum = 0.0;
            logged = 0;
            if (reached && t.early_stop) return true;
        }
        return step == t.steps;
    };

    // One training step (step + 1): returns its learning rate.
    const auto train_step = [&] {
        // The model's own samples (hard attention, dropout) are seeded per step too, so that a
        // resumed run draws what the uninterrupted one would have.
        model_generator->manual_seed(batch_seed(~t.seed + static_cast<std::uint64_t>(ranks.rank()), step));
        if (snapshotter) diverged_if_it_fails([&] { snapshotter->maybe_snapshot(step); });
        Generator batch_generator(batch_seed(t.seed, step));
        std::vector<std::vector<std::int64_t>> sources, targets;
        const Share share = share_of(t.batch, ranks.rank(), ranks.size());  // all of it in one process
        for (std::int64_t i = 0; i < t.batch; ++i) {
            const Example example = task->train_example(batch_generator);
            if (i < share.start || i >= share.start + share.length) continue;
            sources.push_back(config.vocab.encode(example.source));
            targets.push_back(config.vocab.encode(example.target));
        }
        const Batch batch = model->make_batch(sources, &targets);
        optimizer->zero_grad();
        const ForwardResult result = model->forward(batch);
        const std::int64_t v = result.logits.size(-1);
        const Tensor flat_logits = reshape(result.logits, {-1, v});
        const Tensor flat_target = reshape(batch.target, {-1});
        Tensor loss = cross_entropy(flat_logits, flat_target, {.ignore_index = Vocabulary::pad_id});
        const StepFigures mine{.loss = loss.item(),
                               .accuracy = batch_accuracy(result.logits, batch.target),
                               .tokens = target_tokens(batch.target)};
        const StepFigures figures = whole_batch(mine);  // the same on every rank
        const double loss_value = figures.loss;
        // The figures are the whole batch's: every rank takes these decisions alike.
        if (!std::isfinite(loss_value)) {
            throw_on_every_rank(ValueError(fmt::format(
                "training diverged at step {} (loss {}); try a lower --lr or --clip", step + 1, loss_value)));
        }
        if (counters.initial_loss == 0.0) counters.initial_loss = loss_value;
        counters.high_loss_steps =
            loss_value > kDivergedFactor * counters.initial_loss ? counters.high_loss_steps + 1 : 0;
        if (counters.high_loss_steps >= kDivergedSteps) {
            throw_on_every_rank(ValueError(
                fmt::format("training diverged at step {}: the loss ({:.4g}) has been above {:g}x its first "
                            "value ({:.4g}) for {} steps; try a lower --lr or --clip",
                            step + 1, loss_value, kDivergedFactor, counters.initial_loss, kDivergedSteps)));
        }
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
        loss.backward();
        ddp.average_gradients(mine.tokens);  // the whole batch's mean-loss gradient on every rank
        if (t.clip > 0.0) optim::clip_grad_norm(model->parameters(), t.clip);
        const double lr = optimizer->lr();
        optimizer->step();
        if (schedule) schedule->step();
        ++step;
        // The same parameters on every rank (DistributedDataParallel), so the same decision.
        if (const std::string name = first_non_finite(*model); !name.empty()) {
            throw_on_every_rank(
                ValueError(fmt::format("training diverged at step {}: the update made parameter '{}' NaN "
                                       "or infinite; try a lower --lr or --clip",
                                       step, name)));
        }

        loss_sum += loss_value;
        accuracy_sum += figures.accuracy;
        ++logged;
        progress.update(step, logged > 0 ? loss_sum / static_cast<double>(logged) : shown_loss,
                        logged > 0 ? accuracy_sum / static_cast<double>(logged) : shown_accuracy);
        return lr;
    };

    model->train();
    while (step < t.steps || resume_evaluation) {
        const double lr = resume_evaluation ? counters.pending_lr : train_step();
        resume_evaluation = false;
        try {
            if (after_step(lr)) break;
        } catch (const train::Interrupted& interrupted) {  // a single process: see evaluate_split
            return stop_for_signal(interrupted.signal());
        }
        interrupts.test_hook(step);
        if (const int signal = agreed_signal(interrupts.signal()); signal != 0)
            return stop_for_signal(signal);
        if ((t.checkpoint_every > 0 && step % t.checkpoint_every == 0) || step % t.eval_every == 0)
            save_run();
    }
    if (snapshotter && (snapshotter->snapshots().empty() || snapshotter->snapshots().back().step < step)) {
        diverged_if_it_fails([&] { snapshotter->snapshot(step); });  // the trained model
    }
    progress.finish();
    if (!evaluated) {
        model->eval();
        last = diverged_if_it_fails([&] { return evaluate_split(*model, config.vocab, task->held_out()); });
        const double metric = info.metric == Metric::Sequence ? last.sequence_accuracy : last.token_accuracy;
        reached = metric >= target_accuracy(info.name);
    }
    const double seconds = prior_seconds + progress.elapsed();
    save_run();
    if (!ranks.is_main()) return 0;

    output(stdout,
           "{}: held-out sequence accuracy {:.1f}%, token accuracy {:.1f}% after {} steps in {:.1f} s{}\n",
           info.name, 100 * last.sequence_accuracy, 100 * last.token_accuracy, step, seconds,
           reached ? fmt::format(" (target {:.0f}% reached)", 100 * target_accuracy(info.name)) : "");
    output(stdout,
           "wrote {}/ (model.safetensors, optimizer.safetensors, config.json, metrics.csv{}); next: attograd "
           "inspect --run {}\n",
           shown_path(out), snapshotter ? ", " + std::string(snapshot_file) : "", shell_quote(out.string()));
    return 0;
}

}  // namespace attograd::cli
