// A run directory: what `train` writes and `eval` / `inspect` / `train --resume` read.
#include "run_dir.hpp"
#include "quoting.hpp"

#include "core/atomic_file.hpp"
#include "core/autograd.hpp"
#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_reduce.hpp"
#include "core/serialization.hpp"
#include "data/example_vocabulary.hpp"
#include "data/text.hpp"
#include "data/translate_task.hpp"
#include "data/tsv.hpp"
#include "inspect/snapshot.hpp"
#include "memory_check.hpp"
#include "settings.hpp"
#include "snapshot_probes.hpp"
#include "train/file_io.hpp"
#include "train/metrics_csv.hpp"
#include "train/run_writer.hpp"
#include "train_setup.hpp"
#include "train_step.hpp"
#include "uniform_attention.hpp"

#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <tuple>

namespace attograd::cli {

std::vector<data::Example> read_saved_heldout(const RunConfig& config, const std::filesystem::path& dir) {
    auto held_out = data::TsvDataset::read(dir / "heldout.tsv", config.task.chars).examples();
    // The vocabularies were built from every example of the data, the held-out ones included: a
    // token they lack would be evaluated as <unk>, so the file is not this run's.
    const Vocabularies vocab = vocabularies(config);
    for (std::size_t i = 0; i < held_out.size(); ++i) {
        for (const auto& [tokens, side, field] :
             {std::tuple{&held_out[i].source, &vocab.source, "vocab"},
              {&held_out[i].target, &vocab.target, config.target_vocab ? "target_vocab" : "vocab"}}) {
            for (const std::string& token : *tokens) {
                AG_CHECK(side->contains(token), IoError,
                         "{}: example {}: token '{}' is not in config.json's {} (the held-out examples of "
                         "this run's data have every token in it)",
                         shown_path(dir / "heldout.tsv"), i + 1, data::escape_control(excerpt(token, 40)),
                         field);
            }
        }
    }
    return held_out;
}

std::string heldout_checksum(const std::vector<data::Example>& held_out, bool chars) {
    return fmt::format("{:016x}", fnv1a64(data::to_tsv(held_out, chars)));
}

namespace {

// The --data file a run started on, when it is still there with the size and checksum the run
// recorded (eval and inspect need only heldout.tsv; nothing when the file is gone or changed).
std::optional<data::TsvDataset> unchanged_training_data(const RunConfig& config) {
    std::error_code error;
    if (config.task.data_fnv1a64.empty() || !std::filesystem::is_regular_file(config.task.data, error) ||
        std::filesystem::file_size(config.task.data, error) != config.task.data_bytes || error)
        return std::nullopt;
    std::optional<TrainingData> data;
    try {
        data = read_training_data(config.task.data, config.task.chars);
    } catch (const Error&) {  // unreadable now
        return std::nullopt;
    }
    if (data->fnv1a64 != config.task.data_fnv1a64) return std::nullopt;
    return std::move(data->dataset);
}

// A data run's heldout.tsv is the split make_data_task takes of the training file.
void check_heldout_split(const RunConfig& config, const std::filesystem::path& dir,
                         const std::vector<data::Example>& held_out, const data::TsvDataset& dataset) {
    AG_CHECK(data::make_data_task(dataset)->held_out() == held_out, IoError,
             "{}: is not the held-out split of {}, the training data this run started on (same size and "
             "checksum): train saved that split there",
             shown_path(dir / "heldout.tsv"), shown_path(config.task.data));
}

// Refuses (ValueError naming config.json's vocab) a --data run's vocabularies other than those
// train builds (data_vocabularies): of `dataset` where the data file is at hand, otherwise
// checked for their canonical order. Another order keeps every weight's shape but reads each
// embedding and output row as another token.
void check_data_vocabularies(const RunConfig& config, const data::TsvDataset* dataset) {
    const bool separate = config.target_vocab.has_value();
    if (dataset != nullptr) {
        const auto [source, target] = data_vocabularies(*dataset, separate);
        AG_CHECK(
            config.vocab.tokens() == source.tokens() &&
                (!separate || config.target_vocab->tokens() == target->tokens()),
            ValueError,
            "config.json: vocab{} is not what train builds from {}, the training data this run started on "
            "(same size and checksum; its tokens in byte order): the model's embeddings and outputs would "
            "be read as other tokens",
            separate ? " or target_vocab" : "", shown_path(config.task.data));
        return;
    }
    for (const auto& [vocab, field] :
         {std::pair{&config.vocab, "vocab"}, {separate ? &*config.target_vocab : nullptr, "target_vocab"}}) {
        if (vocab == nullptr) continue;
        const auto& tokens = vocab->tokens();
        const auto unsorted = std::adjacent_find(tokens.begin() + Vocabulary::reserved_count, tokens.end(),
                                                 std::greater_equal<>());
        AG_CHECK(unsorted == tokens.end(), ValueError,
                 "config.json: {} has '{}' before '{}', but train builds a --data run's vocabulary in byte "
                 "order: the model's embeddings and outputs would be read as other tokens",
                 field, data::escape_control(excerpt(*unsorted, 40)),
                 data::escape_control(excerpt(*(unsorted + 1), 40)));
    }
}

}  // namespace

std::vector<std::string> run_file_names(bool data_run) {
    std::vector<std::string> names = {"model.safetensors", "optimizer.safetensors", "metrics.csv",
                                      snapshot_file};
    if (data_run) names.emplace_back("heldout.tsv");
    return names;
}

void check_run_file_names(const nlohmann::json& json, bool data_run, const std::filesystem::path& dir) {
    if (!json.is_object() || !json.contains("files") || !json["files"].is_object()) return;
    const auto names = run_file_names(data_run);
    for (const auto& entry : json["files"].items()) {
        const std::string& name = entry.key();
        AG_CHECK(
            std::find(names.begin(), names.end(), name) != names.end(), IoError,
            "{}: field 'files' lists '{}', which attograd does not write for this run (it writes {}): a save "
            "would replace or remove it; take the entry out of 'files' (your own files in the run "
            "directory need none)",
            shown_path(dir / "config.json"), data::escape_control(excerpt(name, 80)), fmt::join(names, ", "));
    }
    // A data run's held-out examples are its own (read back by eval and inspect), so they are
    // checked like the library's files; in a bundled task's run a heldout.tsv is the user's.
    AG_CHECK(
        !data_run || json["files"].contains("heldout.tsv") || !std::filesystem::exists(dir / "heldout.tsv"),
        IoError,
        "{}: field 'files' has no entry for heldout.tsv, which the run holds (every file train writes is "
        "recorded with its size and checksum)",
        shown_path(dir / "config.json"));
}

std::pair<std::uint64_t, std::string> translate_pairs_checksum(const data::TranslateTask& task) {
    const std::string text = data::to_tsv(task.train_set(), false) + data::to_tsv(task.held_out(), false);
    return {text.size(), fmt::format("{:016x}", fnv1a64(text))};
}

std::unique_ptr<Task> task_for_run(const RunConfig& config, const std::filesystem::path& dir,
                                   bool for_training, bool* draws_training_examples) {
    if (draws_training_examples != nullptr) *draws_training_examples = true;
    // The fields of a --data run, which train leaves empty for every other task.
    AG_CHECK(config.task.name == "data" || (config.task.data.empty() && !config.task.chars), ValueError,
             "config.json: task.data '{}' and task.chars {} belong to a --data run; train writes them empty "
             "and false for task.name '{}'",
             data::escape_control(excerpt(config.task.data, 80)), config.task.chars,
             data::escape_control(config.task.name));
    // What train records of a --data file or translate's pairs, which every check of them rests on.
    const bool has_data = config.task.name == "data" || config.task.name == "translate";
    AG_CHECK(
        has_data != config.task.data_fnv1a64.empty() && has_data == (config.task.data_bytes > 0), ValueError,
        "config.json: task.data_bytes {} and task.data_fnv1a64 '{}' are not what train writes for task.name "
        "'{}' ({})",
        config.task.data_bytes, data::escape_control(config.task.data_fnv1a64),
        data::escape_control(config.task.name),
        has_data ? "the size and checksum of the data, which eval, inspect and --resume check it against"
                 : "0 and \"\": the task has no data file");
    AG_CHECK(
        config.task.name == "translate" || config.task.lang.empty(), ValueError,
        "config.json: task.lang '{}' belongs to a translate run; train writes it empty for task.name '{}'",
        data::escape_control(excerpt(config.task.lang, 80)), data::escape_control(config.task.name));
    AG_CHECK(
        config.task.name == "translate" || (config.task.min_freq == 1 && config.task.max_vocab == 0),
        ValueError,
        "config.json: task.min_freq {} and task.max_vocab {} belong to a translate run; train writes 1 and 0 "
        "for task.name '{}'",
        config.task.min_freq, config.task.max_vocab, data::escape_control(config.task.name));
    if (config.task.name == "translate") {
        auto task = data::make_translate_task(translate_options(config.task.lang));
        const auto [bytes, sum] = translate_pairs_checksum(*task);
        AG_CHECK(
            bytes == config.task.data_bytes && sum == config.task.data_fnv1a64, IoError,
            "config.json: this machine's gettext catalogs for '{}' give other pairs ({} bytes, checksum {}) "
            "than those the run was trained on (task.data_bytes {}, task.data_fnv1a64 {}): its training "
            "and held-out examples would differ; train a new run",
            data::escape_control(config.task.lang), bytes, sum, config.task.data_bytes,
            data::escape_control(config.task.data_fnv1a64));
        return task;
    }
    if (config.task.name != "data") {
        const auto names = data::task_names();
        if (std::find(names.begin(), names.end(), config.task.name) == names.end()) {
            throw ValueError(
                fmt::format("config.json: task.name '{}' is not a task of this attograd (see "
                            "`attograd tasks`, or 'data')",
                            data::escape_control(config.task.name)));
        }
        return data::make_task(config.task.name);
    }
    AG_CHECK(!config.task.data.empty(), ValueError,
             "config.json: task.data is empty, but task.name 'data' needs the path of the training TSV file");
    if (for_training) {
        TrainingData data = read_training_data(config.task.data, config.task.chars);
        AG_CHECK(
            config.task.data_fnv1a64.empty() ||
                (data.bytes == config.task.data_bytes && data.fnv1a64 == config.task.data_fnv1a64),
            IoError,
            "{}: is not the training data of this run ({} bytes, checksum {}; the run started on {} bytes, "
            "checksum {}): restore that file to resume, or train a new run on this one with --data",
            shown_path(config.task.data), data.bytes, data.fnv1a64, config.task.data_bytes,
            data::escape_control(config.task.data_fnv1a64));
        // The saved held-out examples (written at every save) are rewritten by the next: checked
        // as eval checks them, so that a broken or missing file is refused here too rather than
        // silently replaced.
        check_data_vocabularies(config, &data.dataset);
        auto task = data::make_data_task(data.dataset);
        const auto saved = read_saved_heldout(config, dir);
        AG_CHECK(saved == task->held_out(), IoError,
                 "{}: is not the held-out split of {}, the training data this run started on (same size and "
                 "checksum): train saved that split there",
                 shown_path(dir / "heldout.tsv"), shown_path(config.task.data));
        return task;
    }
    auto held_out = read_saved_heldout(config, dir);
    const std::optional<data::TsvDataset> dataset = unchanged_training_data(config);
    check_data_vocabularies(config, dataset ? &*dataset : nullptr);
    if (dataset) {
        check_heldout_split(config, dir, held_out, *dataset);
        return data::make_data_task(*dataset);
    }
    if (draws_training_examples != nullptr) *draws_training_examples = false;
    std::vector<std::string> symbols(config.vocab.tokens().begin() + Vocabulary::reserved_count,
                                     config.vocab.tokens().end());
    if (config.target_vocab) {  // both sides' tokens, each once
        for (auto it = config.target_vocab->tokens().begin() + Vocabulary::reserved_count;
             it != config.target_vocab->tokens().end(); ++it)
            if (!config.vocab.contains(*it)) symbols.push_back(*it);
    }
    return data::make_saved_data_task(std::move(held_out), config.task.chars, std::move(symbols));
}

std::pair<Vocabulary, std::optional<Vocabulary>> data_vocabularies(const data::TsvDataset& dataset,
                                                                   bool separate) {
    if (!separate) return {Vocabulary(dataset.symbols()), std::nullopt};
    std::set<std::string> sources, targets;
    for (const data::Example& example : dataset.examples()) {
        sources.insert(example.source.begin(), example.source.end());
        targets.insert(example.target.begin(), example.target.end());
    }
    return {Vocabulary({sources.begin(), sources.end()}), Vocabulary({targets.begin(), targets.end()})};
}

data::TranslateTaskOptions translate_options(const std::string& lang) {
    data::TranslateTaskOptions options;
    options.pairs.language = lang;
    return options;
}

TrainingData read_training_data(const std::filesystem::path& path, bool chars) {
    const std::string text = train::read_file(path, std::size_t{256} << 20);
    return {data::TsvDataset::parse(text, chars, shown_path(path)), text.size(),
            fmt::format("{:016x}", fnv1a64(text))};
}

RunProgress read_progress(const nlohmann::json& json) {
    RunProgress p;
    AG_CHECK(json.contains("progress"), ValueError,
             "config.json: missing field 'progress' (train writes it at every save)");
    const auto& j = json["progress"];
    AG_CHECK(j.is_object(), ValueError, "config.json: field 'progress' must be an object, got {}",
             j.type_name());
    const nlohmann::json written = to_json(RunProgress{});
    std::vector<std::string> known;
    for (const auto& [key, unused] : written.items()) known.push_back(key);
    // What train records at every save, and that a check rests on (a field left out would turn
    // the check off).
    for (const char* key : {"steps_done", "seed", "seconds", "window_steps", "probe_predictions",
                            "probe_losses", "gemm_library", "cpu"})
        AG_CHECK(j.contains(key) && !j[key].is_null(), ValueError,
                 "config.json: missing field 'progress.{}' (train writes it at every save)", key);
    for (const auto& [key, unused] : j.items()) {
        AG_CHECK(std::find(known.begin(), known.end(), key) != known.end(), ValueError,
                 "config.json: unknown field 'progress.{}' (train writes {}); remove it",
                 data::escape_control(excerpt(key, 80)), fmt::join(known, ", "));
    }
    const auto number = [&](const char* key, auto& value) {
        if (!j.contains(key)) return;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_integral_v<T>) {
            AG_CHECK(j[key].is_number_integer(), ValueError,
                     "config.json: field 'progress.{}' must be an integer, got {}", key, j[key].dump());
            const std::optional<T> integer = detail::json_integer<T>(j[key]);
            // Every integer of "progress" is a count (check_progress names its range; only one beyond
            // int64 fails here).
            AG_CHECK(integer, ValueError,
                     "config.json: field 'progress.{}' must be an integer in [0, {}], got {}", key,
                     std::numeric_limits<T>::max(), j[key].dump());
            value = *integer;
        } else {
            AG_CHECK(j[key].is_number(), ValueError,
                     "config.json: field 'progress.{}' must be a number, got {}", key, j[key].dump());
            value = j[key].get<T>();
        }
    };
    number("steps_done", p.steps_done);
    AG_CHECK(p.steps_done == 0 || j.contains("first_step_ranks"), ValueError,
             "config.json: missing field 'progress.first_step_ranks' (train writes it at every save after a "
             "step)");
    number("first_step_ranks", p.first_step_ranks);
    {
        p.seed = detail::json_integer<std::uint64_t>(j["seed"]);
        AG_CHECK(p.seed, ValueError, "config.json: field 'progress.seed' must be an integer in {}, got {}",
                 detail::json_integer_range<std::uint64_t>(), j["seed"].dump());
    }
    number("seconds", p.seconds);
    number("heldout_token_accuracy", p.heldout_token_accuracy);
    number("heldout_sequence_accuracy", p.heldout_sequence_accuracy);
    number("window_loss_sum", p.window_loss_sum);
    number("window_accuracy_sum", p.window_accuracy_sum);
    number("window_steps", p.window_steps);
    number("initial_loss", p.initial_loss);
    number("high_loss_steps", p.high_loss_steps);
    number("snapshot_period", p.snapshot_period);
    number("pending_lr", p.pending_lr);
    const auto flag = [&](const char* key, bool& value) {
        if (!j.contains(key)) return;
        AG_CHECK(j[key].is_boolean(), ValueError,
                 "config.json: field 'progress.{}' must be true or false, got {}", key, j[key].type_name());
        value = j[key].get<bool>();
    };
    flag("reached_target", p.reached_target);
    flag("evaluation_pending", p.evaluation_pending);
    {
        const auto& predictions = j["probe_predictions"];
        bool valid = predictions.is_array() && predictions.size() <= 64;
        for (const auto& tokens : predictions) {
            valid = valid && tokens.is_array() && tokens.size() <= 4096;
            // Decoded predictions: never <pad> or <bos> (skipped), nor <eos> (where they stop).
            for (const auto& token : tokens)
                valid = valid && token.is_string() && token != Vocabulary::pad && token != Vocabulary::bos &&
                        token != Vocabulary::eos;
        }
        AG_CHECK(valid, ValueError,
                 "config.json: field 'progress.probe_predictions' must be a list of token lists (decoded: no "
                 "<pad>, "
                 "<bos> or <eos>), got {}",
                 excerpt(predictions.dump(), 80));
        p.probe_predictions = predictions.get<std::vector<std::vector<std::string>>>();
    }
    for (auto [key, value] : {std::pair{"gemm_library", &p.gemm_library}, std::pair{"cpu", &p.cpu}}) {
        // What KernelRecord writes: gemm_library()'s name, a CPU's (or "unknown").
        const bool gemm = std::string_view(key) == "gemm_library";
        AG_CHECK(j[key].is_string() && !j[key].get<std::string>().empty() &&
                     j[key].get<std::string>().size() <= 256 &&
                     (!gemm || j[key] == "LIBXSMM" || j[key] == "Eigen"),
                 ValueError, "config.json: field 'progress.{}' must be {}, got {}", key,
                 gemm ? "\"LIBXSMM\" or \"Eigen\"" : "a CPU's name (1 to 256 bytes)",
                 j[key].is_string()
                     ? fmt::format("'{}'", data::escape_control(excerpt(j[key].get<std::string>(), 80)))
                     : excerpt(j[key].dump(), 80));
        *value = j[key].get<std::string>();
    }
    {
        const auto& losses = j["probe_losses"];
        bool valid = losses.is_array() && losses.size() <= 64;
        for (const auto& loss : losses)
            valid =
                valid && loss.is_number() && std::isfinite(loss.get<double>()) && loss.get<double>() >= 0.0;
        AG_CHECK(valid, ValueError,
                 "config.json: field 'progress.probe_losses' must be a list of finite numbers >= 0, got {}",
                 excerpt(losses.dump(), 80));
        p.probe_losses = losses.get<std::vector<double>>();
    }
    return p;
}

