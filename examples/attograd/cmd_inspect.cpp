// `attograd inspect`: every layer's and head's attention of a run, drawn in the terminal or
// written as SVG, HTML, CSV or JSON; knockout of one head; attention vs gradient saliency.
#include "commands.hpp"
#include "console.hpp"
#include "core/atomic_file.hpp"
#include "evaluation.hpp"
#include "faithfulness_run.hpp"
#include "fraction_text.hpp"
#include "head_score_report.hpp"
#include "output_file.hpp"
#include "renderers.hpp"
#include "run_dir.hpp"
#include "train/file_io.hpp"
#include "train/interrupt.hpp"
#include "train/run_lock.hpp"

#include "data/text.hpp"

#include "inspect/knockout.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace attograd::cli {

namespace {

namespace fs = std::filesystem;

/// Makes `dir`, RUN/inspect, when missing: a directory of the run, never a link (refuse_link)
/// nor a directory made where one points. Returns it when it was made here.
MadeDirectories make_default_dir(const fs::path& dir) {
    refuse_link(dir);
    std::error_code ec;
    const auto status = fs::symlink_status(dir, ec);
    if (fs::is_directory(status)) return {};
    AG_CHECK(!fs::exists(status), IoError,
             "{}: exists and is not a directory (inspect writes its files in it)", shown_path(dir));
    AG_CHECK(::mkdir(dir.c_str(), 0777) == 0, IoError, "{}: cannot create the directory: {}", shown_path(dir),
             std::strerror(errno));
    return MadeDirectories({dir});
}

/// The heads named by "LAYER.HEAD" texts, by layer name (layers numbered as
/// Model::attention_layers()); UsageError listing the model's layers otherwise.
std::map<std::string, std::vector<std::int64_t>> parse_knockout(const std::vector<std::string>& texts,
                                                                const Model& model) {
    const auto& layers = model.attention_layers();
    std::string listing;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        listing +=
            fmt::format("{}{} = {} ({} head(s))", l == 0 ? "" : ", ", l, layers[l].name, layers[l].heads);
    }
    std::map<std::string, std::vector<std::int64_t>> heads;
    for (const auto& text : texts) {
        const auto dot = text.find('.');
        std::int64_t layer = -1, head = -1;
        try {
            if (dot == std::string::npos) throw std::invalid_argument(text);
            std::size_t used_layer = 0, used_head = 0;
            layer = std::stoll(text.substr(0, dot), &used_layer);
            head = std::stoll(text.substr(dot + 1), &used_head);
            if (used_layer != dot || used_head != text.size() - dot - 1) throw std::invalid_argument(text);
        } catch (const std::exception&) {
            throw UsageError(
                fmt::format("--knockout takes LAYER.HEAD, e.g. 0.0, got '{}'", shown_text(text)));
        }
        if (layer < 0 || layer >= std::ssize(layers) || head < 0 ||
            head >= layers[static_cast<std::size_t>(layer)].heads) {
            throw UsageError(fmt::format("--knockout {}: no such head; this model's attention layers: {}",
                                         text, listing.empty() ? "none" : listing));
        }
        auto& chosen = heads[layers[static_cast<std::size_t>(layer)].name];
        if (std::find(chosen.begin(), chosen.end(), head) != chosen.end())
            throw UsageError(
                fmt::format("--knockout {}: given twice; give each head once", shown_text(text)));
        chosen.push_back(head);
    }
    return heads;
}

/// Held-out examples whose attention gives a language model's head scores.
constexpr std::int64_t head_score_examples = 100;

/// Held-out examples --faithfulness measures when --samples is not given.
constexpr std::int64_t faithfulness_samples = 50;

std::string summary_line(const inspect::AttentionMap& map) {
    std::string line = fmt::format("  layer {} {} head {}", map.layer, map.module, map.head);
    if (map.alignment_share) line += ": alignment share " + fraction_text(*map.alignment_share, 3);
    if (map.saliency_correlation)
        line += fmt::format(", Spearman vs saliency {:+.3f}", *map.saliency_correlation);
    return line;
}

}  // namespace

