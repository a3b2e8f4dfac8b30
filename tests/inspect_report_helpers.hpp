// A small synthetic inspect::Report (2 layers x 2 heads, 2 examples, derived maps, snapshots,
// charts) shared by the HTML report's content and browser tests.
#pragma once

#include "inspect/inspect.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace testing {

using attograd::inspect::AttentionMap;

/// Row i of a map puts weight on key `focus(i)` growing with `sharpness` (a softmax of
/// sharpness * [j == focus] plus a small deterministic ripple), so every row sums to 1.
inline std::vector<double> peaked_weights(std::int64_t rows, std::int64_t cols, double sharpness,
                                          int pattern) {
    std::vector<double> w(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t focus = pattern == 0 ? i % cols : pattern == 1 ? (cols - 1 - i % cols) : 0;
        double sum = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) {
            const double score = (j == focus ? sharpness : 0.0) + 0.3 * std::sin(1.7 * i + 2.3 * j + pattern);
            w[i * cols + j] = std::exp(score);
            sum += w[i * cols + j];
        }
        for (std::int64_t j = 0; j < cols; ++j) w[i * cols + j] /= sum;
    }
    return w;
}

inline std::vector<std::string> letters(std::int64_t n, char first = 'a') {
    std::vector<std::string> out;
    for (std::int64_t i = 0; i < n; ++i) out.push_back(std::string(1, static_cast<char>(first + i)));
    return out;
}

/// Layer 0: "encoder.layers.0.self_attn" over the source; layer 1: "decoder.layers.0.cross_attn"
/// from the reversed source to the source, with the anti-diagonal as its right alignment.
inline std::vector<AttentionMap> synthetic_maps(std::int64_t n, double sharpness) {
    std::vector<AttentionMap> maps;
    const auto source = letters(n);
    std::vector<std::string> reversed(source.rbegin(), source.rend());
    for (std::int64_t head = 0; head < 2; ++head) {
        maps.push_back({.module = "encoder.layers.0.self_attn",
                        .layer = 0,
                        .head = head,
                        .queries = source,
                        .keys = source,
                        .weights = peaked_weights(n, n, sharpness, static_cast<int>(head)),
                        .right = {},
                        .alignment_share = std::nullopt,
                        .saliency_correlation = std::nullopt});
    }
    std::vector<std::int64_t> right;
    for (std::int64_t i = 0; i < n; ++i) right.push_back(n - 1 - i);
    for (std::int64_t head = 0; head < 2; ++head) {
        AttentionMap map{.module = "decoder.layers.0.cross_attn",
                         .layer = 1,
                         .head = head,
                         .queries = reversed,
                         .keys = source,
                         .weights = peaked_weights(n, n, sharpness * (head + 1) / 2.0, 1),
                         .right = right,
                         .alignment_share = std::nullopt,
                         .saliency_correlation = 0.5};
        map.alignment_share = attograd::inspect::alignment_share(map, right);
        maps.push_back(std::move(map));
    }
    return maps;
}

inline attograd::inspect::InspectedExample synthetic_example(std::int64_t n, bool derived) {
    attograd::inspect::InspectedExample example;
    example.source = letters(n);
    example.target.assign(example.source.rbegin(), example.source.rend());
    example.prediction = example.target;
    example.maps = synthetic_maps(n, 4.0);
    if (derived) {
        AttentionMap saliency = example.maps.back();
        saliency.module = "saliency (gradient x input)";
        saliency.head = -1;
        saliency.layer = -1;
        saliency.weights = peaked_weights(n, n, 2.0, 2);
        saliency.alignment_share.reset();
        saliency.saliency_correlation.reset();
        example.saliency = saliency;
        AttentionMap rollout = example.maps.front();
        rollout.module = "rollout";
        rollout.head = -1;
        rollout.layer = -1;
        rollout.weights = peaked_weights(n, n, 1.0, 0);
        example.rollout = rollout;
    }
    return example;
}

/// The prediction of the probe at `step` of synthetic_report: all "a" at step 0, the right
/// output (the reversed source) from step 100 on, the first half right in between.
inline std::vector<std::string> probe_prediction(std::int64_t n, std::int64_t step) {
    const auto source = letters(n);
    std::vector<std::string> out(source.rbegin(), source.rend());
    const std::int64_t right = step >= 100 ? n : step > 0 ? n / 2 : 0;
    for (std::int64_t i = right; i < n; ++i)
        out[static_cast<std::size_t>(i)] = std::string(1, 'a');  // not = "a": GCC 12 -Wrestrict (PR 105329)
    return out;
}

/// The report the tests draw: 2 examples (5 and 6 tokens, the first with saliency and
/// rollout), 3 snapshots of one probe whose attention sharpens and whose prediction changes
/// with the step (probe_prediction), opening on the cross-attention, three charts (two series
/// on different ranges, one of a single point).
inline attograd::inspect::Report synthetic_report() {
    using namespace attograd::inspect;
    Report report;
    report.title = "synthetic report <reverse>";
    report.config = {{"task", "reverse"}, {"lr", "0.01"}};
    report.notes = {"a note"};
    report.alignment_legend = "right alignment: anti-diagonal (target t attends source n-1-t)";
    report.examples = {synthetic_example(5, true), synthetic_example(6, false)};
    report.examples[1].prediction.back() =
        std::string(1, 'z');  // an example's own prediction, not the first's
    report.open_module = "decoder.layers.0.cross_attn";
    for (const std::int64_t step : {0, 50, 100}) {
        AttentionSnapshot snapshot;
        snapshot.step = step;
        InspectedExample probe = synthetic_example(4, false);
        probe.maps = synthetic_maps(4, 0.05 * static_cast<double>(step));
        probe.prediction = probe_prediction(4, step);
        snapshot.probes.push_back(std::move(probe));
        report.snapshots.push_back(std::move(snapshot));
    }
    Series loss{.name = "training loss", .colour = "#c0392b", .x = {}, .y = {}};
    Series sequence{.name = "held-out sequence accuracy", .colour = "#2471a3", .x = {}, .y = {}};
    Series token{.name = "held-out token accuracy", .colour = "#229954", .x = {}, .y = {}};
    for (int step = 10; step <= 100; step += 10) {
        loss.x.push_back(step);
        loss.y.push_back(2.0 / step * 10.0);
        sequence.x.push_back(step);
        sequence.y.push_back(0.2 + 0.007 * step);
        token.x.push_back(step);
        token.y.push_back(0.6 + 0.003 * step);
    }
    report.charts = {
        Chart{.title = "training loss",
              .x_label = "step",
              .y_label = "loss",
              .series = {loss},
              .y_min = {},
              .y_max = {}},
        Chart{.title = "held-out accuracy",
              .x_label = "step",
              .y_label = "accuracy",
              .series = {sequence, token},
              .y_min = {},
              .y_max = {}},
        Chart{.title = "one evaluation",
              .x_label = "step",
              .y_label = "accuracy",
              .series = {{.name = "held-out token accuracy", .colour = "", .x = {100}, .y = {0.5}}},
              .y_min = {},
              .y_max = {}}};
    return report;
}

}  // namespace testing