void check_progress(const RunProgress& p, const RunConfig& config) {
    // Each field in the range train writes it, named when it is not (a hand-edited file).
    // Counts print as integers, other numbers in full (1.0000001 is not "1").
    const auto check = [](bool ok, const char* field, const std::string& range, auto value) {
        AG_CHECK(ok, ValueError, "config.json: progress.{} must be {}, got {}", field, range, value);
    };
    const auto count = [](std::int64_t v) { return static_cast<double>(v); };
    check(p.steps_done >= 0 && p.steps_done <= config.train.steps, "steps_done",
          fmt::format("in [0, train.steps = {}]", config.train.steps), p.steps_done);
    check(std::isfinite(p.seconds) && p.seconds >= 0.0 && p.seconds <= kRecordedSeconds, "seconds",
          fmt::format("finite and in [0, {:g}] (seconds of training)", kRecordedSeconds), p.seconds);
    // The seed is recorded twice (train.seed, which a resume trains with, and progress.seed).
    AG_CHECK(!p.seed || *p.seed == config.train.seed, ValueError,
             "config.json: train.seed {} differs from progress.seed {} (the run's seed, recorded twice): "
             "set both to the seed the run was trained with",
             config.train.seed, *p.seed);
    check(p.heldout_token_accuracy >= 0.0 && p.heldout_token_accuracy <= 1.0, "heldout_token_accuracy",
          "in [0, 1]", p.heldout_token_accuracy);
    check(p.heldout_sequence_accuracy >= 0.0 && p.heldout_sequence_accuracy <= 1.0,
          "heldout_sequence_accuracy", "in [0, 1]", p.heldout_sequence_accuracy);
    check(p.window_steps >= 0 && p.window_steps <= p.steps_done, "window_steps",
          fmt::format("in [0, progress.steps_done = {}]", p.steps_done), p.window_steps);
    // Sums over window_steps steps of a loss (cross-entropy, >= 0) and of an accuracy in [0, 1].
    const double most_loss = count(p.window_steps) * static_cast<double>(std::numeric_limits<float>::max());
    check(std::isfinite(p.window_loss_sum) && p.window_loss_sum >= 0.0 &&
              (p.window_steps == 0 || p.window_loss_sum <= most_loss),
          "window_loss_sum",
          fmt::format("in [0, progress.window_steps = {} x {:g}] (each step's loss is a finite float32)",
                      p.window_steps, std::numeric_limits<float>::max()),
          p.window_loss_sum);
    check(p.window_accuracy_sum >= 0.0 && p.window_accuracy_sum <= count(p.window_steps) * (1.0 + 1e-9),
          "window_accuracy_sum", fmt::format("in [0, progress.window_steps = {}]", p.window_steps),
          p.window_accuracy_sum);
    check(p.window_steps > 0 || (p.window_loss_sum == 0.0 && p.window_accuracy_sum == 0.0), "window_loss_sum",
          "0, and so must window_accuracy_sum, while progress.window_steps is 0", p.window_loss_sum);
    // A step the run evaluates at (train.eval_every, and the last) logs its row with the
    // evaluation: steps since the last row there mean the evaluation is still owed.
    const auto& t = config.train;
    const bool evaluates_at_step_done =
        p.steps_done > 0 &&
        ((t.eval_every > 0 && p.steps_done % t.eval_every == 0) || p.steps_done == t.steps);
    AG_CHECK(p.evaluation_pending || !evaluates_at_step_done || p.window_steps == 0, ValueError,
             "config.json: progress.evaluation_pending is false, but step {} is one the run evaluates at "
             "(train.eval_every {}, train.steps {}) and {} steps since the last row of metrics.csv "
             "(progress.window_steps) say its evaluation was not logged",
             p.steps_done, t.eval_every, t.steps, p.window_steps);
    // The first step's loss, divergence's yardstick; 0 means "no step yet" (set at the next).
    check(std::isfinite(p.initial_loss) && p.initial_loss >= 0.0, "initial_loss",
          "finite and >= 0 (0: not measured yet)", p.initial_loss);
    check(p.steps_done == 0 || p.initial_loss > 0.0, "initial_loss",
          fmt::format("> 0 (the first step's loss) after progress.steps_done = {} steps", p.steps_done),
          p.initial_loss);
    // An mpirun of N ranks needs a batch of N or more.
    check(p.first_step_ranks >= 1 && p.first_step_ranks <= config.train.batch, "first_step_ranks",
          fmt::format("in [1, train.batch = {}] (the processes of the first step)", config.train.batch),
          p.first_step_ranks);
    // Training stops as diverged once the count reaches the patience, so no save holds it.
    const std::int64_t patience = train::DivergenceMonitorOptions{}.patience;
    check(p.high_loss_steps >= 0 && p.high_loss_steps <= p.steps_done && p.high_loss_steps < patience,
          "high_loss_steps",
          fmt::format("in [0, progress.steps_done = {}] and below {} (training stops as diverged there)",
                      p.steps_done, patience),
          p.high_loss_steps);
    // The library bounds it so (train/callbacks.cpp); whether it fits the saved snapshots is the
    // snapshotter's check on --resume.
    check(p.snapshot_period >= 0 && p.snapshot_period < 9'000'000'000'000'000, "snapshot_period",
          "an integer in [0, 9e15)", p.snapshot_period);
    check(std::isfinite(p.pending_lr) && p.pending_lr >= 0.0, "pending_lr", "finite and >= 0", p.pending_lr);
    // The step whose evaluation is pending is in the window (its metrics line comes with it).
    check(!p.evaluation_pending || p.window_steps >= 1, "window_steps",
          ">= 1 while progress.evaluation_pending is true", p.window_steps);
}