int cmd_inspect(const InspectArgs& args) {
    const Renderer* renderer = find_renderer(args.format);
    if (renderer == nullptr) {
        throw UsageError(
            fmt::format("--format must be {}, got '{}'", renderer_names_text(), shown_text(args.format)));
    }
    using Target = Renderer::Target;
    if (!args.inputs.empty() && args.samples_given) {
        throw UsageError(
            "--input and --samples do not combine: inspect either your inputs or held-out samples");
    }
    if (renderer->target == Target::Directory && args.to == "-") {
        throw UsageError(
            fmt::format("--to - (stdout) does not apply to --format {}: give a directory for the {} files",
                        renderer->name, renderer->kind));
    }
    // --to is checked before anything is computed or created (missing parent folders are then
    // created, as --out's are).
    if (!args.to.empty() && args.to != "-" && renderer->target != Target::Terminal) {
        std::error_code ec;
        const fs::file_status status = fs::status(args.to, ec);
        if (renderer->target == Target::Directory) {
            check_name_lengths(args.to);
            if (fs::exists(status) && !fs::is_directory(status))
                throw UsageError(fmt::format(
                    "--to {}: not a directory (--format {} writes one file per map into a directory)",
                    shown_path(args.to), renderer->name));
        } else {
            check_to_file(args.to);
        }
    }
    if (renderer->target == Target::Terminal && !args.to.empty()) {
        throw UsageError(
            fmt::format("--to does not apply to --format {} (it prints to the terminal)", renderer->name));
    }
    if (args.samples < 1) throw UsageError(fmt::format("--samples must be >= 1, got {}", args.samples));
    if (args.faithfulness) {
        if (args.format != "term" && args.format != "html")
            throw UsageError(
                fmt::format("--faithfulness applies to --format term or html, not {}", args.format));
        if (!args.inputs.empty())
            throw UsageError(
                "--faithfulness measures held-out examples (their targets are the labels), not --input");
        if (!args.knockout.empty())
            throw UsageError(
                "--faithfulness knocks out every head itself; it does not combine with --knockout");
        // The terminal shows only the table: the drawn examples these flags act on are in the HTML
        // report alone, so refuse them rather than ignore them.
        std::string unused;
        for (const auto& [given, name] :
             {std::pair{args.saliency, "--saliency"}, std::pair{args.rollout, "--rollout"},
              std::pair{args.flow, "--flow"}, std::pair{args.beam != 1, "--beam"}})
            if (given) unused += (unused.empty() ? "" : ", ") + std::string(name);
        if (args.format == "term" && !unused.empty())
            throw UsageError(
                fmt::format("--faithfulness --format term prints only the table; {} appl{} to "
                            "the drawn examples (--format html draws them beside the table)",
                            unused, unused.find(',') == std::string::npos ? "ies" : "y"));
    }

    const LoadedRun run = load_run(args.run);
    const Task& task = *run.task;
    const auto knockout = parse_knockout(args.knockout, *run.model);
    const bool lm = run.config.model.kind == "lm";
    // The faithfulness measures take a decoder's outputs and <eos>, or the encoder's one output
    // per input, as the decisions; they are not defined for a language model's.
    if (args.faithfulness && lm)
        throw UsageError("--faithfulness applies to seq2seq, encoder and rnn runs; this run is --model lm");
    const DecodeSettings decoding{.beam = args.beam, .length_penalty = args.length_penalty};
    check_decoding(decoding, run.config.model);
    // Summary lines and progress go to stdout, or to stderr when stdout carries the data (--to -).
    std::FILE* summary = args.to == "-" ? stderr : stdout;
    // As eval: every --input is checked before any work or output; a bad one is reported, naming
    // it, and the others are still inspected; the exit code is then 2 (and nothing is computed or
    // written when every input is bad).
    std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases;
    bool any_failed = false;
    for (const auto& text : args.inputs) {
        any_failed |= !input_error([&] {
                           auto source = read_input(task, run.config, text);
                           auto target = task.solve(source).value_or(std::vector<std::string>{});
                           cases.emplace_back(std::move(source), std::move(target));
                       }).empty();
    }
    if (!args.inputs.empty() && cases.empty()) return 2;
    const int code = any_failed ? 2 : 0;
    std::optional<FaithfulnessRun> faithfulness;
    if (args.faithfulness) {
        if (run.model->attention_layers().empty())
            throw UsageError("--faithfulness: the model has no attention layer to measure");
        faithfulness = faithfulness_over_held_out(
            *run.model, run.config.model, task, vocabularies(run.config),
            args.samples_given ? args.samples : faithfulness_samples, {.evidence = args.format == "html"});
        const std::string measured = fmt::format(
            "faithfulness over {} held-out example(s), {} decision(s) (every output token; <eos> where "
            "target lengths vary), in {:.1f} s",
            faithfulness->examples, faithfulness->decisions, faithfulness->seconds);
        if (args.format == "term") {
            output(stdout, "{}\n\n{}", measured, inspect::to_text(faithfulness->table));
            return code;
        }
        output(summary, "{}\n", measured);
    }

    // With --faithfulness, --samples counts the examples measured; the report draws the first.
    const std::int64_t drawn = args.faithfulness ? 1 : args.samples;
    for (std::int64_t i = 0; args.inputs.empty() && i < drawn && i < std::ssize(task.held_out()); ++i) {
        const auto& e = task.held_out()[static_cast<std::size_t>(i)];
        cases.emplace_back(e.source, e.target);
    }

    std::vector<std::string> notes;
    std::optional<Evaluation> with_all_heads;
    if (!knockout.empty())
        with_all_heads = evaluate(*run.model, vocabularies(run.config), task.held_out(), decoding);
    // Everything below runs with the knocked-out heads silenced (inspect::HeadKnockout).
    std::optional<inspect::HeadKnockout> silenced;
    if (!knockout.empty()) silenced.emplace(*run.model, knockout);
    const InspectOptions options{
        .saliency = args.saliency, .rollout = args.rollout, .flow = args.flow, .decoding = decoding};
    std::vector<inspect::InspectedExample> examples;
    for (const auto& [source, target] : cases) {
        examples.push_back(inspect_example(*run.model, run.config.model, task, vocabularies(run.config),
                                           source, target, options));
    }
    if (with_all_heads) {
        const Evaluation without = evaluate(*run.model, vocabularies(run.config), task.held_out(), decoding);
        std::string heads;
        for (const auto& text : args.knockout) heads += (heads.empty() ? "" : ", ") + text;
        notes.push_back(fmt::format(
            "knockout of {} (LAYER.HEAD): held-out sequence accuracy {}% -> {}%, token accuracy {}% -> {}%",
            heads, fraction_text(with_all_heads->sequence_accuracy, 1, 100),
            fraction_text(without.sequence_accuracy, 1, 100),
            fraction_text(with_all_heads->token_accuracy, 1, 100),
            fraction_text(without.token_accuracy, 1, 100)));
    }
    if (lm) {
        const auto scores = held_out_head_scores(*run.model, run.config.vocab, task, head_score_examples);
        notes.push_back(fmt::format(
            "head scores over {} held-out example(s) (previous-token: attention to the token before the "
            "query; "
            "induction: to the token after an earlier occurrence of the query's token; Olsson et al. 2022), "
            "labelled at >= {:.1f}:",
            std::min<std::int64_t>(head_score_examples, std::ssize(task.held_out())), head_label_threshold));
        for (const auto& score : scores) notes.push_back("  " + head_score_line(score));
    }
    const auto print_summary = [&] {
        for (const auto& note : notes) output(summary, "{}\n", note);
        for (std::size_t e = 0; e < examples.size(); ++e) {
            const auto& ex = examples[e];
            output(summary, "example {}: {}\n", e + 1,
                   prediction_line(task, ex.source, ex.prediction, ex.target));
            for (const auto& map : ex.maps) output(summary, "{}\n", summary_line(map));
        }
    };

    std::optional<inspect::FaithfulnessSection> section;
    if (faithfulness)
        section =
            inspect::FaithfulnessSection{.table = faithfulness->table, .evidence = faithfulness->evidence};
    const std::vector<RenderedFile> rendered =
        renderer->render({.run = run,
                          .examples = examples,
                          .notes = notes,
                          .faithfulness = section ? &*section : nullptr,
                          .decoding = decoding_description(decoding, run.config.model),
                          .example_maps = example_maps_description(run.config.model)});
    if (renderer->target == Target::Terminal) {
        for (const auto& text : rendered) output(stdout, "{}", text.contents);
        return code;
    }

    // A file whose name the program chose (RUN/inspect/ and the files in it, each file in a --to
    // directory) is never written through a link; a --to file is the user's, links and all.
    const bool by_default = args.to.empty();
    const fs::path default_dir = run.dir / "inspect";
    const auto make_dir = [&](const fs::path& dir) {
        return by_default ? make_default_dir(dir) : make_output_directory(dir);
    };
    if (renderer->target == Target::Directory) {
        const fs::path dir = by_default ? default_dir : fs::path(args.to);
        if (!by_default && !rendered.empty())
            train::refuse_run_file(run.dir, dir / rendered.front().name, "inspect");
        // A signal from here on (the run's lock taken, files written) waits: one while the files
        // are written stops the writing and removes them (the old ones stay), one while they are
        // renamed waits until every file is in place; then the lock and any folder made for them
        // are given up, and the program ends as the signal would have ended it.
        int held = 0;
        std::optional<MadeDirectories> made;
        {
            const train::InterruptGuard guard;
            const std::optional<train::RunLock> lock = train::lock_if_inside(run.dir, dir, "inspect");
            guard.test_hook(-1);               // as a signal while the lock is held would
            check_still_read(run, "inspect");  // under the lock: no save lands before the files do
            made.emplace(make_dir(dir));
            // Every name checked and every file written whole before the first replaces its old
            // one: a refusal or a failed write (disk full, `ulimit -f`) leaves the old generation
            // entire.
            for (const auto& file : rendered) refuse_link(dir / file.name);
            std::vector<std::unique_ptr<AtomicFile>> files;
            for (const auto& file : rendered) {
                if (guard.signal() != 0) break;
                files.push_back(std::make_unique<AtomicFile>(dir / file.name, shown_path(dir / file.name),
                                                             AtomicFile::Symlinks::refuse));
                files.back()->write(file.contents.data(), file.contents.size());
            }
            if (guard.signal() == 0)
                for (auto& file : files) file->commit();
            held = guard.signal();
        }
        if (held != 0) {
            made.reset();  // its folders, now that the unfinished files are gone
            return end_as_signal(held);
        }
        made->keep();
        print_summary();
        output(stdout, "wrote {} {} file(s) to {}/\n", rendered.size(), renderer->kind, shown_path(dir));
        return code;
    }

    AG_ASSERT(rendered.size() == 1, "inspect: --format {} gave {} files, not one", renderer->name,
              rendered.size());
    const std::string& contents = rendered[0].contents;
    if (args.to == "-") {
        check_still_read(run, "inspect");
        output(stdout, "{}", contents);
        print_summary();
        return code;
    }
    fs::path path = by_default ? default_dir / renderer->writes : fs::path(args.to);
    if (!by_default) train::refuse_run_file(run.dir, path, "inspect");
    // A signal while the run's lock is held (and the file written) waits for the lock to be
    // given up, the file written whole or not at all, then ends the program as it would have.
    int held = 0;
    {
        const train::InterruptGuard guard;
        const std::optional<train::RunLock> lock = train::lock_if_inside(run.dir, path, "inspect");
        guard.test_hook(-1);  // as a signal while the lock is held would
        check_still_read(run, "inspect");
        MadeDirectories made = path.parent_path().empty() ? MadeDirectories() : make_dir(path.parent_path());
        if (by_default) refuse_link(path);
        held = write_unless_interrupted(
            path, contents, guard, by_default ? AtomicFile::Symlinks::refuse : AtomicFile::Symlinks::follow);
        if (held == 0) made.keep();
    }
    if (held != 0) return end_as_signal(held);
    print_summary();
    output(stdout, "wrote {}\n", shown_path(path));
    return code;
}

}  // namespace attograd::cli
