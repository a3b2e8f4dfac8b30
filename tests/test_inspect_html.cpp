// The HTML report's content: charts on one shared y axis, embedded data that decodes to the
// weights, escaping, self-containment, and bad input refused (the rendered page is tested in
// headless Chromium by test_inspect_html_browser).
#include "core/error.hpp"
#include "inspect/inspect.hpp"
#include "inspect_report_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

using namespace attograd;
using namespace attograd::inspect;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
    return n;
}

// The numbers of attribute `name` in every element that has it, in document order.
std::vector<double> attribute_values(const std::string& svg, const std::string& element,
                                     const std::string& name) {
    std::vector<double> out;
    const std::regex tag("<" + element + "[^>]*?\\b" + name + "=\"([-0-9.e]+)\"");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tag); it != std::sregex_iterator(); ++it)
        out.push_back(std::stod((*it)[1].str()));
    return out;
}

// (x, y) pixel pairs of every polyline, one vector per polyline.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
    std::vector<std::vector<std::pair<double, double>>> out;
    const std::regex line("<polyline[^>]*points=\"([^\"]*)\"");
    const std::regex point("([-0-9.]+),([-0-9.]+)");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
        const std::string points = (*it)[1].str();
        out.emplace_back();
        for (auto p = std::sregex_iterator(points.begin(), points.end(), point); p != std::sregex_iterator();
             ++p)
            out.back().emplace_back(std::stod((*p)[1].str()), std::stod((*p)[2].str()));
    }
    return out;
}

std::vector<std::string> texts_of_class(const std::string& svg, const std::string& cls) {
    std::vector<std::string> out;
    const std::regex text("<text class=\"" + cls + "\"[^>]*>([^<]*)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1].str());
    return out;
}

// An independent RFC 4648 decoder for checking the embedded weights.
std::vector<std::uint8_t> base64_decode(const std::string& text) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<std::uint8_t> out;
    std::uint32_t bits = 0;
    int have = 0;
    for (const char c : text) {
        if (c == '=') break;
        bits = (bits << 6) | static_cast<std::uint32_t>(alphabet.find(c));
        have += 6;
        if (have >= 8) {
            have -= 8;
            out.push_back(static_cast<std::uint8_t>((bits >> have) & 0xFF));
        }
    }
    return out;
}

std::vector<double> decode(const nlohmann::json& map) {
    const auto bytes = base64_decode(map.at("data").get<std::string>());
    const int bits = map.at("bits").get<int>();
    const double lo = map.at("lo").get<double>(), hi = map.at("hi").get<double>();
    const double levels = bits == 8 ? 255.0 : 65535.0;
    std::vector<double> out;
    for (std::size_t i = 0; i < bytes.size(); i += static_cast<std::size_t>(bits / 8)) {
        const unsigned code = bits == 8 ? bytes[i] : bytes[i] | (static_cast<unsigned>(bytes[i + 1]) << 8);
        out.push_back(lo + code * (hi - lo) / levels);
    }
    return out;
}

nlohmann::json embedded_data(const std::string& html) {
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const auto begin = html.find(open);
    REQUIRE(begin != std::string::npos);
    const auto end = html.find("</script>", begin);
    return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

Chart two_series_chart() {
    return Chart{.title = "accuracy",
                 .x_label = "step",
                 .y_label = "accuracy",
                 .series = {{.name = "wide", .colour = "#111111", .x = {0, 10, 20}, .y = {0.0, 0.5, 1.0}},
                            {.name = "narrow", .colour = "#222222", .x = {0, 10, 20}, .y = {0.5, 0.5, 0.5}}},
                 .y_min = {},
                 .y_max = {}};
}

}  // namespace

TEST_CASE("nice_ticks cover the range in steps of 1, 2 or 5 times a power of ten") {
    for (const auto& [lo, hi] : {std::pair{0.0, 1.0}, std::pair{0.13, 0.97}, std::pair{-3.0, 1234.0},
                                 std::pair{100.0, 101.0}, std::pair{1e-5, 3e-5}}) {
        const auto ticks = nice_ticks(lo, hi, 5);
        INFO(lo, " ", hi);
        REQUIRE(ticks.size() >= 2);
        CHECK(ticks.front() <= lo);
        CHECK(ticks.back() >= hi);
        CHECK(ticks.size() <= 12);
        const double step = ticks[1] - ticks[0];
        const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        CHECK((std::abs(mantissa - 1.0) < 1e-6 || std::abs(mantissa - 2.0) < 1e-6 ||
               std::abs(mantissa - 5.0) < 1e-6));
    }
    CHECK(nice_ticks(3.0, 3.0) == std::vector<double>{3.0});
    CHECK_THROWS_WITH_AS(nice_ticks(1.0, 0.0), doctest::Contains("nice_ticks"), ValueError);
    CHECK_THROWS_WITH_AS(nice_ticks(0.0, std::nan("")), doctest::Contains("nice_ticks"), ValueError);
    CHECK_THROWS_WITH_AS(nice_ticks(0.0, 1.0, 0), doctest::Contains("count in [1, 1000]"), ValueError);
}