namespace {

/// Refuses (ValueError naming config.json's vocab) vocabularies other than those train builds
/// for the run's task, where they can be built again: a bundled task's (its symbols, in order)
/// and translate's (from its training pairs, with task.min_freq and task.max_vocab). Another
/// order keeps every weight's shape but reads each embedding and output row as another token.
void check_vocabulary_is_tasks(const RunConfig& config, const Task& task) {
    if (config.task.name == "data") return;  // built from a file eval and inspect need not have
    Vocabulary source, target;
    bool separate = false;
    if (config.task.name == "translate") {
        data::VocabularyOptions options{.min_freq = config.task.min_freq};
        if (config.task.max_vocab != 0) options.max_tokens = config.task.max_vocab;
        const auto& pairs = dynamic_cast<const data::TranslateTask&>(task).train_set();
        separate = config.target_vocab.has_value();
        source = data::build_vocabulary(pairs, separate ? data::ExampleSide::Source : data::ExampleSide::Both,
                                        options);
        if (separate) target = data::build_vocabulary(pairs, data::ExampleSide::Target, options);
    } else {
        source = Vocabulary(task.symbols());
    }
    AG_CHECK(config.vocab.tokens() == source.tokens() &&
                 (!config.target_vocab || (separate && config.target_vocab->tokens() == target.tokens())),
             ValueError,
             "config.json: vocab{} is not what train builds for task.name '{}' (its tokens, in their order): "
             "the model's embeddings and outputs would be read as other tokens",
             config.target_vocab ? " or target_vocab" : "", data::escape_control(config.task.name));
}

/// Refuses (ValueError naming the config.json key) a setting the run's model has no use for (a
/// flag train refuses with its --model, --estimator without hard attention, --local without a
/// window) at another value than train writes for it (the task's default): the model ignores it,
/// and a report would state it as the run's.
void check_unused_settings(const RunConfig& config, const Task& task) {
    const RunConfig written = default_config(task);
    const ModelConfig& m = config.model;
    for (const Setting& s : settings()) {
        const bool unused =
            (m.kind != "rnn" && s.applies_to == ModelKinds::rnn) ||
            (m.kind != "seq2seq" && s.applies_to == ModelKinds::seq2seq) ||
            (m.kind == "rnn" && s.applies_to == ModelKinds::transformer) || (m.kind == "lm" && s.not_lm) ||
            (s.key == "model.estimator" && m.attention != "hard") || (s.key == "model.local" && m.window < 0);
        if (!unused || s.get(config) == s.get(written)) continue;
        throw ValueError(fmt::format(
            "config.json: {} is {}, but this run's model has no use for it (--model {}{}): train writes {}",
            s.key, data::escape_control(excerpt(s.get(config).dump(), 80)), data::escape_control(m.kind),
            s.key == "model.estimator" ? ", soft attention"
            : s.key == "model.local"   ? ", global attention"
                                       : "",
            s.get(written).dump()));
    }
}

}  // namespace

