// The command-line entry point: CLI11 definitions of every subcommand, and exit codes.
#include "commands.hpp"

#include "config.hpp"
#include "data/task.hpp"
#include "data/text.hpp"
#include "data_parallel.hpp"
#include "evaluation.hpp"
#include "models.hpp"
#include "renderers.hpp"
#include "settings.hpp"

#include "core/error.hpp"
#include "core/gemm_backend.hpp"
#include "optim/distributed.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

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
        "");  // no description: --help shows the option's plain type name alone
}

// CLI11 reads `--out ""` as an unset option (the default). An empty name or path is refused.
const CLI::Validator kNotEmpty(
    [](std::string& text) { return text.empty() ? std::string("must not be empty") : std::string(); }, "");

// config.json records --data's absolute path as JSON text, which must be valid UTF-8 (Linux
// paths are any bytes): refused here rather than failing when the run is first saved.
const CLI::Validator kUtf8Path(
    [](std::string& text) {
        std::error_code ec;
        const std::string absolute = std::filesystem::absolute(text, ec).string();
        if (data::is_valid_utf8(text) && data::is_valid_utf8(absolute)) return std::string();
        return fmt::format("the path '{}' is not valid UTF-8 (config.json records it as text): rename it",
                           shown_text(data::is_valid_utf8(text) ? absolute : text));
    },
    "");

// Adds the number check to options holding a number, the non-empty check to names and paths,
// and a plain type name for --help (INT, NUMBER, TEXT; `type` when given, e.g. DIR).
template <class T>
CLI::Option* checked(CLI::Option* option, const char* type = nullptr) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        option->check(plain_number<T>());
        option->type_name(std::is_integral_v<T> ? "INT" : "NUMBER");
    }
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>) {
        option->check(kNotEmpty);
        option->type_name("TEXT");
    }
    if (type != nullptr) option->type_name(type);
    return option;
}

/// Appends " [default: TEXT]" to `option`'s help.
CLI::Option* with_default(CLI::Option* option, const std::string& text) {
    return option->description(fmt::format("{} [default: {}]", option->get_description(), text));
}

template <class T>
CLI::Option* with_default_value(CLI::Option* option, const T& value) {
    return with_default(option, fmt::format("{}", value));
}

/// The default of `setting` by task, as train's --help shows it: "1000; sort: 2000, recall:
/// 6000" (the program's own default, then the tasks that differ).
std::string task_default_text(const Setting& setting) {
    const auto shown = [&](const RunConfig& config) {
        const nlohmann::json value = setting.get(config);
        std::string text = value.is_string() ? value.get<std::string>() : value.dump();
        if (!setting.off_text.empty() && text == "-1") text = std::string(setting.off_text);
        return text;
    };
    std::vector<std::pair<std::string, std::string>> by_task;  // (task, value)
    std::vector<std::string> names = data::task_names();
    names.emplace_back("translate");
    names.emplace_back("data");
    for (const auto& task : names) by_task.emplace_back(task, shown(task_defaults(task)));
    // The program's default, which a task without its own value keeps (the most common value
    // would change with the tasks a program registers).
    const std::string usual = shown(RunConfig{});
    std::string text = usual, others;
    for (const auto& [task, value] : by_task)
        if (value != usual) others += fmt::format("{}{}: {}", others.empty() ? "" : ", ", task, value);
    return others.empty() ? text : text + "; " + others;
}

/// "attograd 0.1.0 (GEMMs on LIBXSMM)": the CMake project's version and the library this
/// process's products run on.
std::string version_text() {
    return fmt::format("attograd {} (GEMMs on {})", ATTOGRAD_VERSION, gemm_library());
}

/// Adds `setting`'s flag, writing into `flags`, with its defaults by task in --help.
CLI::Option* add_setting(CLI::App& app, const Setting& setting, RunConfig& flags) {
    const std::string name = "--" + std::string(setting.flag), help(setting.help);
    CLI::Option* option = std::visit(
        [&](auto* value) -> CLI::Option* {
            using T = std::remove_pointer_t<decltype(value)>;
            if constexpr (std::is_same_v<T, bool>) {
                if (setting.negated_flag)  // a flag that turns the setting off: --help shows it bare
                    return app.add_flag_callback(
                        name, [value] { *value = false; }, help);
                return app.add_flag(name, *value, help);
            } else
                return checked<T>(app.add_option(name, *value, help));
        },
        setting.field(flags));
    if (setting.negated_flag) return option;
    return with_default(option, task_default_text(setting));
}

