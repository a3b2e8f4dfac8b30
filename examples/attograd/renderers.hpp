// The formats of `attograd inspect --format`: one interface and one table of renderers.
#pragma once

#include "run_dir.hpp"

#include "inspect/attention_map.hpp"
#include "inspect/report.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::cli {

/// What inspect hands a renderer: the run, its inspected examples, the notes (a knockout's
/// accuracies) and, with --faithfulness, the faithfulness section (for the report).
struct Inspection {
    const LoadedRun& run;
    const std::vector<inspect::InspectedExample>& examples;
    const std::vector<std::string>& notes;
    const inspect::FaithfulnessSection* faithfulness = nullptr;
    std::string decoding{};      ///< how the predictions were decoded (decoding_description)
    std::string example_maps{};  ///< what the examples' maps were recorded with (example_maps_description)
};

/// One output of a renderer: a file name (for Directory; "" otherwise) and its contents.
struct RenderedFile {
    std::string name;
    std::string contents;
};

/// One --format of `attograd inspect`.
struct Renderer {
    /// Where a renderer's output goes.
    enum class Target {
        Terminal,   ///< printed on stdout; --to does not apply
        File,       ///< one file: --to FILE ('-' = stdout), by default RUN/inspect/NAME
        Directory,  ///< one file per map: --to DIR, by default RUN/inspect/
    };
    std::string_view name{};       ///< its --format value: "svg"
    std::string_view help{};       ///< what it draws, one line for `attograd inspect --help`
    Target target = Target::File;  ///< where its output goes
    std::string_view kind{};       ///< what its files are, for messages: "SVG"
    std::string_view writes{};     ///< a File renderer's default file name in RUN/inspect/: "report.html"
    /// The output: one entry for Terminal (the text) and File (the contents), one per file (named)
    /// for Directory.
    std::function<std::vector<RenderedFile>(const Inspection&)> render{};
};

/// Every renderer, in the order --help lists them: term, svg, html, csv, json. Adding a
/// format: a render function in its own file and one entry in the table (renderers.cpp).
const std::vector<Renderer>& renderers();
/// The renderer named `name`, or nullptr.
const Renderer* find_renderer(std::string_view name);
/// "term, svg, html, csv or json": the names of the renderers with `target` (all when
/// nullopt), for messages and --help.
std::string renderer_names_text(std::optional<Renderer::Target> target = std::nullopt);
/// "html, csv, json": the File renderers' names, for --to's help.
std::string renderer_file_names_text();
/// --to's default for --help: "RUN/inspect/report.html, attention.csv or attention.json;
/// RUN/inspect/ for svg".
std::string renderer_outputs_text();
/// Each renderer's name and help, one per line, for `attograd inspect --help`.
std::string renderer_help_text();

}  // namespace attograd::cli