void check_task_fits(const RunConfig& config, const Task& task) {
    const TaskInfo& info = task.info();
    const ModelConfig& m = config.model;
    const std::string name = data::escape_control(config.task.name);
    // translate's vocabulary leaves rare words out (task.min_freq): its symbols need not all be in it.
    for (const std::string& symbol :
         config.task.name == "translate" ? std::vector<std::string>{} : task.symbols()) {
        AG_CHECK(
            config.vocab.contains(symbol) || (config.target_vocab && config.target_vocab->contains(symbol)),
            ValueError,
            "config.json: task.name '{}' does not fit this run: its token '{}' is not in config.json's "
            "vocab (the model was trained on another task)",
            name, data::escape_control(symbol));
    }
    AG_CHECK(
        info.max_source_len <= m.max_source_len && info.max_target_len <= m.max_target_len, ValueError,
        "config.json: task.name '{}' does not fit this run: its sources and targets take up to {} and {} "
        "tokens, but model.max_source_len and model.max_target_len are {} and {}",
        name, info.max_source_len, info.max_target_len, m.max_source_len, m.max_target_len);
    check_vocabulary_is_tasks(config, task);
    check_unused_settings(config, task);
}

nlohmann::json to_json(const RunProgress& p) {
    return {{"steps_done", p.steps_done},
            {"seed", p.seed ? nlohmann::json(*p.seed) : nlohmann::json(nullptr)},
            {"seconds", p.seconds},
            {"heldout_token_accuracy", p.heldout_token_accuracy},
            {"heldout_sequence_accuracy", p.heldout_sequence_accuracy},
            {"reached_target", p.reached_target},
            {"window_loss_sum", p.window_loss_sum},
            {"window_accuracy_sum", p.window_accuracy_sum},
            {"window_steps", p.window_steps},
            {"initial_loss", p.initial_loss},
            {"high_loss_steps", p.high_loss_steps},
            {"snapshot_period", p.snapshot_period},
            {"evaluation_pending", p.evaluation_pending},
            {"pending_lr", p.pending_lr},
            {"probe_predictions",
             p.probe_predictions ? nlohmann::json(*p.probe_predictions) : nlohmann::json(nullptr)},
            {"probe_losses", p.probe_losses ? nlohmann::json(*p.probe_losses) : nlohmann::json(nullptr)},
            {"gemm_library", p.gemm_library},
            {"cpu", p.cpu},
            {"first_step_ranks", p.first_step_ranks}};
}

