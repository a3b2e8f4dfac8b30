// The renderers of `attograd inspect --format`: the table, and the messages and --help texts
// that follow from it.
#include "cli_helpers.hpp"

#include <set>

using namespace cli_test;

namespace {

/// The --format values the program names when it refuses one: "term, svg, html, csv or json".
std::vector<std::string> format_names() {
    const Outcome refused = run({"inspect", "--run", "nowhere", "--format", "png"});
    const std::string head = "--format must be ", tail = ", got 'png'";
    const auto begin = refused.err.find(head), end = refused.err.find(tail);
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    std::string list = refused.err.substr(begin + head.size(), end - begin - head.size());
    const auto last = list.rfind(" or ");
    REQUIRE(last != std::string::npos);
    list.replace(last, 4, ", ");
    std::vector<std::string> names;
    for (std::size_t from = 0, comma; from <= list.size(); from = comma + 2) {
        comma = std::min(list.find(", ", from), list.size());
        names.push_back(list.substr(from, comma - from));
    }
    return names;
}

}  // namespace

TEST_CASE(
    "every --format renders once each: term on stdout, a file format to its default file, svg a file per "
    "map") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    require_ok(run(train_args(dir, "2")));
    const std::vector<std::string> names = format_names();
    CHECK(names == std::vector<std::string>{"term", "svg", "html", "csv", "json"});
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
    const fs::path written = fs::path(dir) / "inspect";
    for (const auto& name : names) {
        INFO(name);
        const Outcome o = run({"inspect", "--run", dir, "--samples", "1", "--format", name});
        require_ok(o);
        if (name == "term") {
            CHECK_FALSE(o.out.empty());
            CHECK_FALSE(fs::exists(written));
        } else if (name == "svg") {
            std::size_t maps = 0;
            for (const auto& file : entries(written)) maps += file.ends_with(".svg");
            CHECK(maps > 0);
        } else {
            const fs::path file = written / (name == "html" ? "report.html" : "attention." + name);
            CHECK_MESSAGE(fs::file_size(file) > 0, file.string());
            const Outcome to_stdout =
                run({"inspect", "--run", dir, "--samples", "1", "--format", name, "--to", "-"});
            require_ok(to_stdout);
            CHECK(to_stdout.out == read_text(file));
        }
    }
}

TEST_CASE("inspect's --help and --format's refusal list the table's renderers") {
    const Outcome help = run({"inspect", "--help"});
    require_ok(help);
    CHECK(line_with(help.out, "--format").find("term, svg, html, csv or json") != std::string::npos);
    CHECK(
        line_with(help.out, "--to").find("output file (html, csv, json; '-' = stdout) or directory (svg)") !=
        std::string::npos);
    // --to's default: each file format's default file, and the directory of svg's files
    CHECK(help.out.find("RUN/inspect/report.html, attention.csv or attention.json; RUN/inspect/ for svg") !=
          std::string::npos);
    for (const auto& name : format_names()) {  // each format's own line of help: its name, then what it draws
        INFO(help.out);
        const std::string line = line_with(help.out, "  " + name + " ");
        REQUIRE(line.starts_with("  " + name + " "));
        CHECK(line.find_first_not_of(' ', name.size() + 2) != std::string::npos);
    }
    check_refused(run({"inspect", "--run", "nowhere", "--format", "png"}),
                  {"--format must be term, svg, html, csv or json, got 'png'"});
}
