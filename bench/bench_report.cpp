// The HTML report of a long input: one example of T = 512 with 2 layers x 8 heads. Prints the
// time to build the page, its size, and Chromium's time to first render (the page's own
// performance.now() when the grid and the first heatmap are drawn, and when the head view is)
// over several headless runs. Usage: bench_report [--runs N] [--keep FILE]
#include "../tests/headless_chromium.hpp"
#include "inspect/inspect.hpp"
#include "timing.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

using namespace attograd::inspect;

namespace {

constexpr std::int64_t T = 512, layers = 2, heads = 8;

// Softmax rows of scores a trained encoder's heads show: a diagonal band, the previous token,
// the first token (an attention sink), broad attention, plus Gaussian noise.
std::vector<double> head_weights(std::int64_t kind, std::mt19937& gen) {
    std::normal_distribution<double> noise(0.0, 0.7);
    std::vector<double> w(static_cast<std::size_t>(T * T));
    for (std::int64_t i = 0; i < T; ++i) {
        double max = -1e300;
        for (std::int64_t j = 0; j < T; ++j) {
            double score = noise(gen);
            switch (kind % 4) {
                case 0:
                    score += 4.0 * std::exp(-0.5 * static_cast<double>((i - j) * (i - j)) / 4.0);
                    break;
                case 1:
                    score += j == i - 1 ? 7.0 : 0.0;
                    break;
                case 2:
                    score += j == 0 ? 6.0 : 0.0;
                    break;
                default:
                    score += j == (i * 7 + kind) % T ? 5.0 : 0.0;
                    break;
            }
            w[i * T + j] = score;
            max = std::max(max, score);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j < T; ++j) sum += w[i * T + j] = std::exp(w[i * T + j] - max);
        for (std::int64_t j = 0; j < T; ++j) w[i * T + j] /= sum;
    }
    return w;
}

Report long_report() {
    std::mt19937 gen(0);
    Report report;
    report.title = "bench_report: T = 512, 2 layers x 8 heads";
    report.alignment_legend = "right alignment: the previous token";
    InspectedExample example;
    for (std::int64_t t = 0; t < T; ++t) example.source.push_back(fmt::format("w{}", t));
    std::vector<std::int64_t> right{-1};
    for (std::int64_t t = 1; t < T; ++t) right.push_back(t - 1);
    for (std::int64_t layer = 0; layer < layers; ++layer) {
        for (std::int64_t head = 0; head < heads; ++head) {
            AttentionMap map{.module = "encoder.layers." + std::to_string(layer) + ".self_attn",
                             .layer = layer,
                             .head = head,
                             .queries = example.source,
                             .keys = example.source,
                             .weights = head_weights(layer * heads + head, gen),
                             .right = right,
                             .alignment_share = {},
                             .saliency_correlation = {}};
            map.alignment_share = alignment_share(map, right);
            example.maps.push_back(std::move(map));
        }
    }
    report.examples.push_back(std::move(example));
    Series loss{.name = "training loss", .colour = "#c0392b", .x = {}, .y = {}};
    for (int step = 1; step <= 2000; ++step) {
        loss.x.push_back(step);
        loss.y.push_back(3.0 * std::exp(-step / 400.0) + 0.1);
    }
    report.charts.push_back({.title = "training loss",
                             .x_label = "step",
                             .y_label = "loss",
                             .series = {loss},
                             .y_min = {},
                             .y_max = {}});
    return report;
}

double body_attribute(const std::string& dom, const std::string& name) {
    std::smatch m;
    if (!std::regex_search(dom, m, std::regex(name + "=\"([0-9.]+)\""))) return std::nan("");
    return std::stod(m[1].str());
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = bench::int_flag(argc, argv, "--runs", 5);
    std::string keep;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--keep") keep = argv[i + 1];

    const Report report = long_report();
    std::string html;
    const double start = bench::now(bench::Clock::Wall);
    html = render_html(report);
    const double build_seconds = bench::now(bench::Clock::Wall) - start;
    const auto file = std::filesystem::temp_directory_path() / "attograd_bench_report.html";
    std::ofstream(file, std::ios::binary) << html;
    std::printf("report: 1 example, T = %lld, %lld layers x %lld heads (8-bit weights)\n",
                static_cast<long long>(T), static_cast<long long>(layers), static_cast<long long>(heads));
    std::printf("render_html: %.0f ms, file size %.2f MB (%zu bytes)\n", build_seconds * 1e3,
                static_cast<double>(html.size()) / (1024.0 * 1024.0), html.size());
    if (!headless::chromium_available()) {
        std::printf("%s not installed: no browser timing\n", headless::chromium_path);
        return 0;
    }
    const auto blank = std::filesystem::temp_directory_path() / "attograd_bench_blank.html";
    std::ofstream(blank) << "<!DOCTYPE html><html><body></body></html>";
    std::vector<double> first, head_view, wall, blank_wall;
    for (int r = 0; r < runs; ++r) {  // alternate with a blank page: Chromium's own start-up cost
        blank_wall.push_back(headless::dump_dom(blank, 0).seconds);
        const headless::DumpedPage page = headless::dump_dom(file, 0);
        first.push_back(body_attribute(page.dom, "data-first-render-ms"));
        head_view.push_back(body_attribute(page.dom, "data-head-view-ms"));
        wall.push_back(page.seconds);
        std::printf(
            "run %d: first render %.0f ms, head view drawn %.0f ms (page clock); chromium %.2f s, blank "
            "page %.2f s\n",
            r + 1, first.back(), head_view.back(), wall.back(), blank_wall.back());
    }
    std::printf(
        "median of %d: time to first render %.0f ms, head view %.0f ms; chromium run %.2f s (blank page "
        "%.2f s); load average %s\n",
        runs, bench::median(first), bench::median(head_view), bench::median(wall), bench::median(blank_wall),
        headless::read_text("/proc/loadavg").substr(0, 14).c_str());
    if (!keep.empty())
        std::filesystem::copy_file(file, keep, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::remove(file);
    std::filesystem::remove(blank);
    return 0;
}