namespace {

void check_heldout_checksum(const RunConfig& config, const Task& task, const std::filesystem::path& dir) {
    const std::string sum = heldout_checksum(task.held_out(), config.task.chars);
    if (sum == config.task.heldout_fnv1a64) return;
    const std::string name = data::escape_control(config.task.name);
    std::string why;
    if (config.task.name == "data")
        why = fmt::format("{} is not the file train saved", shown_path(dir / "heldout.tsv"));
    else if (config.task.name == "translate")
        why = fmt::format("this machine's gettext catalogs for '{}' are not those the run was trained on",
                          data::escape_control(config.task.lang));
    else
        why = fmt::format("task.name '{}' is not the task this run was trained on", name);
    throw IoError(fmt::format(
        "config.json: task.heldout_fnv1a64 is {}, but the held-out examples of task '{}' have checksum {}: "
        "{}, so its accuracy and attention would be measured on other examples",
        data::escape_control(config.task.heldout_fnv1a64), name, sum, why));
}

/// A run's settings from its config.json `json` into `run`: the configuration, progress and task,
/// each checked against the others and the machine's memory.
void read_run_settings(const nlohmann::json& json, const std::filesystem::path& dir, bool for_training,
                       LoadedRun& run) {
    const auto config_path = dir / "config.json";
    try {
        run.config = run_config_from_json(json);
        run.counters = read_progress(json);
        run.progress = json.value("progress", nlohmann::json::object());
    } catch (const nlohmann::json::exception& e) {  // a type run_config_from_json did not check
        throw IoError(fmt::format("{}: {}", shown_path(config_path), excerpt(e.what(), 200)));
    }
    check_run_file_names(json, run.config.task.name == "data", dir);  // before anything a save would replace
    validate_settings(run.config, SettingNames::config_file());  // the ranges progress is checked against
    check_progress(run.counters, run.config);
    // The snapshot period starts at train.snapshot_every and doubles each time the snapshots are
    // thinned (a resume given --snapshot-every starts it again), so the two agree in every save.
    // (The period is not used, nor always written, while train.snapshot_every is 0.)
    AG_CHECK(
        run.config.train.snapshot_every == 0 || run.progress.contains("snapshot_period"), ValueError,
        "config.json: missing field 'progress.snapshot_period' (train writes it while train.snapshot_every "
        "is not 0)");
    if (const std::int64_t every = run.config.train.snapshot_every, period = run.counters.snapshot_period;
        every > 0) {
        std::int64_t doubled = every;
        while (doubled < period && doubled <= std::numeric_limits<std::int64_t>::max() / 2) doubled *= 2;
        AG_CHECK(
            doubled == period, ValueError,
            "config.json: progress.snapshot_period {} is not train.snapshot_every {} doubled zero or more "
            "times (the period doubles only when the snapshots are thinned)",
            period, every);
    }
    run.task = task_for_run(run.config, dir, for_training, &run.draws_training_examples);
    check_task_fits(run.config, *run.task);
    check_heldout_checksum(run.config, *run.task, dir);
    // Early stopping's rule (train's EarlyStopping), applied at every evaluation: the target is
    // reached when the monitored held-out accuracy (0 before the first; every target is above 0)
    // is at least the task's target. The flag stops a resume, so it must say what the rule says.
    const TaskInfo& info = run.task->info();
    const bool sequence = info.metric == Metric::Sequence;
    const double monitored =
        sequence ? run.counters.heldout_sequence_accuracy : run.counters.heldout_token_accuracy;
    const bool reached = monitored >= target_accuracy(info.name);
    AG_CHECK(run.counters.reached_target == reached, ValueError,
             "config.json: progress.reached_target is {}, but progress.{} is {}, {} the task's target {} "
             "(train sets the flag at every evaluation)",
             run.counters.reached_target, sequence ? "heldout_sequence_accuracy" : "heldout_token_accuracy",
             monitored, reached ? "at or above" : "below", target_accuracy(info.name));
    // Every save of a run with snapshots on writes the file (from step 0): one missing with its
    // entry was deleted, and a resume would start a new one without the earlier steps.
    AG_CHECK(
        run.config.train.snapshot_every <= 0 || run.task->held_out().empty() ||
            (json["files"].is_object() && json["files"].contains(snapshot_file)),
        IoError,
        "{}: the run records its attention every {} steps (train.snapshot_every), but field 'files' has no "
        "entry for {}: the file and its entry were removed; restore them, or set train.snapshot_every "
        "to 0",
        shown_path(config_path), run.config.train.snapshot_every, snapshot_file);
    if (!json["model"].contains("min_source_len"))
        run.config.model.min_source_len = run.task->info().min_source_len;
    // A bundled task is built again as it was: its shortest source is the one train recorded
    // (a --data run's comes from its training file, which eval does not read).
    AG_CHECK(
        run.config.task.name == "data" || run.config.model.min_source_len == run.task->info().min_source_len,
        ValueError, "config.json: model.min_source_len is {}, but task '{}' has sources of {} or more tokens",
        run.config.model.min_source_len, data::escape_control(run.config.task.name),
        run.task->info().min_source_len);
    validate(run.config, run.task->info(), SettingNames::config_file());
    // Before the model is built: a hand-edited size (or a smaller machine) is refused, not OOM-killed.
    check_memory(run.config, SettingNames::config_file(), available_bytes(), for_training);
}

/// Runs `body`, which checks the settings of the run whose config.json is `config_path`: an error
/// it throws starting "config.json: " names the file by its path instead (same type), so that a
/// message says which directory is not a run, or which run is bad.
template <class Body>
void naming_config(const std::filesystem::path& config_path, Body&& body) {
    constexpr std::string_view bare = "config.json: ";
    const auto rethrow = [&]<class E>(const E& e) {
        const std::string_view what = e.what();
        if (!what.starts_with(bare)) throw;
        throw E(fmt::format("{}: {}", shown_path(config_path), what.substr(bare.size())));
    };
    try {
        body();
    } catch (const ValueError& e) {
        rethrow(e);
    } catch (const IoError& e) {
        rethrow(e);
    } catch (const UsageError& e) {
        rethrow(e);
    }
}

// Each weight is checked finite on load, but finite weights can still overflow (3e38 each): such
// a model would fail later, inside decoding, or be blamed on the snapshots, so it is named here.
void check_model_outputs_finite(const Model& model, const RunConfig& config, const Task& task,
                                const std::filesystem::path& weights) {
    constexpr std::size_t kExamples = 16;
    const auto& held_out = task.held_out();
    const Vocabularies vocab = vocabularies(config);
    std::vector<std::vector<std::int64_t>> sources, targets;
    for (std::size_t i = 0; i < std::min(kExamples, held_out.size()); ++i) {
        sources.push_back(vocab.source.encode(held_out[i].source));
        targets.push_back(vocab.target.encode(held_out[i].target));
    }
    if (sources.empty()) return;
    NoGradGuard no_grad;
    Tensor logits;
    try {
        logits = to_dtype(model.forward(model.make_batch(sources, &targets)).logits, DType::Float64);
    } catch (const ValueError& e) {  // hard attention refuses NaN scores
        throw IoError(
            fmt::format("{}: the model fails on the first held-out examples ({}), so nothing can "
                        "be evaluated (its weights were edited, or are from another run)",
                        shown_path(weights), e.what()));
    }
    const double* data = logits.data<double>();
    AG_CHECK(std::all_of(data, data + logits.numel(), [](double x) { return std::isfinite(x); }), IoError,
             "{}: the model gives NaN or infinite logits on the first held-out examples, so nothing can be "
             "evaluated (its weights were edited, or are from another run)",
             shown_path(weights));
}

/// Refuses (IoError naming the field) progress counters that the run's metrics.csv contradicts:
/// a row is logged every few steps and at the last, and the steps since the last row are
/// progress.window_steps; the held-out accuracies are those of the last evaluation, whose row
/// holds them to 6 decimals. A metrics.csv that is missing, cannot be read or has another header
/// is refused (Error naming the file) by every command, as the progress it checks would otherwise
/// be read unchecked.
void check_progress_against_metrics(const LoadedRun& run, const std::filesystem::path& dir) {
    const auto file = dir / "metrics.csv";
    AG_CHECK(
        std::filesystem::exists(file), IoError,
        "{}: missing (train writes it at every save; the run's held-out accuracies are checked against it)",
        shown_path(file));
    const std::string text = train::read_file(file);
    train::check_metrics_header(text, train::CSVLogger(metrics_csv_options()).header(), shown_path(file));
    const train::MetricsTable table =
        train::read_metrics_csv(text, run.counters.steps_done, shown_path(file), run.counters.seconds);
    const std::vector<double>& steps = table.columns[0];
    const auto last = static_cast<std::int64_t>(steps.empty() ? 0.0 : steps.back());
    // (An evaluation left pending by an interrupt keeps its step in the window: its row, written
    // with the evaluation, is still to come.)
    AG_CHECK(last + run.counters.window_steps == run.counters.steps_done, IoError,
             "{}: progress.window_steps is {} and progress.steps_done {}, but {} (the steps since the last "
             "row are the window): one of the two files was edited",
             shown_path(dir / "config.json"), run.counters.window_steps, run.counters.steps_done,
             steps.empty() ? std::string("metrics.csv holds no row")
                           : fmt::format("the last row of metrics.csv is step {}", last));
    for (const auto& [name, saved] :
         {std::pair{"heldout_token_accuracy", run.counters.heldout_token_accuracy},
          std::pair{"heldout_sequence_accuracy", run.counters.heldout_sequence_accuracy}}) {
        const std::vector<double>* column = table.column(name);
        if (column == nullptr) continue;
        const auto evaluated =
            std::find_if(column->rbegin(), column->rend(), [](double v) { return !std::isnan(v); });
        AG_CHECK(evaluated != column->rend() || !run.counters.reached_target, IoError,
                 "{}: progress.reached_target is true, but metrics.csv holds no held-out evaluation: one of "
                 "the two files was edited",
                 shown_path(dir / "config.json"));
        // (Without an evaluation row the accuracies may be a --steps 0 run's evaluation of its
        // seed, which logs no row.)
        if (evaluated == column->rend()) continue;
        AG_CHECK(std::abs(*evaluated - saved) <= 5.01e-7, IoError,
                 "{}: progress.{} is {}, but the last evaluation in metrics.csv gives {:.6f}: one of the two "
                 "files was edited",
                 shown_path(dir / "config.json"), name, saved, *evaluated);
    }
}

/// Refuses (IoError naming config.json) a run whose model, as config.json describes it, predicts
/// for the run's probes other than the model the run saved (progress.probe_predictions, up to
/// ties), or has another loss on them (progress.probe_losses): a model setting edited since that
/// keeps every weight's shape (uniform attention, window, score, hard attention, the vocabulary's
/// order), which eval and a report would state as the run's. `outputs` are probe_outputs of the
/// loaded model.
void check_probe_records(const LoadedRun& run, const std::vector<ProbeOutput>& outputs) {
    const auto& predictions = *run.counters.probe_predictions;
    const auto& losses = *run.counters.probe_losses;
    const std::string config = shown_path(run.dir / "config.json");
    const auto probes = std::min<std::size_t>(outputs.size(), snapshot_probe_count);
    AG_CHECK(
        predictions.size() == probes && losses.size() == outputs.size(), IoError,
        "{}: progress.probe_predictions and progress.probe_losses hold {} and {} examples, but the run's "
        "held-out set gives {} and {}",
        config, predictions.size(), losses.size(), probes, outputs.size());
    const Vocabulary& target = vocabularies(run.config).target;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        AG_CHECK(
            same_probe_loss(losses[i], outputs[i].loss), IoError,
            "{}: the model as config.json describes it has loss {:.9g} on held-out example {}, but the run "
            "saved a model with loss {:.9g} (progress.probe_losses): a model setting was edited since, or "
            "model.safetensors is from another run",
            config, outputs[i].loss, i, losses[i]);
        if (i >= probes) continue;
        AG_CHECK(predictions[i] == outputs[i].prediction ||
                     predicts_up_to_ties(outputs[i], predictions[i], target),
                 IoError,
                 "{}: the model as config.json describes it predicts '{}' for probe {}, but the run saved a "
                 "model that predicts '{}' (progress.probe_predictions): a model setting was edited since, "
                 "or model.safetensors is from another run",
                 config, data::escape_control(excerpt(data::join(outputs[i].prediction, " "), 80)), i,
                 data::escape_control(excerpt(data::join(predictions[i], " "), 80)));
    }
}

