// The HTML report as a person sees it: rendered by headless Chromium, driven by a harness
// script (tests/report_harness.js) that clicks, hovers and moves the step slider, reads canvas
// pixels and computed styles, and reports script errors. Skips (saying so) without Chromium.
#include "headless_chromium.hpp"
#include "inspect/inspect.hpp"
#include "inspect_report_helpers.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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
void check_in_browser(const std::string& name, const std::string& html, const nlohmann::json& expect,
                      int window_width = 0) {
    const fs::path file =  // per process: the sanitizer build may run the same case at once
        fs::temp_directory_path() / ("attograd_report_" + name + "_" + std::to_string(::getpid()) + ".html");
    {
        std::ofstream out(file, std::ios::binary);
        out << with_harness(html, expect);
    }
    const headless::DumpedPage page = headless::dump_dom(file, 10000, window_width);
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

namespace {

// Tokens as the page shows them.
nlohmann::json displayed(const std::vector<std::string>& tokens) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : tokens) out.push_back(display_label(t));
    return out;
}

nlohmann::json rgb_json(double level) {
    const Rgb rgb = weight_colour(level);
    return {rgb.r, rgb.g, rgb.b};
}

// A derived map's range and its smallest and largest cells, for the colour-scale checks.
nlohmann::json range_json(const AttentionMap& map) {
    const auto [lo, hi] = std::minmax_element(map.weights.begin(), map.weights.end());
    const auto cell = [&](auto it) {
        const auto i = static_cast<std::int64_t>(it - map.weights.begin());
        return nlohmann::json{i / map.cols(), i % map.cols()};
    };
    return {{"title", map.title()},
            {"lo", *lo},
            {"hi", *hi},
            {"min_cell", cell(lo)},
            {"max_cell", cell(hi)},
            {"rgb_lo", rgb_json(0.0)},
            {"rgb_hi", rgb_json(1.0)}};
}

}  // namespace

TEST_CASE("the HTML report works in headless Chromium: grid, heatmap, tooltip, head view, slider, charts") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    // A single-head layer's map (head -1) in the second example: captioned as attention, not "head -1".
    AttentionMap single = report.examples[1].maps.front();
    single.module = "decoder.attention";
    single.layer = 2;
    single.head = -1;
    single.alignment_share.reset();
    report.examples[1].maps.push_back(single);
    // Shares just below 1 never read as 1 on the page ("0.99", not "1.00").
    report.examples[0].maps[2].alignment_share = 0.9996;
    report.snapshots.back().probes[0].maps[2].alignment_share = 0.9973;
    const auto& maps = report.examples[0].maps;
    const AttentionMap& first = maps[0];
    const AttentionMap& outlined = maps[2];  // the cross-attention's head 0, with a right alignment
    // The cross-attention's head mean, which the page opens on: its cell (0, 0).
    const double mean00 = (maps[2].at(0, 0) + maps[3].at(0, 0)) / 2.0;
    nlohmann::json probe = {{"source", 2},
                            {"steps", nlohmann::json::array()},
                            {"heads", 2},  // the cross-attention heads have shares
                            {"input", displayed(report.snapshots[0].probes[0].source)},
                            {"predictions", nlohmann::json::array()},
                            {"captions", nlohmann::json::array()},
                            {"shares", nlohmann::json::array()}};
    for (const auto& snapshot : report.snapshots) {
        const InspectedExample& p = snapshot.probes[0];
        const double share = *p.maps[2].alignment_share;
        probe["steps"].push_back(snapshot.step);
        probe["predictions"].push_back(displayed(p.prediction));
        probe["captions"].push_back("head 0 \u00b7 " + fraction_text(share, 2));
        probe["shares"].push_back(fraction_text(share, 3));
    }
    REQUIRE(probe["predictions"].front() != probe["predictions"].back());
    REQUIRE(probe["captions"].front() != probe["captions"].back());
    REQUIRE(probe["captions"].back() == "head 0 \u00b7 0.99");
    const nlohmann::json expect = {
        {"mode", "full"},
        {"thumbs", maps.size() + 2 + 2},  // + a head mean per layer, saliency and rollout
        {"open",
         {{"title", report.open_module + " mean of 2 heads"}, {"rgb", rgb_json(mean00)}, {"layers", 2}}},
        {"first",
         {{"title", first.title()},
          {"query", display_label(first.queries[0])},
          {"key", display_label(first.keys[0])},
          {"weight", first.at(0, 0)},
          {"keys", first.cols()},
          {"rgb", rgb_json(first.at(0, 0))}}},
        {"second_title", maps[1].title()},
        {"outlined_title", outlined.title()},
        {"outlined_caption", "head 0 \u00b7 " + fraction_text(*outlined.alignment_share, 2)},
        {"saliency_title", report.examples[0].saliency->title()},
        {"saliency", range_json(*report.examples[0].saliency)},
        {"rollout", range_json(*report.examples[0].rollout)},
        {"legend", report.alignment_legend},
        {"config_rows", report.config.size()},
        {"second_example",
         {{"tokens", report.examples[1].source.size()},
          {"thumbs", report.examples[1].maps.size() + 2},
          {"input", displayed(report.examples[1].source)},
          {"prediction", displayed(report.examples[1].prediction)},
          {"single_title", single.title()}}},
        {"probe", probe},
        {"charts", report.charts.size()}};
    check_in_browser("full", render_html(report), expect);
}

