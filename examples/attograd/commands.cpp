// The command-line entry point: CLI11 definitions of every subcommand, and exit codes.
#include "commands.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>

namespace attograd::cli {

bool TrainArgs::was_given(const std::string& name) const {
    return std::find(given.begin(), given.end(), name) != given.end();
}

namespace {

// CLI11 itself reads "" as 0 and "0x10" as 16, and clamps a number beyond the type's range to
// its largest value. Numbers on this command line are plain decimal and must fit their type.
template <class T>
CLI::Validator plain_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            T value{};
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (text.empty() || error == std::errc::invalid_argument || stop != end)
                return fmt::format("'{}' is not a plain decimal number", text);
            if (error == std::errc::result_out_of_range) return fmt::format("{} is out of range", text);
            return {};
        },
        std::is_integral_v<T> ? "INT" : "NUMBER");
}

// CLI11 reads `--out ""` as an unset option (the default). An empty name or path is refused.
const CLI::Validator kNotEmpty(
    [](std::string& text) { return text.empty() ? std::string("must not be empty") : std::string(); },
    "TEXT");

// Adds the number check to options holding a number, the non-empty check to names and paths.
template <class T>
CLI::Option* checked(CLI::Option* option) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) option->check(plain_number<T>());
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>)
        option->check(kNotEmpty);
    return option;
}

void add_train(CLI::App& app, TrainArgs& a, std::vector<std::pair<std::string, CLI::Option*>>& options) {
    const auto add = [&](const std::string& name, auto& value, const std::string& help) {
        options.emplace_back(
            name, checked<std::decay_t<decltype(value)>>(app.add_option("--" + name, value, help)));
        return options.back().second;
    };
    add("task", a.task, "bundled task (see `attograd tasks`), or 'data' with --data");
    add("data", a.data, "TSV file of source<TAB>target lines to train on");
    options.emplace_back("chars",
                         app.add_flag("--chars", a.chars, "--data: characters are tokens (default: words)"));
    add("model", a.model,
        "seq2seq (encoder + attending decoder) or encoder (self-attention, one output per input)");
    add("score", a.score, "attention score: additive, dot, scaled-dot, bilinear");
    add("attention", a.attention, "decoder attention: soft or hard");
    add("estimator", a.estimator, "hard attention's training: gumbel (straight-through) or reinforce");
    add("window", a.window, "local attention: window half-width D (2D + 1 keys)");
    add("local", a.local, "local attention centre: m (monotonic) or p (predictive); needs --window");
    add("heads", a.heads, "attention heads per layer");
    add("layers", a.layers, "self-attention layers (seq2seq: in the encoder)");
    add("decoder-layers", a.decoder_layers, "seq2seq: attention layers of the decoder");
    add("embed-dim", a.embed_dim, "model width E");
    add("ffn-dim", a.ffn_dim, "feed-forward width of each layer (0 = none)");
    options.emplace_back(
        "next-token",
        app.add_flag("--next-token", a.next_token,
                     "encoder adds an embedding of each position's next token (--next-token=false: off)"));
    add("optim", a.optim, "optimizer: sgd, adam, adamw");
    add("lr", a.lr, "peak learning rate");
    add("momentum", a.momentum, "SGD momentum");
    add("weight-decay", a.weight_decay, "weight decay (L2 for sgd/adam, decoupled for adamw)");
    add("clip", a.clip, "clip the global gradient norm to this (0 = off)");
    add("batch", a.batch, "examples per step");
    add("steps", a.steps, "training steps at most (with --resume: the new total)");
    add("seed", a.seed,
        "random seed (the same seed gives the same run, bit for bit, on any number of threads)");
    add("warmup", a.warmup, "linear learning-rate warm-up steps");
    add("schedule", a.schedule, "after the warm-up: cosine or constant");
    add("eval-every", a.eval_every, "held-out evaluation every N steps");
    add("snapshot-every", a.snapshot_every,
        "record the attention of the first held-out examples every N steps (0 = off; default 20)");
    options.emplace_back("no-early-stop", app.add_flag("--no-early-stop", a.no_early_stop,
                                                       "train all --steps even after reaching the target"));
    add("checkpoint-every", a.checkpoint_every,
        "also save the run every N steps (it is saved at every evaluation too; 0 = at evaluations only)")
        ->capture_default_str();
    add("out", a.out, "run directory to write (default runs/TASK); must be new or empty, or --force");
    options.emplace_back("force", app.add_flag("--force", a.force, "let --out replace the run it holds"));
    add("resume", a.resume, "continue the run in this directory (optimizer state included)");
    options.emplace_back("quiet", app.add_flag("--quiet", a.quiet, "print only the final summary"));
}

}  // namespace