/// Refuses (IoError naming the file) a run whose model, as loaded, is not the one its last
/// snapshot was taken of (check_last_snapshot_is_model): a model setting edited since (uniform
/// attention, window, score, the vocabulary's order) gives other predictions or weights, which
/// eval and a report would state as the run's. An unreadable or otherwise edited snapshot file is
/// left to the report, which then shows no training replay, saying why. `layout` is
/// snapshot_layout of the loaded model.
void check_saved_snapshots(
    const LoadedRun& run, const std::filesystem::path& dir, const inspect::AttentionSnapshot& layout,
    const std::vector<ProbeOutput>& outputs,
    const std::optional<std::pair<inspect::AttentionSnapshot, std::vector<ProbeOutput>>>& seeds) {
    const auto file = dir / snapshot_file;
    if (!std::filesystem::exists(file)) return;
    std::vector<inspect::AttentionSnapshot> snapshots;
    try {
        snapshots = inspect::load_snapshots(file);
    } catch (const Error&) {
        return;
    }
    try {
        check_last_snapshot_is_model(snapshots, run.counters.steps_done, layout, outputs,
                                     vocabularies(run.config).target);
        if (seeds)
            check_first_snapshot_is_seed_model(snapshots, seeds->first, seeds->second,
                                               vocabularies(run.config).target);
    } catch (const ValueError& e) {
        throw IoError(fmt::format("{}: {}", shown_path(file), e.what()));
    }
}