TEST_CASE("the HTML report opens on the given layer, else on the last layer, in headless Chromium") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    report.open_module = "encoder.layers.0.self_attn";
    check_in_browser("open_given", render_html(report),
                     {{"mode", "open"}, {"open_title", "encoder.layers.0.self_attn mean of 2 heads"}});
    report.open_module.clear();
    check_in_browser("open_last", render_html(report),
                     {{"mode", "open"}, {"open_title", "decoder.layers.0.cross_attn mean of 2 heads"}});
    report.open_module = "no.such.layer";
    check_in_browser("open_missing", render_html(report),
                     {{"mode", "open"}, {"open_title", "decoder.layers.0.cross_attn mean of 2 heads"}});
}

TEST_CASE("the HTML report explains its labels: head means only where a layer has them, special tokens") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    const auto one_head = [](std::vector<AttentionMap>& maps) {
        std::erase_if(maps, [](const AttentionMap& m) { return m.head > 0; });
        for (AttentionMap& m : maps) {
            m.keys.front() = "<unk>";
            m.queries.back() = "<eos>";
        }
    };
    for (auto& example : report.examples) one_head(example.maps);
    for (auto& snapshot : report.snapshots)
        for (auto& probe : snapshot.probes) one_head(probe.maps);
    const AttentionMap& cross = report.examples[0].maps.back();
    REQUIRE(cross.module == report.open_module);
    const std::string symbols = symbol_legend(cross);
    REQUIRE(symbols.find("<unk>") != std::string::npos);
    check_in_browser(
        "one_head", render_html(report),
        {{"mode", "open"}, {"open_title", cross.title()}, {"mean_hint", false}, {"symbols", symbols}});
    check_in_browser("two_heads", render_html(testing::synthetic_report()),
                     {{"mode", "open"},
                      {"open_title", "decoder.layers.0.cross_attn mean of 2 heads"},
                      {"mean_hint", true}});
}

TEST_CASE("the HTML report names its decoding, marks wrong predictions and says what a share divides by") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    report.decoding = "beam search (beam 4)";
    report.example_maps = "the model fed its own prediction (free-running, as it wrote it)";
    // Example 1 stops early: 3 of its 5 target tokens, then <eos>. Its cross-attention rows are
    // the prediction and <eos>; outlined are the 3 rows with a target token, and the share sums
    // them over the 5 target tokens (as the attograd program computes it).
    InspectedExample& short_example = report.examples[0];
    short_example.saliency.reset();
    short_example.rollout.reset();
    short_example.prediction.resize(3);
    std::vector<std::string> rows = short_example.prediction;
    rows.emplace_back("<eos>");
    const std::vector<std::int64_t> right = {4, 3, 2, 1, 0};
    for (AttentionMap& map : short_example.maps) {
        if (map.module != "decoder.layers.0.cross_attn") continue;
        map.queries = rows;
        map.weights = testing::peaked_weights(4, 5, 3.0, 1);
        map.alignment_share = alignment_share(crop_map(map, 3, 5), right);
        map.right.assign(right.begin(), right.begin() + 3);
    }
    const AttentionMap& head0 = short_example.maps[2];
    REQUIRE(head0.module == "decoder.layers.0.cross_attn");
    REQUIRE(*head0.alignment_share < *alignment_share(head0, head0.right));  // not the mean over outlines
    report.snapshots[0].probes[0].prediction.clear();                        // step 0 predicts nothing
    const auto joined = [](const std::vector<std::string>& tokens) {
        std::string out;
        for (const auto& t : tokens) {
            if (!out.empty()) out += ' ';
            out += display_label(t);
        }
        return out;
    };
    const auto label = [&](std::size_t e) {
        const InspectedExample& ex = report.examples[e];
        return fmt::format("example {}: {} \u2192 beam search (beam 4): {} \u2717 (expected {})", e + 1,
                           joined(ex.source), joined(ex.prediction), joined(ex.target));
    };
    check_in_browser(
        "honest", render_html(report),
        {{"mode", "honest"},
         {"labels", {label(0), label(1)}},
         {"decoding", report.decoding},
         {"short",
          {{"title", head0.title()},
           {"info", fmt::format("alignment share {:.3f} (the 3 outlined weights summed over the 5 target "
                                "tokens; the 2 target tokens the prediction did not reach count 0)",
                                *head0.alignment_share)},
           {"lengths", "the prediction has 3 tokens, the target 5"},
           {"outlined", 3}}},
         {"probe_source", 2}});
}