int run_cli(int argc, char** argv) {
    CLI::App app{"attograd: train small attention models on toy tasks and look inside them", "attograd"};
    app.require_subcommand(1);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return fmt::format("attograd: {} (see --help)\n", e.what());
    });

    app.add_subcommand("tasks",
                       "list the bundled tasks with their default model, target and right alignment");

    TrainArgs train;
    std::vector<std::pair<std::string, CLI::Option*>> train_options;
    auto* train_cmd = app.add_subcommand("train", "train a model on a task or a TSV file");
    add_train(*train_cmd, train, train_options);

    EvalArgs eval;
    auto* eval_cmd = app.add_subcommand("eval", "held-out accuracy of a run, and predictions for --input");
    checked<std::string>(eval_cmd->add_option("--run", eval.run, "run directory written by train"))
        ->required();
    eval_cmd->add_option("--input", eval.inputs, "text to predict (repeatable)");
    eval_cmd->add_flag("--json", eval.json, "print one JSON object (for scripts)");
    checked<std::int64_t>(eval_cmd->add_option("--show", eval.show, "held-out examples to print"))
        ->capture_default_str();

    InspectArgs inspect;
    auto* inspect_cmd = app.add_subcommand("inspect", "draw every layer's and head's attention of a run");
    checked<std::string>(inspect_cmd->add_option("--run", inspect.run, "run directory written by train"))
        ->required();
    inspect_cmd->add_option("--input", inspect.inputs, "text to run (repeatable)");
    auto* samples = checked<std::int64_t>(
        inspect_cmd->add_option("--samples", inspect.samples, "held-out examples to draw (default 1)"));
    checked<std::string>(inspect_cmd->add_option("--format", inspect.format, "term, svg, html, csv or json"))
        ->capture_default_str();
    checked<std::string>(inspect_cmd->add_option(
        "--to", inspect.to,
        "output file (html, csv, json; '-' = stdout) or directory (svg); missing folders are created"));
    inspect_cmd
        ->add_option("--knockout", inspect.knockout,
                     "silence a head (zero weights and output): LAYER.HEAD, e.g. 0.0 (repeatable)")
        ->check(kNotEmpty);
    inspect_cmd->add_flag("--saliency", inspect.saliency,
                          "also compute gradient x input saliency and its rank correlation with attention");
    inspect_cmd->add_flag(
        "--rollout", inspect.rollout,
        "also draw attention rollout (Abnar & Zuidema 2020) over the model's attention stack");
    inspect_cmd->add_flag("--flow", inspect.flow, "also draw attention flow (Abnar & Zuidema 2020)");

    // CLI11 would report a mistyped subcommand as "A subcommand is required".
    constexpr std::array subcommands = {"tasks", "train", "eval", "inspect"};
    if (argc > 1 && argv[1][0] != '-' &&
        std::none_of(subcommands.begin(), subcommands.end(),
                     [&](const char* name) { return std::strcmp(name, argv[1]) == 0; })) {
        fmt::print(stderr,
                   "attograd: unknown subcommand '{}' (choose tasks, train, eval or inspect; see --help)\n",
                   argv[1]);
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    const auto run_subcommand = [&] {
        if (app.got_subcommand("tasks")) return cmd_tasks();
        if (app.got_subcommand("train")) {
            for (const auto& [name, option] : train_options) {
                if (option->count() > 0) train.given.push_back(name);
            }
            return cmd_train(train);
        }
        if (app.got_subcommand("eval")) return cmd_eval(eval);
        inspect.samples_given = samples->count() > 0;
        return cmd_inspect(inspect);
    };
    try {
        const int code = run_subcommand();
        // Output lost on the way (a full disk, a closed pipe) is a failure, not a success.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
            fmt::print(stderr, "attograd: cannot write to standard output\n");
            return 2;
        }
        return code;
    } catch (const UsageError& e) {
        fmt::print(stderr, "attograd: {}\n", e.what());
        return 2;
    } catch (const attograd::ValueError& e) {
        fmt::print(stderr, "attograd: {}\n", e.what());
        return 2;
    } catch (const attograd::ResourceError& e) {  // a size the user asked for does not fit in memory
        fmt::print(stderr, "attograd: {}\n", e.what());
        return 2;
    } catch (const attograd::IoError& e) {
        fmt::print(stderr, "attograd: {}\n", e.what());
        return 2;
    } catch (const std::filesystem::filesystem_error& e) {
        // An unusable path given by the user (e.g. --out under a regular file); what() names it.
        fmt::print(stderr, "attograd: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "attograd: internal error: {}\n", e.what());
        return 1;
    }
}

}  // namespace attograd::cli