void add_train(CLI::App& app, TrainArgs& a, std::vector<std::pair<std::string, CLI::Option*>>& options) {
    const auto add = [&](const std::string& name, std::string& value, const std::string& help,
                         const char* type) {
        auto* option = checked<std::string>(app.add_option("--" + name, value, help), type);
        options.emplace_back(name, option);
        return option;
    };
    add("task", a.task, "bundled task (see `attograd tasks`), or 'data' with --data", "NAME");
    add("data", a.data, "TSV file of source<TAB>target lines to train on", "FILE")->check(kUtf8Path);
    options.emplace_back("chars",
                         app.add_flag("--chars", a.chars, "--data: characters are tokens (default: words)"));
    with_default(add("lang", a.lang,
                     "--task translate: the language of the gettext catalogs read "
                     "(/usr/share/locale/LANG/LC_MESSAGES/*.mo), e.g. fr, de, es",
                     "LANG"),
                 "fr");
    const auto add_count = [&](const std::string& name, std::int64_t& value, const std::string& help) {
        auto* option =
            with_default_value(checked<std::int64_t>(app.add_option("--" + name, value, help)), value);
        options.emplace_back(name, option);
        return option;
    };
    add_count("min-freq", a.min_freq,
              "--task translate: words seen fewer times in training are read as <unk>");
    add_count("max-vocab", a.max_vocab,
              "--task translate: at most this many vocabulary entries (of each side with separate "
              "vocabularies), the 4 special tokens included (0 = no limit)");
    with_default(add("vocab", a.vocab,
                     "--task translate and --data: separate (a source and a target vocabulary: each "
                     "language's words apart, each smaller) or shared (one for both sides)",
                     "separate|shared"),
                 "separate for translate, shared for --data");
    for (const Setting& setting : settings()) {
        if (!setting.flag.empty())
            options.emplace_back(std::string(setting.flag), add_setting(app, setting, a.flags));
    }
    with_default(add("out", a.out,
                     "run directory to write; must be new or empty, or --force (a symbolic link: the "
                     "directory it points to, the link kept)",
                     "DIR"),
                 "runs/TASK");
    options.emplace_back("force", app.add_flag("--force", a.force, "let --out replace the run it holds"));
    add("resume", a.resume,
        "continue the run in this directory (optimizer state included; a symbolic link: the directory it "
        "points to)",
        "DIR");
    options.emplace_back("quiet", app.add_flag("--quiet", a.quiet, "print only the final summary"));
}

/// eval's and inspect's --beam and --length-penalty (checked by check_decoding once the run is
/// loaded).
void add_decoding(CLI::App& app, std::int64_t& beam, double& length_penalty) {
    const std::string beam_help = fmt::format(
        "seq2seq: beam search keeping N hypotheses (1 = greedy; at most {})", DecodeSettings::max_beam);
    with_default_value(checked<std::int64_t>(app.add_option("--beam", beam, beam_help), "N"), beam);
    with_default_value(
        checked<double>(app.add_option("--length-penalty", length_penalty,
                                       "beam search ranks outputs by log P(y) / |y|^A, |y| "
                                       "counting <eos> (0: by log P(y); 1: per token; A in [-10, 10])"),
                        "A"),
        length_penalty);
}

/// `code`, or 2 with a message when output to stdout was lost on the way (a full disk, a closed
/// pipe): that is a failure, not a success (--help and --version included).
int checked_stdout(int code) {
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        report_error("cannot write to standard output");
        return 2;
    }
    return code;
}

}  // namespace