/// The fnv1a64 of `t`'s bytes: a parameter as the seed made it, kept without a copy of it.
std::uint64_t bytes_checksum(const Tensor& t) {
    return fnv1a64(std::string_view(static_cast<const char*>(t.raw_data()),
                                    static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype())));
}

/// Refuses (IoError naming optimizer.safetensors) an optimizer with per-parameter state (Adam's
/// moments, SGD's momentum) that has none for a parameter the run has changed since the seed made
/// it: the optimizer keeps state for every parameter it updated, and a resume would start that
/// one's moments again. `initial` are bytes_checksum of the parameters as made, `params` as
/// loaded; `keeps_state`: the optimizer keeps per-parameter state (all but plain SGD).
void check_never_updated(const std::map<std::string, Tensor>& optimizer_state,
                         const std::vector<std::uint64_t>& initial, const std::vector<Tensor>& params,
                         bool keeps_state, const std::filesystem::path& file) {
    const auto has_state = [&](std::size_t i) {
        const std::string prefix = fmt::format("optimizer.state.{}.", i);
        const auto it = optimizer_state.lower_bound(prefix);
        return it != optimizer_state.end() && it->first.starts_with(prefix);
    };
    if (!keeps_state) return;  // plain SGD
    for (std::size_t i = 0; i < params.size(); ++i) {
        AG_CHECK(
            has_state(i) || bytes_checksum(params[i]) == initial[i], IoError,
            "{}: has no state for parameter {}, which the run has changed since it was made: the optimizer "
            "keeps state for every parameter it updates (its state was removed)",
            shown_path(file), i);
    }
}

/// Refuses (IoError naming config.json) a progress.initial_loss other than the loss of the run's
/// first step, which divergence is measured against: `run`'s model as its seed made it (not yet
/// loaded), on the seed's first batch as the progress.first_step_ranks processes took it
/// (first_step_loss), within the rounding of another CPU. Only where the task can draw training
/// batches (a --data run's eval and inspect without its TSV file hold only its held-out examples).
void check_initial_loss(const LoadedRun& run, bool draws_training_examples) {
    if (run.counters.steps_done == 0 || !draws_training_examples) return;
    // The model samples (dropout, hard attention) from the generator it was made with.
    const auto ranks = static_cast<int>(run.counters.first_step_ranks);
    const double first = first_step_loss(*run.model, *run.generator, run.config, *run.task, ranks);
    AG_CHECK(
        same_probe_loss(run.counters.initial_loss, first), IoError,
        "{}: progress.initial_loss is {}, but the run's first step (the model its seed made, on the seed's "
        "first batch{}) has loss {:.9g}: divergence is measured against it",
        shown_path(run.dir / "config.json"), run.counters.initial_loss,
        ranks > 1 ? fmt::format(", as {} ranks took it", ranks) : std::string(), first);
}

