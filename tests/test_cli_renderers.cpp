// The renderers of `attograd inspect --format`: the table, and the messages and --help texts
// that follow from it.
#include "cli_helpers.hpp"
#include "renderers.hpp"

#include <set>

using namespace cli_test;
using attograd::cli::Renderer;

TEST_CASE("the renderer table: names once each, a default file for each file format, a render") {
    const auto& table = attograd::cli::renderers();
    std::set<std::string_view> names;
    for (const Renderer& r : table) {
        INFO(r.name);
        CHECK(names.insert(r.name).second);
        CHECK_FALSE(r.help.empty());
        CHECK_FALSE(r.kind.empty());
        CHECK(static_cast<bool>(r.render));
        CHECK(r.writes.empty() == (r.target != Renderer::Target::File));
        CHECK(attograd::cli::find_renderer(r.name) == &r);
    }
    CHECK(attograd::cli::find_renderer("png") == nullptr);
    CHECK(attograd::cli::renderer_names_text() == "term, svg, html, csv or json");
    CHECK(attograd::cli::renderer_file_names_text() == "html, csv, json");
    CHECK(attograd::cli::renderer_outputs_text() ==
          "RUN/inspect/report.html, attention.csv or attention.json; RUN/inspect/ for svg");
}

TEST_CASE("inspect's --help and --format's refusal list the table's renderers") {
    const Outcome help = run({"inspect", "--help"});
    require_ok(help);
    CHECK(line_with(help.out, "--format").find("term, svg, html, csv or json") != std::string::npos);
    CHECK(
        line_with(help.out, "--to").find("output file (html, csv, json; '-' = stdout) or directory (svg)") !=
        std::string::npos);
    for (const Renderer& r : attograd::cli::renderers())
        CHECK(line_with(help.out, std::string(r.help)).find(std::string(r.name)) != std::string::npos);
    check_refused(run({"inspect", "--run", "nowhere", "--format", "png"}),
                  {"--format must be term, svg, html, csv or json, got 'png'"});
}