int run_cli(int argc, char** argv) {
    // train's --help shows every task's defaults: a program's task entry whose defaults the
    // settings table refuses is reported here, naming the task and the key, not while --help
    // is built.
    try {
        for (const auto& name : data::task_names()) (void)task_defaults(name);
    } catch (const attograd::ValueError& e) {
        report_error(e.what());
        return 2;
    }
    CLI::App app{"attograd: train small attention models on toy tasks and look inside them", "attograd"};
    app.require_subcommand(1);
    app.set_version_flag("--version", version_text(),
                         "print the version and the build's GEMM backend, and exit");
    app.get_formatter()->column_width(32);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        // CLI11 quotes the values it refuses: escaped, as every message is. Its words for an
        // option given twice ("--steps: At Most 1 required but received 2") are said plainly.
        std::string what = e.what();
        if (const auto at = what.find(": At Most 1 required but received "); at != std::string::npos)
            what =
                fmt::format("{}: given {} times; give it once", what.substr(0, at),
                            what.substr(at + std::string_view(": At Most 1 required but received ").size()));
        return fmt::format("attograd: {} (see --help)\n", data::escape_control(what));
    });

    app.add_subcommand("tasks",
                       "list the bundled tasks with their default model, target and right alignment");

    TrainArgs train;
    std::vector<std::pair<std::string, CLI::Option*>> train_options;
    auto* train_cmd = app.add_subcommand("train", "train a model on a task or a TSV file");
    add_train(*train_cmd, train, train_options);

    EvalArgs eval;
    auto* eval_cmd = app.add_subcommand("eval", "held-out accuracy of a run, and predictions for --input");
    checked<std::string>(eval_cmd->add_option("--run", eval.run, "run directory written by train"), "DIR")
        ->required();
    eval_cmd
        ->add_option("--input", eval.inputs,
                     "text to predict (repeatable; each bad one is reported, the rest run)")
        ->type_name("TEXT");
    eval_cmd->add_flag("--json", eval.json, "print one JSON object (for scripts)");
    with_default(checked<std::string>(
                     eval_cmd->add_option("--to", eval.to,
                                          "also write that JSON object to this file, atomically ('-' = "
                                          "stdout); missing folders are created"),
                     "FILE"),
                 "none: the JSON is only printed with --json");
    with_default_value(
        checked<std::int64_t>(eval_cmd->add_option("--show", eval.show, "held-out examples to print")),
        eval.show);

    add_decoding(*eval_cmd, eval.beam, eval.length_penalty);

    InspectArgs inspect;
    auto* inspect_cmd = app.add_subcommand("inspect", "draw every layer's and head's attention of a run");
    checked<std::string>(inspect_cmd->add_option("--run", inspect.run, "run directory written by train"),
                         "DIR")
        ->required();
    inspect_cmd
        ->add_option("--input", inspect.inputs,
                     "text to run (repeatable; each bad one is reported, the rest run)")
        ->type_name("TEXT");
    auto* samples = with_default_value(checked<std::int64_t>(inspect_cmd->add_option(
                                           "--samples", inspect.samples,
                                           "held-out examples to draw (with --faithfulness: to measure, "
                                           "default 50)")),
                                       inspect.samples);
    with_default_value(
        checked<std::string>(inspect_cmd->add_option("--format", inspect.format, renderer_names_text())),
        inspect.format);
    with_default(
        checked<std::string>(
            inspect_cmd->add_option(
                "--to", inspect.to,
                fmt::format("output file ({}; '-' = stdout) or directory ({}); missing folders are created",
                            renderer_file_names_text(), renderer_names_text(Renderer::Target::Directory))),
            "PATH"),
        renderer_outputs_text());
    inspect_cmd->footer(renderer_help_text());
    inspect_cmd
        ->add_option("--knockout", inspect.knockout,
                     "silence a head (zero weights and output): LAYER.HEAD, e.g. 0.0 (repeatable)")
        ->check(kNotEmpty)
        ->type_name("LAYER.HEAD");
    inspect_cmd->add_flag("--saliency", inspect.saliency,
                          "also compute gradient x input saliency and its rank correlation with attention");
    inspect_cmd->add_flag(
        "--rollout", inspect.rollout,
        "also draw attention rollout (Abnar & Zuidema 2020) over the model's attention stack");
    inspect_cmd->add_flag("--flow", inspect.flow, "also draw attention flow (Abnar & Zuidema 2020)");
    inspect_cmd->add_flag("--faithfulness", inspect.faithfulness,
                          "print every head's faithfulness table and verdict over held-out examples "
                          "(--format html: add the report's faithfulness section)");
    add_decoding(*inspect_cmd, inspect.beam, inspect.length_penalty);

    SampleArgs sample;
    auto* sample_cmd = app.add_subcommand(
        "sample", "text drawn from a language model run (--model lm): the prompt and the tokens that follow");
    checked<std::string>(sample_cmd->add_option("--run", sample.run, "run directory written by train"), "DIR")
        ->required();
    checked<std::string>(sample_cmd->add_option("--prompt", sample.prompt,
                                                "text the model continues (tokens of the run's vocabulary)"),
                         "TEXT")
        ->required();
    with_default_value(checked<double>(sample_cmd->add_option(
                           "--temperature", sample.temperature,
                           "logits are divided by it before the softmax (< 1 sharper, > 1 flatter)")),
                       sample.temperature);
    auto* top_k = with_default(checked<std::int64_t>(sample_cmd->add_option(
                                   "--top-k", sample.top_k, "draw only from this many most likely tokens")),
                               "every token");
    with_default_value(checked<std::int64_t>(sample_cmd->add_option(
                           "--length", sample.length,
                           fmt::format("tokens to draw after the prompt (1 to {})", SampleArgs::max_length))),
                       sample.length);
    with_default_value(checked<std::uint64_t>(sample_cmd->add_option(
                           "--seed", sample.seed, "random seed (the same seed, the same text)")),
                       sample.seed);

    // CLI11 would report a mistyped subcommand as "A subcommand is required".
    constexpr std::array subcommands = {"tasks", "train", "eval", "inspect", "sample"};
    if (argc > 1 && argv[1][0] != '-' &&
        std::none_of(subcommands.begin(), subcommands.end(),
                     [&](const char* name) { return std::strcmp(name, argv[1]) == 0; })) {
        report_error(fmt::format(
            "unknown subcommand '{}' (choose tasks, train, eval, inspect or sample; see --help)", argv[1]));
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Under an MPI launcher every rank parses the same line: only rank 0 prints help or errors.
        if (optim::launcher_rank() != 0) return e.get_exit_code() == 0 ? 0 : 2;
        return app.exit(e) == 0 ? checked_stdout(0) : 2;
    }
    const auto run_subcommand = [&] {
        // Only train is data-parallel: under a launcher of several processes tasks, eval and
        // inspect run on rank 0 alone (one output, one file written); the others exit 0 at once.
        if (!app.got_subcommand("train") && skip_on_this_rank()) return 0;
        if (app.got_subcommand("tasks")) return cmd_tasks();
        if (app.got_subcommand("train")) {
            for (const auto& [name, option] : train_options) {
                if (option->count() > 0) train.given.push_back(name);
            }
            return cmd_train(train);
        }
        if (app.got_subcommand("eval")) return cmd_eval(eval);
        if (app.got_subcommand("sample")) {
            sample.top_k_given = top_k->count() > 0;
            return cmd_sample(sample);
        }
        inspect.samples_given = samples->count() > 0;
        return cmd_inspect(inspect);
    };
    try {
        return checked_stdout(run_subcommand());
    } catch (const UsageError& e) {
        report_error(e.what());
        return 2;
    } catch (const attograd::ValueError& e) {
        report_error(e.what());
        return 2;
    } catch (const attograd::ResourceError& e) {  // a size the user asked for does not fit in memory
        report_error(e.what());
        return 2;
    } catch (const attograd::IoError& e) {
        report_error(e.what());
        return 2;
    } catch (const std::filesystem::filesystem_error& e) {
        // An unusable path given by the user (e.g. --out under a regular file, a read-only
        // directory): the path and the reason, not what() ("filesystem error: cannot ...").
        report_error(fmt::format("{}: {}",
                                 e.path1().empty() ? std::string("filesystem") : shown_path(e.path1()),
                                 e.code().message()));
        return 2;
    } catch (const std::exception& e) {
        report_error(fmt::format("internal error: {}", e.what()));
        return 1;
    }
}

}  // namespace attograd::cli