TEST_CASE("the HTML report of inputs without a right alignment says so once and draws no share chart") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    report.alignment_legend.clear();
    const auto unaligned = [](InspectedExample& example) {
        for (AttentionMap& map : example.maps) {
            map.right.clear();
            map.alignment_share.reset();
        }
        for (auto* derived : {&example.saliency, &example.rollout, &example.flow}) {
            if (!*derived) continue;
            (*derived)->right.clear();
            (*derived)->alignment_share.reset();
        }
    };
    for (auto& example : report.examples) unaligned(example);
    for (auto& snapshot : report.snapshots)
        for (auto& probe : snapshot.probes) unaligned(probe);
    const std::string html = render_html(report);
    CHECK(html.find("alignment share against step") == std::string::npos);
    check_in_browser("no_alignment", html, {{"mode", "no-alignment"}, {"why", "the task defines none"}});
    // A task that describes its alignment in words only (induction heads) is not said to have none.
    report.alignment_legend =
        "right alignment: an induction head: a token attends to the one after <its> match";
    const std::string described = render_html(report);
    check_in_browser("no_alignment_described", described,
                     {{"mode", "no-alignment"},
                      {"why",
                       "the task gives no right key for each input, only a description (right alignment: "
                       "an induction head: a token attends to the one after <its> match)"}});
    // With a share, the chart is drawn and the line is not there.
    const std::string aligned = render_html(testing::synthetic_report());
    CHECK(aligned.find("alignment share against step") != std::string::npos);
    CHECK(aligned.find("id=\"no-alignment\"") == std::string::npos);
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