TEST_CASE("chart_svg draws every series on one shared y axis with tick labels") {
    const std::string svg = chart_svg(two_series_chart());
    const auto lines = polylines(svg);
    REQUIRE(lines.size() == 2);
    // The flat series at 0.5 lies half-way between the wide series' 0 and 1 pixels.
    const double y0 = lines[0][0].second, y1 = lines[0][2].second, y_half = lines[1][1].second;
    CHECK(y0 > y1);  // SVG y grows downwards
    CHECK(y_half == doctest::Approx((y0 + y1) / 2).epsilon(0.01));
    CHECK(lines[0][1].second == doctest::Approx(y_half).epsilon(0.01));
    const auto ticks = texts_of_class(svg, "y-tick");
    CHECK(ticks.size() >= 3);
    CHECK(std::find(ticks.begin(), ticks.end(), "0") != ticks.end());
    CHECK(std::find(ticks.begin(), ticks.end(), "1") != ticks.end());
    CHECK(svg.find("nan") == std::string::npos);
}

TEST_CASE("chart_svg puts the legend right of the plot, one label per line") {
    const std::string svg = chart_svg(two_series_chart());
    const double plot_right = attribute_values(svg, "svg", "data-plot-right").at(0);
    const auto label_x = attribute_values(svg, "text class=\"legend\"", "x");
    const auto label_y = attribute_values(svg, "text class=\"legend\"", "y");
    REQUIRE(label_x.size() == 2);
    for (const double x : label_x) CHECK(x > plot_right);
    CHECK(std::abs(label_y[1] - label_y[0]) >= 14);  // a line apart: the labels cannot overlap
    for (const auto& line : polylines(svg))
        for (const auto& [x, y] : line) CHECK(x <= plot_right + 0.5);
    CHECK(count(svg, ">wide</text>") == 1);
    CHECK(count(svg, ">narrow</text>") == 1);
}

TEST_CASE("chart_svg draws a single point as a dot at its x, labelled with that x only") {
    const Chart chart{.title = "one evaluation",
                      .x_label = "step",
                      .y_label = "accuracy",
                      .series = {{.name = "token accuracy", .colour = "", .x = {100}, .y = {0.5}}},
                      .y_min = {},
                      .y_max = {}};
    const std::string svg = chart_svg(chart);
    const auto cx = attribute_values(svg, "circle", "cx");
    REQUIRE(cx.size() == 1);
    const double left = attribute_values(svg, "svg", "data-plot-left").at(0);
    const double right = attribute_values(svg, "svg", "data-plot-right").at(0);
    CHECK(cx[0] == doctest::Approx((left + right) / 2));
    const auto x_ticks = texts_of_class(svg, "x-tick");
    CHECK(x_ticks == std::vector<std::string>{"100"});
    CHECK(texts_of_class(svg, "y-tick").size() >= 2);
}

TEST_CASE("chart_svg leaves gaps at non-finite values and says no data when nothing is finite") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Chart chart{
        .title = "loss",
        .x_label = "step",
        .y_label = "loss",
        .series = {{.name = "loss", .colour = "", .x = {1, 2, 3, 4, 5}, .y = {1.0, 0.8, nan, 0.5, nan}}},
        .y_min = {},
        .y_max = {}};
    std::string svg = chart_svg(chart);
    CHECK(polylines(svg).size() == 1);                         // points 1-2
    CHECK(attribute_values(svg, "circle", "cx").size() == 1);  // the lone point 4
    CHECK(svg.find("nan") == std::string::npos);
    chart.series[0].y = {nan, nan, nan, nan, nan};
    svg = chart_svg(chart);
    CHECK(svg.find("no data") != std::string::npos);
    CHECK(svg.find("nan") == std::string::npos);
    CHECK(polylines(svg).empty());
}

TEST_CASE("chart_svg refuses mismatched series and bad y ranges") {
    Chart chart = two_series_chart();
    chart.series[1].y.pop_back();
    CHECK_THROWS_WITH_AS(chart_svg(chart), doctest::Contains("'narrow' has 3 x and 2 y"), ShapeError);
    chart = two_series_chart();
    chart.y_min = 1.0;
    chart.y_max = 0.0;
    CHECK_THROWS_WITH_AS(chart_svg(chart), doctest::Contains("chart 'accuracy'"), ValueError);
}

