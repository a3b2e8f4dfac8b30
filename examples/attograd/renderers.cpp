// The formats of `attograd inspect --format` (renderers.hpp).
#include "renderers.hpp"

#include "inspect/export.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::cli {

// The renderers' functions, each in its own file renderer_NAME.cpp.
/// The terminal view: each example's prediction and heat maps, the notes first.
std::vector<RenderedFile> render_term(const Inspection& in);
/// One SVG file per map: exampleE_layerL_headH.svg, and exampleE_saliency/rollout/flow.svg.
std::vector<RenderedFile> render_svg_files(const Inspection& in);
/// The HTML report (inspect::render_html), with the training replay when the run's snapshots
/// can be read (a warning on stderr and a note in the report when they cannot).
std::vector<RenderedFile> render_report(const Inspection& in);

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
