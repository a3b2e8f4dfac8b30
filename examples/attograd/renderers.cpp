// The formats of `attograd inspect --format` (renderers.hpp).
#include "renderers.hpp"

#include "console.hpp"
#include "evaluation.hpp"
#include "report_builder.hpp"
#include "snapshot_probes.hpp"

#include "data/text.hpp"
#include "inspect/export.hpp"
#include "inspect/render_html.hpp"
#include "inspect/render_svg.hpp"
#include "inspect/render_term.hpp"
#include "inspect/snapshot.hpp"
#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace attograd::cli {

namespace {

/// The terminal view: each example's prediction and heat maps.
std::vector<RenderedFile> render_term(const Inspection& in) {
    const Task& task = *in.run.task;
    // Under mpirun stdout is the launcher's forwarding: a terminal even when mpirun's own output
    // goes to a file, so colour codes would end up there.
    const inspect::TermOptions term{
        .colour = optim::under_launcher() ? inspect::TermColour::Plain : inspect::detect_term_colour(stdout),
        .width = std::max<std::int64_t>(20, inspect::terminal_width(stdout))};
    std::string text;
    for (const auto& note : in.notes) text += note + "\n\n";
    for (std::size_t e = 0; e < in.examples.size(); ++e) {
        const auto& ex = in.examples[e];
        text += fmt::format("example {}: {}\n\n", e + 1,
                            prediction_line(task, ex.source, ex.prediction, ex.target));
        for (const auto& map : ex.maps) {
            text += fmt::format("layer {}: {}", map.layer, inspect::render_heatmap(map, term));
            if (map.saliency_correlation)
                text +=
                    fmt::format("Spearman correlation with saliency: {:+.3f}\n", *map.saliency_correlation);
            text += "\n";
        }
        for (const auto* extra : {&ex.saliency, &ex.rollout, &ex.flow})
            if (*extra) text += inspect::render_heatmap(**extra, term) + "\n";
    }
    if (!task.info().alignment.empty()) text += fmt::format("right alignment: {}\n", task.info().alignment);
    return {{"", std::move(text)}};
}

/// One SVG file per map: exampleE_layerL_headH.svg, and exampleE_saliency/rollout/flow.svg.
std::vector<RenderedFile> render_svg_files(const Inspection& in) {
    const std::string& alignment = in.run.task->info().alignment;
    const inspect::SvgOptions options{
        .alignment_legend = alignment.empty() ? "right alignment" : "right alignment: " + alignment};
    std::vector<RenderedFile> files;
    const auto add = [&](const inspect::AttentionMap& map, std::string name) {
        files.push_back({std::move(name),
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + inspect::render_svg(map, options)});
    };
    for (std::size_t e = 0; e < in.examples.size(); ++e) {
        const auto& ex = in.examples[e];
        for (const auto& map : ex.maps)
            add(map, fmt::format("example{}_layer{}_head{}.svg", e + 1, map.layer, map.head));
        if (ex.saliency) add(*ex.saliency, fmt::format("example{}_saliency.svg", e + 1));
        if (ex.rollout) add(*ex.rollout, fmt::format("example{}_rollout.svg", e + 1));
        if (ex.flow) add(*ex.flow, fmt::format("example{}_flow.svg", e + 1));
    }
    return files;
}

/// The HTML report, with the training replay when the run's snapshots can be read.
std::vector<RenderedFile> render_report(const Inspection& in) {
    inspect::Report report = build_report(in.run, in.examples, in.notes);
    const std::filesystem::path snapshots = in.run.dir / snapshot_file;
    if (std::filesystem::exists(snapshots)) {
        try {
            report.snapshots = inspect::load_snapshots(snapshots);
        } catch (const Error& e) {  // the report is still worth having without them
            output(stderr, "attograd: warning: {}; the report has no training replay\n",
                   data::escape_control(e.what()));
            report.notes.push_back(fmt::format("attention snapshots could not be read: {}", e.what()));
        }
    }
    return {{"", inspect::render_html(report)}};
}

}  // namespace

const std::vector<Renderer>& renderers() {
    using T = Renderer::Target;
    static const std::vector<Renderer> table = {
        {.name = "term",
         .help = "heat maps in the terminal",
         .target = T::Terminal,
         .kind = "terminal",
         .render = render_term},
        {.name = "svg",
         .help = "one SVG file per map",
         .target = T::Directory,
         .kind = "SVG",
         .render = render_svg_files},
        {.name = "html",
         .help = "one HTML report of the run and its attention",
         .target = T::File,
         .kind = "HTML",
         .writes = "report.html",
         .render = render_report},
        {.name = "csv",
         .help = "every head's weights, one row per (query, key)",
         .target = T::File,
         .kind = "CSV",
         .writes = "attention.csv",
         .render =
             [](const Inspection& in) {
                 return std::vector<RenderedFile>{{"", inspect::to_csv(in.examples)}};
             }},
        {.name = "json",
         .help = "every head's weights with the examples' tokens",
         .target = T::File,
         .kind = "JSON",
         .writes = "attention.json",
         .render =
             [](const Inspection& in) {
                 return std::vector<RenderedFile>{{"", inspect::to_json(in.examples)}};
             }},
    };
    return table;
}

const Renderer* find_renderer(std::string_view name) {
    const auto& table = renderers();
    const auto it =
        std::find_if(table.begin(), table.end(), [&](const Renderer& r) { return r.name == name; });
    return it == table.end() ? nullptr : &*it;
}

namespace {

/// "a, b or c".
std::string listing(const std::vector<std::string_view>& items) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i)
        text += fmt::format("{}{}", i == 0 ? "" : i + 1 == items.size() ? " or " : ", ", items[i]);
    return text;
}

}  // namespace

std::string renderer_names_text(std::optional<Renderer::Target> target) {
    std::vector<std::string_view> names;
    for (const auto& r : renderers())
        if (!target || r.target == *target) names.push_back(r.name);
    return listing(names);
}

std::string renderer_file_names_text() {
    std::string text;
    for (const auto& r : renderers())
        if (r.target == Renderer::Target::File) text += fmt::format("{}{}", text.empty() ? "" : ", ", r.name);
    return text;
}

std::string renderer_outputs_text() {
    std::vector<std::string_view> files;
    for (const auto& r : renderers())
        if (r.target == Renderer::Target::File) files.push_back(r.writes);
    return fmt::format("RUN/inspect/{}; RUN/inspect/ for {}", listing(files),
                       renderer_names_text(Renderer::Target::Directory));
}

std::string renderer_help_text() {
    std::string text = "formats (--format):";
    for (const auto& r : renderers()) text += fmt::format("\n  {:<6}{}", r.name, r.help);
    return text;
}

}  // namespace attograd::cli
