// `attograd train`: the run it trains (new or resumed), checked and locked before training.
#include "train_setup.hpp"
#include "console.hpp"
#include "memory_check.hpp"
#include "quoting.hpp"
#include "settings.hpp"
#include "uniform_attention.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/example_vocabulary.hpp"
#include "data/text.hpp"
#include "data/translate_task.hpp"
#include "data/tsv.hpp"
#include "optim/adam.hpp"
#include "optim/sgd.hpp"
#include "train/file_io.hpp"
#include "train/metrics_csv.hpp"
#include "train/run_dir.hpp"
#include "train/run_writer.hpp"
#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <tuple>

namespace attograd::cli {

namespace {

namespace fs = std::filesystem;

/// Whether --resume accepts option `name` (the others would change the saved run).
bool resumable(const std::string& name) {
    const Setting* setting = find_setting_by_flag(name);
    return name == "resume" || name == "quiet" || (setting != nullptr && setting->resumable);
}

/// "--steps, --eval-every, ..., --quiet": the options --resume accepts besides itself.
std::string resumable_text() {
    std::string text;
    for (const Setting& setting : settings())
        if (setting.resumable) text += fmt::format("--{}, ", setting.flag);
    return text + "--quiet";
}

/// Whether the run gets separate source and target vocabularies: --vocab, by default for
/// translate (its two languages share few words) and not for --data (a file may copy or edit its
/// sources, as the bundled tasks do). UsageError for another value, or --vocab elsewhere.
bool separate_vocabularies(const TrainArgs& args, const std::string& task) {
    if (!args.was_given("vocab")) return task == "translate";
    if (task != "translate" && task != "data")
        throw UsageError("--vocab applies to --task translate and --data only (a bundled task has one)");
    if (args.vocab != "separate" && args.vocab != "shared")
        throw UsageError(fmt::format("--vocab must be separate or shared, got '{}'",
                                     data::escape_control(excerpt(args.vocab, 40))));
    return args.vocab == "separate";
}

/// translate's vocabularies (separate by default), from the training pairs, without words seen
/// fewer than --min-freq times (read as <unk>), at most --max-vocab entries each.
void set_translate_vocabulary(const TrainArgs& args, const Task& task, RunConfig& config) {
    if (args.min_freq < 1) throw UsageError(fmt::format("--min-freq must be >= 1, got {}", args.min_freq));
    if (args.max_vocab != 0 && args.max_vocab < Vocabulary::reserved_count)
        throw UsageError(fmt::format("--max-vocab must be 0 (no limit) or >= {} (the special tokens), got {}",
                                     Vocabulary::reserved_count, args.max_vocab));
    config.task.lang = args.was_given("lang") ? args.lang : "fr";
    config.task.min_freq = args.min_freq;
    config.task.max_vocab = args.max_vocab;
    data::VocabularyOptions options{.min_freq = args.min_freq};
    if (args.max_vocab != 0) options.max_tokens = args.max_vocab;
    const auto& pairs = dynamic_cast<const data::TranslateTask&>(task).train_set();
    if (separate_vocabularies(args, config.task.name)) {
        config.vocab = data::build_vocabulary(pairs, data::ExampleSide::Source, options);
        config.target_vocab = data::build_vocabulary(pairs, data::ExampleSide::Target, options);
    } else {
        config.vocab = data::build_vocabulary(pairs, data::ExampleSide::Both, options);
    }
    // Nothing but <pad>, <bos>, <eos> and <unk> on a side: every word would be <unk>.
    for (const Vocabulary* side : {&config.vocab, config.target_vocab ? &*config.target_vocab : nullptr}) {
        if (side == nullptr || side->size() > Vocabulary::reserved_count) continue;
        const char* which = !config.target_vocab ? "" : side == &config.vocab ? "source " : "target ";
        throw UsageError(
            fmt::format("--min-freq {} leaves no word of the training pairs in the {}vocabulary: "
                        "every word would be <unk>; choose a smaller --min-freq",
                        args.min_freq, which));
    }
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
    // The save drops the old run's files, which are those its config.json lists: a listed name
    // attograd never writes (an entry added by hand) would take a file of the user's with them.
    // Without a readable list the old directory is removed whole, so it must hold run files only.
    nlohmann::json old;
    std::string unreadable;
    try {
        old = train::read_run_json(out / "config.json");
    } catch (const IoError& e) {
        unreadable = e.what();
    }
    if (unreadable.empty() && old.is_object() && old.contains("files") && old["files"].is_object()) {
        // The old run's own kind decides which names it may list (heldout.tsv: data runs only).
        const bool bundled_task = old.contains("task") && old["task"].is_object() &&
                                  old["task"].contains("name") && old["task"]["name"].is_string() &&
                                  old["task"]["name"] != "data";
        check_run_file_names(old, !bundled_task, out);
        return;
    }
    const auto names = run_file_names(true);
    for (const auto& entry : fs::directory_iterator(out, ec)) {
        const std::string name = entry.path().filename().string();
        if (name == "config.json" || std::find(names.begin(), names.end(), name) != names.end()) continue;
        throw IoError(
            fmt::format("--out {}: its config.json lists no run files ({}), so --force replacing the run "
                        "would remove '{}' "
                        "with it; move that out of the directory first",
                        shown_path(out), unreadable.empty() ? "no 'files' object" : excerpt(unreadable, 200),
                        data::escape_control(excerpt(name, 80))));
    }
}

/// Refuses a run directory that is the current directory or holds it (as the library does,
/// train::check_not_current_directory), as bad usage naming the option.
void check_not_cwd(const fs::path& dir, const char* option) {
    if (!train::holds_current_directory(dir)) return;
    throw UsageError(fmt::format(
        "{} {}: is the current directory or holds it; each save replaces the run directory, which "
        "would leave your shell in a deleted directory: run attograd from outside it",
        option, shown_path(dir)));
}

/// Refuses the flags of another kind of model (`kind`, the --model of the run): the recurrent
/// model's without --model rnn, the Transformer decoder's without --model seq2seq, the
/// Transformer layers' with --model rnn.
void check_model_flags(const TrainArgs& a, const std::string& kind) {
    const auto given = [&](const Setting& s, ModelKinds kinds) {
        return s.applies_to == kinds && !s.flag.empty() && a.was_given(std::string(s.flag));
    };
    for (const Setting& s : settings()) {
        if (kind != "rnn" && given(s, ModelKinds::rnn))
            throw UsageError(fmt::format("--{} applies to --model rnn only", s.flag));
        if (kind != "seq2seq" && given(s, ModelKinds::seq2seq))
            throw UsageError(
                fmt::format("--{} applies to --model seq2seq only (--model {} has no Transformer "
                            "decoder)",
                            s.flag, kind));
    }
    for (const Setting& s : settings()) {
        if (kind == "lm" && s.not_lm && a.was_given(std::string(s.flag)))
            throw UsageError(fmt::format(
                "--{} does not apply to --model lm (causal scaled dot-product self-attention); it takes "
                "--layers, --heads, --embed-dim, --ffn-dim, --dropout",
                s.flag));
    }
    for (const Setting& s : settings()) {
        if (kind == "rnn" && given(s, ModelKinds::transformer))
            throw UsageError(fmt::format(
                "--{} sets the Transformer models' layers; --model rnn takes --rnn-layers, --cell, --decoder",
                s.flag));
    }
}

/// Sets the settings whose flags were given.
void copy_given_settings(const TrainArgs& a, RunConfig& c) {
    for (const Setting& setting : settings()) {
        if (!setting.flag.empty() && a.was_given(std::string(setting.flag))) setting.copy(a.flags, c);
    }
}

/// A new run's settings: the flags given, and the defaults that follow from the model.
void apply_overrides(const TrainArgs& a, RunConfig& c) {
    copy_given_settings(a, c);
    ModelConfig& m = c.model;
    // The recurrent decoders' own scores unless one is asked for: the additive score of Bahdanau
    // et al. and Luong et al.'s "general" (bilinear) score.
    if (m.kind == "rnn" && !a.was_given("score")) m.score = m.decoder == "luong" ? "bilinear" : "additive";
    if (m.kind == "rnn" && !a.was_given("heads")) m.heads = 1;  // a task's Transformer default (dates: 4)
    if (writes_per_input(m) && !a.was_given("layers")) m.layers = std::max<std::int64_t>(m.layers, 1);
}

/// Refuses schedule state in optimizer.safetensors that this run cannot have written:
/// schedule.last_epoch must be the steps done (the schedule steps once per training step) and
/// optimizer.initial_lr (set by a schedule), or optimizer.lr when saved without a schedule, the
/// configured lr; optimizer.initial_lr present exactly when the run has a schedule (`scheduled`),
/// or absent before the first step.
/// Throws IoError naming the field.
void check_schedule_state(const std::map<std::string, Tensor>& state, const fs::path& file,
                          std::int64_t steps_done, const TrainConfig& t, bool scheduled) {
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
    // (A run saved before its first step, as a --steps 0 run is, had nothing to schedule yet.)
    AG_CHECK(
        (initial_lr != state.end()) == scheduled || (initial_lr == state.end() && steps_done == 0), IoError,
        "{}: {} 'optimizer.initial_lr', which only a schedule sets, but config.json's train.schedule '{}' "
        "with train.warmup {} {}",
        shown_path(file), scheduled ? "has no" : "holds", t.schedule, t.warmup,
        scheduled ? "changes the lr" : "never changes it");
    const char* key = initial_lr != state.end() ? "optimizer.initial_lr" : "optimizer.lr";
    if (const auto lr = state.find(key); lr != state.end()) {
        AG_CHECK(lr->second.numel() == 1 && lr->second.item() == t.lr, IoError,
                 "{}: '{}' is {}, but the run's lr is {} (config.json: train.lr)", shown_path(file), key,
                 lr->second.numel() == 1 ? lr->second.item() : -1.0, t.lr);
    }
}

}  // namespace

TrainSetup setup_training(const TrainArgs& args, const optim::ProcessGroup& ranks) {
    TrainSetup s;
    s.resuming = !args.resume.empty();
    const bool resuming = s.resuming;
    RunConfig& config = s.config;
    std::unique_ptr<Task>& task = s.task;
    fs::path& out = s.out;
    if (resuming) {
        for (const auto& name : args.given) {
            if (!resumable(name) && !(name == "out" && fs::path(args.out) == fs::path(args.resume))) {
                throw UsageError(
                    fmt::format("--resume continues a run with its saved configuration; --{} cannot be given "
                                "with it (allowed: {})",
                                name, resumable_text()));
            }
        }
        check_not_cwd(args.resume, "--resume");
        if (ranks.is_main()) {
            train::check_room_for_saves(args.resume);  // before any step is spent
            s.lock =
                std::make_unique<train::RunLock>(args.resume);  // before reading: no save slips in between
        }
        LoadedRun run = load_run(args.resume, true);
        config = run.config;
        s.run_snapshot_every = config.train.snapshot_every;
        task = std::move(run.task);
        s.model = run.model;
        s.model_generator = std::move(run.generator);
        s.counters = run.counters;
        out = run.dir;
        copy_given_settings(args, config);  // the resumable settings only: the others were refused above
        AG_CHECK(fs::exists(out / "optimizer.safetensors"), IoError,
                 "{}: missing; this run cannot be resumed", shown_path(out / "optimizer.safetensors"));
        // The run's clock goes on from progress.seconds (load_run checked the rows already logged
        // against it): the seconds this resume adds must stay within what a run may record.
        AG_CHECK(
            s.counters.seconds <= kResumableSeconds, IoError,
            "{}: progress.seconds {} is past {:g}, the most a run resumes from: its seconds could pass the "
            "2e9 a run may record (31 years of training: an edited field, or a run resumed from one)",
            shown_path(out / "config.json"), s.counters.seconds, kResumableSeconds);
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
            if (args.task == "translate") {
                const std::string lang = args.was_given("lang") ? args.lang : "fr";
                try {
                    task = data::make_translate_task(translate_options(lang));
                } catch (const ValueError& e) {  // the catalogs of the language --lang names
                    throw UsageError(fmt::format("--lang {}: {}", shell_quote(lang), e.what()));
                }
            } else
                task = data::make_task(args.task);
        }
        config = default_config(*task);

        if (config.task.name == "translate") set_translate_vocabulary(args, *task, config);
        // --data: every token of the file, the held-out examples' too, one vocabulary or one per side
        if (!args.data.empty())
            std::tie(config.vocab, config.target_vocab) =
                data_vocabularies(training_data->dataset, separate_vocabularies(args, config.task.name));
        if (args.was_given("vocab")) (void)separate_vocabularies(args, config.task.name);
        for (const char* flag : {"lang", "min-freq", "max-vocab"})
            if (args.was_given(flag) && config.task.name != "translate")
                throw UsageError(fmt::format("--{} applies to --task translate only", flag));
        if (!args.data.empty()) {
            config.task.data = fs::absolute(args.data).string();
            config.task.chars = args.chars;
            config.task.data_bytes = training_data->bytes;  // what --resume checks the file against
            config.task.data_fnv1a64 = training_data->fnv1a64;
        }
        if (const auto* translate = dynamic_cast<const data::TranslateTask*>(task.get()))
            std::tie(config.task.data_bytes, config.task.data_fnv1a64) = translate_pairs_checksum(*translate);
        config.task.heldout_fnv1a64 = heldout_checksum(task->held_out(), config.task.chars);
        if (args.was_given("local") && !args.was_given("window")) {
            throw UsageError("--local needs --window D (the half-width of the local window)");
        }
        if (args.was_given("estimator") &&
            (args.was_given("attention") ? args.flags.model.attention : config.model.attention) != "hard") {
            throw UsageError("--estimator applies to --attention hard only");
        }
        if (args.was_given("uniform-attention") && args.flags.model.uniform_attention < 0) {
            throw UsageError(
                fmt::format("--uniform-attention must be an attention layer's number >= 0 (as inspect lists "
                            "them), got {}",
                            args.flags.model.uniform_attention));
        }
        if (args.was_given("window") && args.flags.model.window < 0) {
            throw UsageError(fmt::format("--window must be >= 0, got {} (leave it out for global attention)",
                                         args.flags.model.window));
        }
        check_model_flags(args, args.was_given("model") ? args.flags.model.kind : config.model.kind);
        apply_overrides(args, config);
        validate(config, task->info());
        check_memory(config, SettingNames::flags(), available_bytes());  // before the model is built
        // Built before --out is touched: a layer number the model does not have is refused first.
        s.model_generator = std::make_unique<Generator>(config.train.seed);
        s.model = make_model(config.model, vocabularies(config), *s.model_generator);
        if (config.model.uniform_attention >= 0)
            s.model = with_uniform_attention(s.model, config.model.uniform_attention, "--uniform-attention");
        out = args.out.empty() ? fs::path("runs") / config.task.name : fs::path(args.out);
        if (ranks.is_main()) {
            check_not_cwd(out, "--out");
            train::check_room_for_saves(out);  // before any step is spent
            s.lock =
                std::make_unique<train::RunLock>(out);  // a second `train --out` of the same DIR exits here
            // Where the run goes: `missing/../run` is `run` for the save, whatever the kernel says of it.
            check_out_is_free(train::run_directory_path(out), args.force);
            train::RunWriter probe(out);  // a bad --out fails now, not after training
        }
    }
    // On --resume the settings are config.json's but for the flags it allows.
    validate(config, task->info(), resuming ? SettingNames::config_file(args.given) : SettingNames::flags());
    const TrainConfig& t = config.train;
    // As PyTorch's LinearLR with total_iters beyond the run, a long warm-up is not an error; but
    // it never reaches the peak lr there, and make_schedule cuts it so that the run does.
    if (args.was_given("warmup") && t.steps > 0 && t.warmup >= t.steps && ranks.is_main()) {
        output(stderr,
               "attograd: warning: --warmup {} is not shorter than --steps {}: the warm-up is cut to {} "
               "step(s), so the learning rate reaches --lr {:g} only at the last step\n",
               t.warmup, t.steps, t.steps - 1, t.lr);
    }
    if (t.batch < ranks.size())
        throw UsageError(
            fmt::format("--batch {} is smaller than the number of ranks ({})", t.batch, ranks.size()));
    return s;
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

std::map<std::string, Tensor> load_optimizer_file(const fs::path& dir, const TrainConfig& t,
                                                  std::int64_t steps_done, optim::Optimizer& optimizer,
                                                  optim::LRScheduler* schedule) {
    const fs::path file = dir / "optimizer.safetensors";
    const auto state = train::load_checkpoint(file);
    for (const auto& [name, tensor] : state)
        AG_CHECK(name.starts_with("optimizer.") || name.starts_with("schedule."), IoError,
                 "{}: holds '{}', which train does not write (its tensors are the optimizer's and the "
                 "schedule's)",
                 shown_path(file), data::escape_control(excerpt(name, 80)));
    check_schedule_state(state, file, steps_done, t, schedule != nullptr);
    train::load_optimizer_state(optimizer, schedule, state, file);
    // A parameter's update count cannot exceed the run's steps (config.json's progress).
    for (const auto& [name, tensor] : state) {
        if (!name.starts_with("optimizer.state.") || !name.ends_with(".step") || tensor.numel() != 1)
            continue;
        AG_CHECK(tensor.item() <= static_cast<double>(steps_done), IoError,
                 "{}: '{}' counts {} updates, but the run has done {} steps (config.json: "
                 "progress.steps_done)",
                 shown_path(file), name, tensor.item(), steps_done);
    }
    return state;
}

void check_scheduled_lr(const std::map<std::string, Tensor>& state, const fs::path& file,
                        const optim::LRScheduler& schedule) {
    const auto lr = state.find("optimizer.lr");
    if (lr == state.end() || lr->second.numel() != 1) return;  // load_optimizer_file names it
    const double saved = lr->second.item(), expected = schedule.lr_at(schedule.last_epoch());
    AG_CHECK(
        std::abs(saved - expected) <= 1e-9 * std::max(std::abs(expected), 1e-30), IoError,
        "{}: 'optimizer.lr' is {}, but config.json's train settings (lr, schedule, warmup, steps) give {} "
        "after {} steps: one of the two files was edited",
        shown_path(file), saved, expected, schedule.last_epoch());
}

void check_resume_state(const TrainSetup& s, optim::Optimizer& optimizer, optim::LRScheduler* schedule) {
    const TrainConfig& t = s.config.train;
    const fs::path& out = s.out;
    const RunProgress& counters = s.counters;
    const std::int64_t step = counters.steps_done;
    if (!s.resuming) return;
    load_optimizer_file(out, t, step, optimizer, schedule);
    // A pending held-out evaluation (interrupted at step `step`) still runs at --steps `step`.
    if (step > t.steps || (step == t.steps && !counters.evaluation_pending)) {
        throw UsageError(fmt::format("the run in {} has done {} steps already; pass --steps N with N {} {}",
                                     shown_path(out), step, counters.evaluation_pending ? ">=" : ">", step));
    }
    if (counters.reached_target && t.early_stop) {
        throw UsageError(
            fmt::format("the run in {} reached its target at step {} and stopped early; pass "
                        "--no-early-stop to train it further",
                        shown_path(out), step));
    }
}

std::string describe(const RunConfig& c, std::int64_t parameters) {
    const ModelConfig& m = c.model;
    std::string attention = m.score + " " + m.attention;
    if (m.window >= 0) attention += fmt::format(" local-{} (D = {})", m.local, m.window);
    const std::string dropout = m.dropout > 0.0 ? fmt::format(", dropout {:g}", m.dropout) : "";
    if (m.kind == "rnn") {
        return fmt::format(
            "rnn model: {} {} encoder layer(s){}, {} decoder, {} attention, E = {}{}, {} parameters",
            m.rnn_layers, m.cell, m.bidirectional ? " (bidirectional)" : "", m.decoder, attention,
            m.embed_dim, dropout, parameters);
    }
    if (m.kind == "lm") {
        return fmt::format(
            "lm model: {} causal self-attention layer(s) x {} head(s), feed-forward {}, E = {}, {} "
            "parameters",
            m.layers, m.heads, m.ffn_dim, m.embed_dim, parameters);
    }
    if (m.kind == "encoder") {
        return fmt::format(
            "encoder model: {} self-attention layer(s) x {} head(s), {} attention, E = {}{}, {} parameters",
            m.layers, m.heads, attention, m.embed_dim, dropout, parameters);
    }
    return fmt::format(
        "seq2seq model: {} encoder layer(s), {} decoder layer(s){}, {} head(s), {} attention, E = {}{}, {} "
        "parameters",
        m.layers, m.decoder_layers, m.decoder_self_attention ? " with causal self-attention" : "", m.heads,
        attention, m.embed_dim, dropout, parameters);
}

}  // namespace attograd::cli