TEST_CASE("alignment_share_chart has one series per head against step") {
    const Report report = testing::synthetic_report();
    const Chart chart = alignment_share_chart(report.snapshots, 0);
    REQUIRE(chart.series.size() == 2);  // the self-attention heads have no right alignment
    CHECK(chart.series[0].name == "decoder.layers.0.cross_attn head 0");
    CHECK(chart.series[1].name == "decoder.layers.0.cross_attn head 1");
    for (std::size_t s = 0; s < report.snapshots.size(); ++s) {
        CHECK(chart.series[0].x[s] == static_cast<double>(report.snapshots[s].step));
        CHECK(chart.series[0].y[s] == *report.snapshots[s].probes[0].maps[2].alignment_share);
        CHECK(chart.series[1].y[s] == *report.snapshots[s].probes[0].maps[3].alignment_share);
    }
    CHECK(chart.series[1].y[0] < chart.series[1].y[2]);  // the synthetic heads sharpen with the step
    Report gappy = report;                               // a share missing at one step is a gap, not a zero
    gappy.snapshots[1].probes[0].maps[2].alignment_share.reset();
    const Chart with_gap = alignment_share_chart(gappy.snapshots, 0);
    CHECK(std::isnan(with_gap.series[0].y[1]));
    CHECK(with_gap.series[0].y[2] == chart.series[0].y[2]);
    CHECK(chart.y_min == 0.0);
    CHECK(chart.y_max == 1.0);
    CHECK_THROWS_WITH_AS(alignment_share_chart(report.snapshots, 1), doctest::Contains("probe 1"),
                         IndexError);
}

TEST_CASE("render_html is self-contained: inline style, script and data, no external resource") {
    const std::string html = render_html(testing::synthetic_report());
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(count(html, "<style>") == 1);
    CHECK(count(html, "<script>") == 1);
    CHECK(count(html, "id=\"report-data\"") == 1);
    CHECK(html.find("src=") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find("fetch(") == std::string::npos);
    // The only "http://" are SVG namespace names, which are never fetched.
    CHECK(count(html, "http://") == count(html, "http://www.w3.org/2000/svg"));
    CHECK(html.find("synthetic report &lt;reverse&gt;") != std::string::npos);
    CHECK(html.find("anti-diagonal (target t attends source n-1-t)") != std::string::npos);
    CHECK(count(html, "<svg class=\"chart\"") == 3 + 1);  // three curves, one alignment chart
}

TEST_CASE("render_html embeds every map so that it decodes to its weights") {
    const Report report = testing::synthetic_report();
    const nlohmann::json data = embedded_data(render_html(report));
    REQUIRE(data["sources"].size() == 3);  // two examples, one probe
    CHECK(data["legend"] == report.alignment_legend);
    const auto& maps = data["sources"][0]["frames"][0]["maps"];
    REQUIRE(maps.size() == 2 + 4 + 2);               // per layer a head mean and 2 heads, saliency, rollout
    nlohmann::json first = nlohmann::json::array();  // the heads
    for (const auto& map : maps)
        if (map["kind"] == "head") first.push_back(map);
    REQUIRE(first.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        const AttentionMap& map = report.examples[0].maps[i];
        CHECK(first[i]["title"] == map.title());
        CHECK(first[i]["bits"] == 16);
        const auto decoded = decode(first[i]);
        REQUIRE(decoded.size() == map.weights.size());
        const double bound = first[i]["max_error"].get<double>();
        CHECK(bound < 1e-5);
        for (std::size_t k = 0; k < decoded.size(); ++k)
            CHECK(std::abs(decoded[k] - map.weights[k]) <= bound + 1e-12);
    }
    CHECK(maps[6]["title"] == "saliency (gradient x input)");  // a derived map has no "head"
    CHECK(maps[6]["kind"] == "saliency");
    CHECK(maps[7]["kind"] == "rollout");
    CHECK(first[2]["right"] == report.examples[0].maps[2].right);
    CHECK(first[2]["alignment_share"].get<double>() == *report.examples[0].maps[2].alignment_share);
    const auto& probe = data["sources"][2];
    CHECK(probe["kind"] == "probe");
    REQUIRE(probe["frames"].size() == 3);
    CHECK(probe["frames"][1]["step"] == 50);
}

