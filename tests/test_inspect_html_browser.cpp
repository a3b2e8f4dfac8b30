// The HTML report as a person sees it: rendered by headless Chromium, driven by a harness
// script (tests/report_harness.js) that clicks, hovers and moves the step slider, reads canvas
// pixels and computed styles, and reports script errors. Skips (saying so) without Chromium.
#include "headless_chromium.hpp"
#include "inspect/inspect.hpp"
#include "inspect_report_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace attograd::inspect;
namespace fs = std::filesystem;

namespace {

// Records every uncaught error and rejected promise from the page's first script on.
constexpr const char* error_recorder =
    "<script>window.__harnessErrors = [];"
    "window.addEventListener('error', (e) => window.__harnessErrors.push(String(e.message) + ' (line ' + "
    "e.lineno + ')'));"
    "window.addEventListener('unhandledrejection', (e) => window.__harnessErrors.push('rejection: ' + "
    "e.reason));"
    "</script>";

// The page with the recorder and expectations first in <head> and the harness before </body>.
std::string with_harness(const std::string& html, const nlohmann::json& expect) {
    const std::string harness =
        headless::read_text(fs::path(ATTOGRAD_FIXTURE_DIR) / ".." / "report_harness.js");
    REQUIRE(!harness.empty());
    std::string page = html;
    const auto head = page.find("<head>");
    REQUIRE(head != std::string::npos);
    page.insert(head + 6,
                std::string(error_recorder) + "<script>window.__expect = " + expect.dump() + ";</script>");
    const auto body_end = page.rfind("</body>");
    REQUIRE(body_end != std::string::npos);
    page.insert(body_end, "<script>" + harness + "</script>\n");
    return page;
}

// Renders the page in Chromium and checks the harness verdict: every check passed, no script
// error in the page or in Chromium's log.
void check_in_browser(const std::string& name, const std::string& html, const nlohmann::json& expect) {
    const fs::path file =  // per process: the sanitizer build may run the same case at once
        fs::temp_directory_path() / ("attograd_report_" + name + "_" + std::to_string(::getpid()) + ".html");
    {
        std::ofstream out(file, std::ios::binary);
        out << with_harness(html, expect);
    }
    const headless::DumpedPage page = headless::dump_dom(file, 10000);
    fs::remove(file);
    std::string console;  // the page's console lines (Chromium's own noise left out)
    std::istringstream log(page.log);
    for (std::string line; std::getline(log, line);)
        if (line.find("CONSOLE") != std::string::npos) console += line + "\n";
    INFO("console:\n", console);
    REQUIRE(page.status == 0);
    const std::string verdict_text = headless::element_text(page.dom, "pre", "harness-verdict");
    REQUIRE_MESSAGE(!verdict_text.empty(),
                    "the harness wrote no verdict (the page or the harness did not run)");
    const auto verdict = nlohmann::json::parse(verdict_text);
    INFO("verdict: ", verdict.dump(1));
    CHECK(verdict["failures"].empty());
    CHECK(verdict["errors"].empty());
    CHECK(verdict["checks"].size() >= 2);
    for (const auto& [check, ok] : verdict["checks"].items()) CHECK_MESSAGE(ok.get<bool>(), check);
    CHECK(console.find("Uncaught") == std::string::npos);
}

#define SKIP_WITHOUT_CHROMIUM()                                    \
    if (!headless::chromium_available()) {                         \
        MESSAGE("SKIPPED: ", headless::chromium_path,              \
                " is not installed, the HTML report was not "      \
                "tested in a browser (apt-get install chromium)"); \
        return;                                                    \
    }

}  // namespace

TEST_CASE("the HTML report works in headless Chromium: grid, heatmap, tooltip, head view, slider, charts") {
    SKIP_WITHOUT_CHROMIUM();
    const Report report = testing::synthetic_report();
    const AttentionMap& first = report.examples[0].maps[0];
    const Rgb rgb = weight_colour(first.at(0, 0));
    const nlohmann::json expect = {
        {"mode", "full"},
        {"thumbs", report.examples[0].maps.size() + 2},  // + saliency and rollout
        {"first",
         {{"title", first.title()},
          {"query", display_label(first.queries[0])},
          {"key", display_label(first.keys[0])},
          {"weight", first.at(0, 0)},
          {"keys", first.cols()},
          {"rgb", {rgb.r, rgb.g, rgb.b}}}},
        {"second_title", report.examples[0].maps[1].title()},
        {"outlined_title", report.examples[0].maps[2].title()},
        {"saliency_title", report.examples[0].saliency->title()},
        {"legend", report.alignment_legend},
        {"second_example",
         {{"tokens", report.examples[1].source.size()}, {"thumbs", report.examples[1].maps.size()}}},
        {"probe",
         {{"source", 2}, {"steps", {0, 50, 100}}, {"heads", 2}}},  // the cross-attention heads have shares
        {"charts", report.charts.size()}};
    check_in_browser("full", render_html(report), expect);
}

TEST_CASE("the HTML report of a report without examples opens and says so in headless Chromium") {
    SKIP_WITHOUT_CHROMIUM();
    check_in_browser("empty", render_html(Report{}), {{"mode", "empty"}});
}

TEST_CASE("the HTML report shows charts_error in place of the curves in headless Chromium") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    report.snapshots.clear();
    report.charts_error = "metrics.csv: line 3 is not a number";
    check_in_browser("charts_error", render_html(report),
                     {{"mode", "charts-error"}, {"charts_error", *report.charts_error}});
}

TEST_CASE("the HTML report draws odd inputs without a script error in headless Chromium") {
    SKIP_WITHOUT_CHROMIUM();
    Report report;
    InspectedExample odd = testing::synthetic_example(3, true);
    odd.source[0] = "<b>x</b>";
    odd.maps[0].queries[0] = "\"q\" & <i>";
    odd.maps[1].queries.clear();  // a map of no rows
    odd.maps[1].weights.clear();
    for (double& w : odd.saliency->weights) w = 5.0 * w - 2.0;  // gradient x input is signed
    report.examples = {odd, InspectedExample{}};
    report.examples[1].source = {"no", "maps"};
    check_in_browser("odd", render_html(report),
                     {{"mode", "odd"},
                      {"sources", 2},
                      {"first_token", "<b>x</b>"},
                      {"saliency_title", odd.saliency->title()}});
}
