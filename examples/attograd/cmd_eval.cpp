// `attograd eval`: held-out accuracy of a run, alignment per head, predictions for --input.
#include "commands.hpp"
#include "console.hpp"
#include "data/bleu.hpp"
#include "evaluation.hpp"
#include "fraction_text.hpp"
#include "output_file.hpp"
#include "quoting.hpp"
#include "run_dir.hpp"
#include "train/file_io.hpp"
#include "train/run_lock.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace attograd::cli {

namespace {

nlohmann::json example_json(const Task& task, const std::vector<std::string>& source,
                            const std::vector<std::string>& target,
                            const std::vector<std::string>& prediction) {
    nlohmann::json j = {{"source", task.detokenize(source)}, {"prediction", task.detokenize(prediction)}};
    if (!target.empty()) {
        j["target"] = task.detokenize(target);
        j["correct"] = prediction == target;
    } else {
        j["target"] = nullptr;
        j["correct"] = nullptr;
    }
    return j;
}

/// Corpus BLEU-4 of the predictions against every reference the task gives for each held-out
/// source, over the task's own tokens (BLEU's 13a tokens for translate).
data::BleuScore held_out_bleu(const Task& task, const std::vector<Example>& held_out,
                              const std::vector<std::vector<std::string>>& predictions) {
    std::vector<std::vector<std::vector<std::string>>> references;
    references.reserve(held_out.size());
    for (const Example& e : held_out) references.push_back(task.references(e));
    return data::corpus_bleu(references, predictions);
}

}  // namespace