TEST_CASE("every frame carries its own input's tokens: a probe's prediction at each step") {
    const Report report = testing::synthetic_report();
    const nlohmann::json data = embedded_data(render_html(report));
    for (std::size_t e = 0; e < report.examples.size(); ++e) {
        const auto& frame = data["sources"][e]["frames"][0];
        CHECK(frame["source"] == report.examples[e].source);
        CHECK(frame["target"] == report.examples[e].target);
        CHECK(frame["prediction"] == report.examples[e].prediction);
    }
    const auto& frames = data["sources"][2]["frames"];
    REQUIRE(frames.size() == report.snapshots.size());
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const InspectedExample& probe = report.snapshots[k].probes[0];
        CHECK(frames[k]["step"] == report.snapshots[k].step);
        CHECK(frames[k]["source"] == probe.source);
        CHECK(frames[k]["prediction"] == probe.prediction);
        for (const auto& map : frames[k]["maps"]) {  // each head's share is this step's
            if (map["kind"] != "head" || !map.contains("alignment_share")) continue;
            const auto it = std::find_if(probe.maps.begin(), probe.maps.end(),
                                         [&](const AttentionMap& m) { return m.title() == map["title"]; });
            REQUIRE(it != probe.maps.end());
            CHECK(map["alignment_share"].get<double>() == *it->alignment_share);
        }
    }
    CHECK(frames.front()["prediction"] != frames.back()["prediction"]);
}

TEST_CASE("a report refuses snapshots whose probe changes input between steps") {
    Report report = testing::synthetic_report();
    report.snapshots[2].probes[0].source[1] = "x";
    CHECK_THROWS_WITH_AS(
        render_html(report),
        doctest::Contains("probe 1 has source 'a b c d' at step 0 but 'a x c d' at step 100"), ValueError);
    report = testing::synthetic_report();
    report.snapshots[1].probes[0].target.pop_back();
    CHECK_THROWS_WITH_AS(check_probe_inputs(report.snapshots), doctest::Contains("probe 1 has target"),
                         ValueError);
}

TEST_CASE("each layer of several heads gets its heads' mean, with the mean alignment share") {
    const Report report = testing::synthetic_report();
    const nlohmann::json data = embedded_data(render_html(report));
    CHECK(data["open"] == report.open_module);
    const auto& maps = data["sources"][0]["frames"][0]["maps"];
    const auto& heads = report.examples[0].maps;
    for (const auto& [at, first] : {std::pair{0, 0}, std::pair{3, 2}}) {  // a mean, then its 2 heads
        const auto& mean = maps[at];
        INFO(mean["title"]);
        CHECK(mean["kind"] == "mean");
        CHECK(mean["title"] == heads[first].module + " mean of 2 heads");
        CHECK(mean["layer"] == heads[first].layer);
        CHECK(maps[at + 1]["title"] == heads[first].title());
        CHECK(maps[at + 2]["title"] == heads[first + 1].title());
        const auto decoded = decode(mean);
        REQUIRE(decoded.size() == heads[first].weights.size());
        for (std::size_t k = 0; k < decoded.size(); ++k) {
            const double want = (heads[first].weights[k] + heads[first + 1].weights[k]) / 2.0;
            CHECK(std::abs(decoded[k] - want) <= mean["max_error"].get<double>() + 1e-12);
        }
    }
    CHECK_FALSE(maps[0].contains("alignment_share"));  // the self-attention has no right alignment
    CHECK(maps[3]["right"] == heads[2].right);
    const double want = (*heads[2].alignment_share + *heads[3].alignment_share) / 2.0;
    CHECK(maps[3]["alignment_share"].get<double>() == doctest::Approx(want).epsilon(1e-12));
    CHECK(maps[3]["alignment_share"].get<double>() != *heads[2].alignment_share);

    // One head: nothing to average.
    Report single;
    single.examples = {report.examples[1]};
    single.examples[0].maps.resize(1);
    const nlohmann::json one = embedded_data(render_html(single));
    REQUIRE(one["sources"][0]["frames"][0]["maps"].size() == 1);
    CHECK(one["sources"][0]["frames"][0]["maps"][0]["kind"] == "head");
}

TEST_CASE("the page shows the attention first, then the curves, then the collapsed configuration") {
    const std::string html = render_html(testing::synthetic_report());
    CHECK(count(html, "<details id=\"config\">") == 1);  // no "open" attribute: collapsed
    CHECK(html.find("<summary><h2>Configuration</h2> (2 settings)</summary>") != std::string::npos);
    CHECK(html.find("id=\"attention\"") < html.find("id=\"curves\""));  // the answer first
    CHECK(html.find("id=\"curves\"") < html.find("id=\"config\""));
}