LoadedRun load_run_once(const std::filesystem::path& dir, bool for_training) {
    const nlohmann::json json = train::open_run(dir);
    const auto config_path = dir / "config.json";
    LoadedRun run;
    run.dir = dir;
    naming_config(config_path, [&] {
        read_run_settings(json, dir, for_training, run);
        run.generator = std::make_unique<Generator>(run.config.train.seed);
        run.model = make_model(run.config.model, vocabularies(run.config), *run.generator);
        if (run.config.model.uniform_attention >= 0)
            run.model = with_uniform_attention(run.model, run.config.model.uniform_attention,
                                               "config.json: model.uniform_attention");
    });
    // The parameters as the seed makes them: one the optimizer has no state for was never updated.
    std::vector<std::uint64_t> initial;
    for (const Tensor& p : run.model->parameters()) initial.push_back(bytes_checksum(p));
    // Before the weights are loaded: the first step's loss is the initial model's.
    std::optional<IoError> first_loss_error;
    try {
        check_initial_loss(run, run.draws_training_examples);
    } catch (const IoError& e) {
        first_loss_error = e;
    }
    // And so is the snapshot of step 0, where the run has trained since.
    std::optional<std::pair<inspect::AttentionSnapshot, std::vector<ProbeOutput>>> seeds;
    if (run.counters.steps_done > 0 && std::filesystem::exists(dir / snapshot_file)) {
        const Vocabularies vocab = vocabularies(run.config);
        seeds.emplace(snapshot_layout(*run.model, run.config.model, *run.task, vocab),
                      probe_outputs(*run.model, run.config.model, *run.task, vocab));
    }
    const auto weights = dir / "model.safetensors";
    const auto state = train::load_checkpoint(weights);
    // Train writes each tensor in its parameter's dtype; load_state_dict would convert another
    // (as PyTorch's does), which a run's own file never needs.
    for (const auto& [name, saved] : run.model->state_dict()) {
        const auto it = state.find(name);
        AG_CHECK(it == state.end() || it->second.dtype() == saved.dtype(), IoError,
                 "{}: tensor '{}' is {}, but train writes it as {} (the dtype of the model's tensor)",
                 shown_path(weights), data::escape_control(excerpt(name, 80)), it->second.dtype(),
                 saved.dtype());
    }
    try {
        run.model->load_state_dict(state);
    } catch (const Error& e) {
        throw IoError(fmt::format("{}: cannot be loaded into the model config.json describes: {}",
                                  shown_path(weights), e.what()));
    }
    run.model->eval();
    // The program's REINFORCE reward is minus a sequence's loss: its baseline, an average of
    // rewards, is never positive, and training stops as diverged (a mean token loss far above
    // its first, about log V) long before a sequence's loss reaches 1e6 nats. The baseline is
    // updated once a step.
    constexpr double kLowestBaseline = -1e6;
    for (const auto& [name, tensor] : state) {
        if (name.ends_with("reward_baseline")) {
            const double baseline = to_dtype(tensor, DType::Float64).data<double>()[0];
            AG_CHECK(baseline <= 0.0 && baseline >= kLowestBaseline, IoError,
                     "{}: '{}' is {}, outside [{:g}, 0]: the REINFORCE reward is minus a sequence's loss, "
                     "which training stops as diverged long before it reaches {:g}",
                     shown_path(weights), name, baseline, kLowestBaseline, -kLowestBaseline);
        }
        if (name.ends_with("reward_baseline_updates")) {
            const std::int64_t updates = tensor.data<std::int64_t>()[0];
            AG_CHECK(updates <= run.counters.steps_done, IoError,
                     "{}: '{}' is {}, more than the {} steps the run has done (the baseline is updated once "
                     "a step)",
                     shown_path(weights), name, updates, run.counters.steps_done);
        }
    }
    check_progress_against_metrics(run, dir);
    check_model_outputs_finite(*run.model, run.config, *run.task, weights);
    // The report shows config.json's settings as the run's: the optimizer's own record of them,
    // and the snapshot of the saved model, must agree, as a resume (which checks them itself)
    // requires.
    // The probes' forwards, once, for both checks (before a resume says anything).
    const Vocabularies vocab = vocabularies(run.config);
    const std::vector<ProbeOutput> outputs =
        probe_outputs(*run.model, run.config.model, *run.task, vocab, probe_loss_count);
    check_saved_snapshots(run, dir, snapshot_layout(*run.model, run.config.model, *run.task, vocab), outputs,
                          seeds);
    check_probe_records(run, outputs);  // also for a run without snapshots, or with their file edited
    // With the settings the run was saved with (a resume's flags are applied later).
    const auto optimizer = make_optimizer(run.config.train, run.model->parameters());
    const auto schedule = make_schedule(*optimizer, run.config.train);
    const auto optimizer_state =
        load_optimizer_file(dir, run.config.train, run.counters.steps_done, *optimizer, schedule.get());
    if (schedule) check_scheduled_lr(optimizer_state, dir / "optimizer.safetensors", *schedule);
    // An evaluation left pending logs its row with the lr of the step before it.
    if (run.counters.evaluation_pending && run.counters.steps_done > 0) {
        const double expected = schedule ? schedule->lr_at(run.counters.steps_done - 1) : run.config.train.lr;
        AG_CHECK(
            std::abs(run.counters.pending_lr - expected) <= 1e-9 * std::max(std::abs(expected), 1e-30),
            IoError,
            "{}: progress.pending_lr is {}, but config.json's train settings (lr, schedule, warmup, steps) "
            "give {} at step {}, whose evaluation is pending",
            shown_path(dir / "config.json"), run.counters.pending_lr, expected, run.counters.steps_done);
    }
    const TrainConfig& t = run.config.train;
    check_never_updated(optimizer_state, initial, run.model->parameters(),
                        t.optim != "sgd" || t.momentum != 0.0, dir / "optimizer.safetensors");
    if (first_loss_error) throw *first_loss_error;  // after the model's checks, which name what was edited
    return run;
}

}  // namespace

train::CSVLoggerOptions metrics_csv_options() {
    return {.train_columns = {{"loss", "loss"}, {"accuracy", "train_token_accuracy"}},
            .val_columns = {{"heldout_token_accuracy", "heldout_token_accuracy"},
                            {"heldout_sequence_accuracy", "heldout_sequence_accuracy"}}};
}

LoadedRun load_run(const std::filesystem::path& dir, bool for_training) {
    LoadedRun loaded = read_consistently(dir, [&](std::shared_ptr<const train::DirectoryPin> pin) {
        LoadedRun run = load_run_once(dir, for_training);
        run.generation = std::move(pin);
        return run;
    });
    // A test's hook: holds the command here, once the run is read (announcing it in PATH.waiting),
    // until PATH exists, so that a test can save the run in between.
    if (const char* hold = std::getenv("ATTOGRAD_TEST_HOLD_AFTER_READ"); hold != nullptr) {
        write_file_atomic(std::string(hold) + ".waiting", "");
        for (int waited = 0; waited < 6000 && !std::filesystem::exists(hold); ++waited) ::usleep(10'000);
    }
    return loaded;
}

void check_still_read(const LoadedRun& run, const char* command) {
    AG_CHECK(!run.generation || !run.generation->moved(), IoError,
             "{}: was saved again while {} read it (a train is writing it), so what it read may be of two "
             "saves: nothing was written; run {} again",
             shown_path(run.dir), command, command);
}

}  // namespace attograd::cli