int cmd_eval(const EvalArgs& args) {
    namespace fs = std::filesystem;
    if (args.show < 0) throw UsageError(fmt::format("--show must be >= 0, got {}", args.show));
    // --to is checked before anything is computed (missing parent folders are then created).
    if (!args.to.empty() && args.to != "-") check_to_file(args.to);
    const LoadedRun run = load_run(args.run);
    const Task& task = *run.task;
    const auto& held_out = task.held_out();
    const DecodeSettings decoding{.beam = args.beam, .length_penalty = args.length_penalty};
    check_decoding(decoding, run.config.model);
    // Every --input is read and checked before any work or output: a bad one is reported (naming
    // it) first, the others still run, and the exit code is then 2; when every one is bad the
    // command stops there.
    struct Input {
        std::string text, error;
        std::vector<std::string> source, target, prediction;
    };
    std::vector<Input> inputs;
    for (const auto& text : args.inputs) {
        Input& input = inputs.emplace_back();
        input.text = text;
        input.error = input_error([&] { input.source = read_input(task, run.config, text); });
    }
    const auto failed = [](const Input& i) { return !i.error.empty(); };
    if (!inputs.empty() && std::all_of(inputs.begin(), inputs.end(), failed)) return 2;

    const Evaluation result = evaluate(*run.model, vocabularies(run.config), held_out, decoding);
    // BLEU scores translations against their references: translate and --data runs, not the
    // bundled tasks' one right answer nor a language model's next-token guesses.
    const bool translation = run.config.task.name == "translate" || run.config.task.name == "data";
    const data::BleuScore bleu =
        translation ? held_out_bleu(task, held_out, result.predictions) : data::BleuScore{};
    const auto alignment = alignment_by_head(*run.model, run.config.model, task, vocabularies(run.config),
                                             held_out, result.predictions);
    for (Input& input : inputs) {  // predictions, with the right answer where the task can compute it
        if (failed(input)) continue;
        input.error = input_error([&] {
            const std::vector<std::vector<std::int64_t>> ids{
                encode_tokens(run.config.vocab, input.source, false)};
            input.prediction = vocabularies(run.config).target.decode(run.model->predict(ids, decoding)[0]);
            input.target = task.solve(input.source).value_or(std::vector<std::string>{});
        });
    }
    const int code = std::any_of(inputs.begin(), inputs.end(), failed) ? 2 : 0;
    std::optional<fs::path> wrote;  // --to FILE: the results, also printed below

    if (args.json || !args.to.empty()) {
        nlohmann::json examples = nlohmann::json::array();
        for (std::size_t i = 0; i < held_out.size() && static_cast<std::int64_t>(i) < args.show; ++i) {
            examples.push_back(
                example_json(task, held_out[i].source, held_out[i].target, result.predictions[i]));
        }
        nlohmann::json input_json = nlohmann::json::array();
        for (const auto& input : inputs) {
            if (input.error.empty())
                input_json.push_back(example_json(task, input.source, input.target, input.prediction));
            else
                input_json.push_back({{"source", input.text}, {"error", input.error}});
        }
        nlohmann::json heads = nullptr;
        if (!alignment.empty()) {
            heads = nlohmann::json::array();
            for (const auto& a : alignment) {
                heads.push_back(
                    {{"layer", a.layer}, {"module", a.name}, {"head", a.head}, {"share", a.share}});
            }
        }
        const nlohmann::json out = {
            {"task", run.config.task.name},
            {"heldout_examples", held_out.size()},
            {"token_accuracy", result.token_accuracy},
            {"sequence_accuracy", result.sequence_accuracy},
            {"bleu", translation && bleu.defined ? nlohmann::json(100 * bleu.score) : nullptr},
            {"examples", std::move(examples)},
            {"inputs", std::move(input_json)},
            {"alignment", std::move(heads)}};
        // A bad input's "source" is the text as given, which may not be UTF-8: shown with U+FFFD.
        // On standard output, which may be a terminal, every non-ASCII character is a \u escape,
        // so that no control or bidirectional character in it reaches the terminal raw.
        const auto dumped = [&](bool ascii) {
            return out.dump(2, ' ', ascii, nlohmann::json::error_handler_t::replace) + "\n";
        };
        if (args.to.empty() || args.to == "-") {
            output(stdout, "{}", dumped(true));
            return code;
        }
        const std::string text = dumped(false);
        const fs::path path(args.to);
        train::refuse_run_file(run.dir, path, "eval");
        // A signal while the run's lock is held (and the file written) waits for the lock to be
        // given up, the file written whole or not at all, then ends the program as it would have.
        int held = 0;
        {
            const train::InterruptGuard guard;
            const std::optional<train::RunLock> lock = train::lock_if_inside(run.dir, path, "eval");
            guard.test_hook(-1);  // as a signal while the lock is held would
            check_still_read(run, "eval");
            MadeDirectories made = make_output_directory(path.parent_path());
            held = write_unless_interrupted(path, text, guard);
            if (held == 0) made.keep();
        }
        if (held != 0) return end_as_signal(held);
        if (args.json) {  // --json --to FILE: the JSON goes to FILE only
            output(stdout, "wrote {}\n", shown_path(path));
            return code;
        }
        wrote = path;
    }

    output(stdout, "{} ({} held-out examples): token accuracy {}%, sequence accuracy {}%\n",
           run.config.task.name, held_out.size(), fraction_text(result.token_accuracy, 2, 100),
           fraction_text(result.sequence_accuracy, 2, 100));
    if (translation && bleu.defined)
        output(stdout,
               "corpus BLEU {:.2f} (4-gram, brevity penalty {:.3f}, every reference of each source)\n",
               100 * bleu.score, bleu.brevity_penalty);
    else if (translation)
        output(stdout, "corpus BLEU n/a (4-gram BLEU is undefined: no prediction has 4 tokens)\n");
    if (!alignment.empty()) {
        output(stdout,
               "attention mass on the right source position ({}), mean over the target tokens (0 where the "
               "prediction stopped before one):\n",
               task.info().alignment);
        for (const auto& a : alignment)
            output(stdout, "  layer {} ({}) head {}: {}\n", a.layer, a.name, a.head,
                   fraction_text(a.share, 3));
    }
    for (std::size_t i = 0; i < held_out.size() && static_cast<std::int64_t>(i) < args.show; ++i) {
        output(stdout, "  {}\n",
               prediction_line(task, held_out[i].source, result.predictions[i], held_out[i].target));
    }
    for (const auto& input : inputs) {
        if (input.error.empty())
            output(stdout, "input: {}\n",
                   prediction_line(task, input.source, input.prediction, input.target));
        else
            output(stdout, "input: '{}'   (not run: see the error above)\n", shown_text(input.text));
    }
    if (wrote) output(stdout, "wrote {}\n", shown_path(*wrote));
    return code;
}

}  // namespace attograd::cli