TEST_CASE("large maps are stored as 8-bit codes within 0.002 of the weights") {
    Report report;
    InspectedExample example;
    example.source = testing::letters(130, '0');
    AttentionMap map{.module = "layers.0.self_attn",
                     .layer = 0,
                     .head = 3,
                     .queries = example.source,
                     .keys = example.source,
                     .weights = testing::peaked_weights(130, 130, 3.0, 0),
                     .right = {},
                     .alignment_share = {},
                     .saliency_correlation = {}};
    example.maps = {map};
    report.examples = {example};
    const nlohmann::json data = embedded_data(render_html(report));
    const auto& stored = data["sources"][0]["frames"][0]["maps"][0];
    CHECK(stored["bits"] == 8);
    CHECK(stored["max_error"].get<double>() <= 0.002);
    const auto decoded = decode(stored);
    REQUIRE(decoded.size() == map.weights.size());
    double worst = 0.0;
    for (std::size_t k = 0; k < decoded.size(); ++k)
        worst = std::max(worst, std::abs(decoded[k] - map.weights[k]));
    CHECK(worst <= stored["max_error"].get<double>() + 1e-12);
    CHECK(worst > 1e-5);  // really 8 bits
}

TEST_CASE("render_html escapes tokens so the embedded data cannot close its script element") {
    Report report = testing::synthetic_report();
    report.examples[0].source[0] = "</script><b>";
    report.examples[0].maps[0].queries[0] = "</script><b>";
    const std::string html = render_html(report);
    CHECK(count(html, "</script>") == 2);  // the data's and the code's own
    const nlohmann::json data = embedded_data(html);
    CHECK(data["sources"][0]["frames"][0]["source"][0] == "</script><b>");
    CHECK(data["sources"][0]["frames"][0]["maps"][0]["queries"][0] == "</script><b>");
}

TEST_CASE("render_html shows charts_error instead of the curves") {
    Report report = testing::synthetic_report();
    report.charts_error = "metrics.csv: line 3 has 2 fields, 4 expected <bad>";
    const std::string html = render_html(report);
    CHECK(html.find("id=\"charts-error\"") != std::string::npos);
    CHECK(html.find("line 3 has 2 fields, 4 expected &lt;bad&gt;") != std::string::npos);
    CHECK(count(html, "<svg class=\"chart\"") == 1);  // only the alignment chart of the snapshots
    const std::string page = html.substr(0, html.find("<script"));  // what is not data or code
    CHECK(page.find("nan") == std::string::npos);
}

TEST_CASE("render_html of a report without examples says so") {
    Report report;
    report.title = "empty";
    const std::string html = render_html(report);
    CHECK(html.find("id=\"no-examples\"") != std::string::npos);
    CHECK(html.find("This report has no examples") != std::string::npos);
    CHECK(html.find("report-data") == std::string::npos);
    CHECK(html.find("no training curves") != std::string::npos);
}

TEST_CASE("render_html refuses maps with the wrong shape, non-finite weights or bad right columns") {
    Report report = testing::synthetic_report();
    report.examples[1].maps[1].weights.pop_back();
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("'encoder.layers.0.self_attn head 1'"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("[6, 6]"), ShapeError);

    report = testing::synthetic_report();
    report.examples[0].saliency->weights[3] = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("'saliency (gradient x input)'"), ValueError);

    report = testing::synthetic_report();
    report.snapshots[2].probes[0].maps[3].weights[0] = std::nan("");
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("'decoder.layers.0.cross_attn head 1'"),
                         ValueError);

    report = testing::synthetic_report();
    report.examples[0].maps[2].right[1] = 5;  // 5 keys: columns 0..4
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("right key 5 at row 1"), IndexError);

    report = testing::synthetic_report();
    report.charts[1].series[0].x.push_back(110);
    CHECK_THROWS_WITH_AS(render_html(report), doctest::Contains("chart 'held-out accuracy'"), ShapeError);
}

TEST_CASE("text from the run reaches the page with control and bidirectional characters escaped") {
    Report report = testing::synthetic_report();
    report.title = "run \u202e1gnp.exe";
    report.config.emplace_back("task.data", "/tmp/e\x1b[31msc.tsv");
    report.notes.push_back("note \x07 with a bell");
    const std::string html = render_html(report);
    for (const std::string raw : {"\x1b", "\u202e", "\x07"}) CHECK(html.find(raw) == std::string::npos);
    CHECK(html.find("/tmp/e\\x1b[31msc.tsv") != std::string::npos);
    CHECK(html.find("run \\u202e1gnp.exe") != std::string::npos);
    CHECK(html.find("note \\x07 with a bell") != std::string::npos);
}