TEST_CASE("the report's stylesheet and script files are embedded whole and lint clean in headless Chromium") {
    const fs::path assets = fs::path(ATTOGRAD_FIXTURE_DIR) / ".." / ".." / "inspect" / "report";
    const std::string css = headless::read_text(assets / "report.css");
    const std::string js = headless::read_text(assets / "report.js");
    REQUIRE(!css.empty());
    REQUIRE(!js.empty());
    // The page carries the files byte for byte (embedded at build time, not copied by hand).
    const std::string html = render_html(testing::synthetic_report());
    CHECK(html.find(css) != std::string::npos);
    CHECK(html.find(js) != std::string::npos);
    CHECK(js.find("</script") == std::string::npos);  // would end the page's <script> early
    SKIP_WITHOUT_CHROMIUM();
    // The script compiles (a SyntaxError throws from new Function); every rule of the stylesheet
    // survives Chromium's parser (a dropped rule is missing from cssRules), every selector parses
    // and every declaration is one Chromium supports (CSS.supports).
    const std::string lint = R"js(
(function () {
  const out = {errors: window.__lintErrors, blocks: 0, rules: document.styleSheets[0].cssRules.length,
               unsupported: []};
  try { new Function(document.getElementById('js').textContent); } catch (e) { out.errors.push(String(e)); }
  const text = document.getElementById('css').textContent.replace(/\/\*[\s\S]*?\*\//g, '');
  for (const block of text.split('}')) {
    const open = block.indexOf('{');
    if (open < 0) continue;
    ++out.blocks;
    const selector = block.slice(0, open).trim();
    try { document.querySelector(selector); } catch (e) { out.unsupported.push('selector ' + selector); }
    for (const declaration of block.slice(open + 1).split(';')) {
      const colon = declaration.indexOf(':');
      if (colon < 0) continue;
      const property = declaration.slice(0, colon).trim(), value = declaration.slice(colon + 1).trim();
      if (!CSS.supports(property, value)) out.unsupported.push(property + ': ' + value);
    }
  }
  document.getElementById('lint').textContent = JSON.stringify(out);
})();
)js";
    const std::string page =
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<script>window.__lintErrors = []; window.addEventListener('error', (e) => "
        "window.__lintErrors.push(String(e.message)));</script>\n<style id=\"css\">" +
        css + "</style>\n</head>\n<body>\n<pre id=\"lint\"></pre>\n<script id=\"js\" type=\"text/plain\">" +
        js + "</script>\n<script>" + lint + "</script>\n</body>\n</html>\n";
    const fs::path file =
        fs::temp_directory_path() / ("attograd_report_lint_" + std::to_string(::getpid()) + ".html");
    {
        std::ofstream out(file, std::ios::binary);
        out << page;
    }
    const headless::DumpedPage dumped = headless::dump_dom(file, 0);
    fs::remove(file);
    REQUIRE(dumped.status == 0);
    const std::string verdict_text = headless::element_text(dumped.dom, "pre", "lint");
    REQUIRE_MESSAGE(!verdict_text.empty(), "the lint script wrote no verdict");
    const auto verdict = nlohmann::json::parse(verdict_text);
    INFO("verdict: ", verdict.dump(1));
    CHECK(verdict["errors"].empty());
    CHECK(verdict["unsupported"].empty());
    CHECK(verdict["blocks"].get<int>() >= 30);
    CHECK(verdict["rules"] == verdict["blocks"]);
    CHECK(dumped.log.find("Uncaught") == std::string::npos);
}

namespace {

// A faithfulness section with one decisive head and one that is no explanation, and the evidence
// of the first: values chosen by hand (the measures are tested in test_inspect_faithfulness).
FaithfulnessSection synthetic_faithfulness() {
    FaithfulnessSection section;
    HeadFaithfulness decisive{.head = {"encoder.layers.0.self_attn", 0},
                              .accuracy = 0.95,
                              .knockout_accuracy = 0.58,
                              .tau_gradient = 0.7,
                              .tau_loo = 0.82,
                              .permutation_median = 0.2,
                              .adversarial_jsd = 0.05};
    HeadFaithfulness ignored{.head = {"encoder.layers.0.self_attn", 1},
                             .accuracy = 0.95,
                             .knockout_accuracy = 0.95,
                             .tau_loo = 0.1,
                             .permutation_median = 0.002};
    for (HeadFaithfulness* h : {&decisive, &ignored}) {
        h->verdict = faithfulness_verdict(*h, section.table.epsilon);
        section.table.heads.push_back(*h);
    }
    // as long as the program's verdicts get with a caveat: the table must still fit the page
    section.table.heads[1].verdict +=
        "; the layer attends uniformly (trained with --uniform-attention 0): its weights say nothing of "
        "the input";
    FaithfulnessEvidence e{.head = decisive.head,
                           .example = 2,
                           .keys = {"a", "<b>", "c", "d"},
                           .attention = {0.1, 0.6, 0.2, 0.1},
                           .gradient = {0.05, 0.3, 0.15, 0.0},
                           .leave_one_out = {0.01, 0.4, std::nan(""), 0.02}};
    for (int i = 0; i < 40; ++i) e.permutation_tvd.push_back(0.01 * (i % 17));
    for (int i = 0; i < 10; ++i) e.adversarial_jsd.push_back(0.003 * i);
    for (int i = 0; i < 5; ++i)
        e.erasure.push_back({.fraction_attention = 0.25,
                             .fraction_gradient = i < 3 ? std::optional<double>(0.5) : std::nullopt,
                             .fraction_product = 0.25,
                             .fraction_random = 0.75});
    section.evidence = e;
    return section;
}

nlohmann::json shown_values(const std::vector<double>& values) {
    nlohmann::json out = nlohmann::json::array();
    for (const double v : values) out.push_back(std::isfinite(v) ? fmt::format("{:.3f}", v) : "-");
    return out;
}

}  // namespace

TEST_CASE("the HTML report's faithfulness section shows the head table, its rules and one head's evidence") {
    SKIP_WITHOUT_CHROMIUM();
    Report report = testing::synthetic_report();
    report.faithfulness = synthetic_faithfulness();
    const FaithfulnessSection& s = *report.faithfulness;
    const FaithfulnessEvidence& e = *s.evidence;
    REQUIRE(s.table.heads[0].verdict.rfind("decisive: knocking it out costs 37 points", 0) == 0);
    REQUIRE(s.table.heads[1].verdict.rfind("not an explanation: permuted weights", 0) == 0);
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& h : s.table.heads)
        heads.push_back(
            {{"layer", h.head.layer}, {"head", std::to_string(h.head.head)}, {"verdict", h.verdict}});
    nlohmann::json bars = nlohmann::json::array();
    for (const double w : e.attention) bars.push_back(100.0 * w / 0.6);
    const nlohmann::json expect = {{"mode", "faithfulness"},
                                   {"heads", heads},
                                   {"rules", verdict_rules(s.table.epsilon)},
                                   {"head_title", "encoder.layers.0.self_attn head 0"},
                                   {"keys", e.keys},
                                   {"attention", shown_values(e.attention)},
                                   {"gradient", shown_values(e.gradient)},
                                   {"loo", shown_values(e.leave_one_out)},
                                   {"attention_bars", bars},
                                   {"chart_titles",
                                    {"permutation: output TVD (40 permuted weightings)",
                                     "adversarial: JSD of weights with the output within TVD 0.01",
                                     "erasure: decisions flipped against keys removed, top first"}}};
    // a 1400 px window: the head table's 19 columns and long verdicts wrap to fit it
    check_in_browser("faithfulness", render_html(report), expect, 1400);
}
