// What the self-contained HTML report shows: examples, derived maps, training charts and
// attention snapshots over training; the report's data model and its renderer.
#pragma once

#include "inspect/attention_map.hpp"
#include "inspect/faithfulness_evidence.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attograd::inspect {

/// One line of a chart: points (x[i], y[i]); non-finite y values are gaps.
struct Series {
    std::string name{};    ///< legend label
    std::string colour{};  ///< CSS colour, e.g. "#2471a3"
    /// the points, x[i] and y[i] (same length)
    /// @{
    std::vector<double> x{}, y{};
    /// @}
};

/// A line chart with labelled axes. Every series of a chart shares one y scale: [y_min, y_max]
/// when both are given, else the range of all series' finite values.
struct Chart {
    std::string title{};           ///< e.g. "held-out accuracy"
    std::string x_label{};         ///< e.g. "step"
    std::string y_label{};         ///< e.g. "accuracy"
    std::vector<Series> series{};  ///< the lines, drawn in order
    /// the y range, when both are given
    /// @{
    std::optional<double> y_min{}, y_max{};
    /// @}
};

/// The attention of fixed probe inputs at one training step (inspect::AttentionSnapshotter).
struct AttentionSnapshot {
    std::int64_t step = 0;                   ///< optimizer steps taken when it was recorded
    std::vector<InspectedExample> probes{};  ///< one per probe input, maps with alignment shares
};

/// Everything one HTML report shows.
struct Report {
    std::string title{};                                        ///< page heading
    std::vector<std::pair<std::string, std::string>> config{};  ///< rows of the configuration table
    std::vector<std::string> notes{};                           ///< lines shown under the title
    std::vector<Chart> charts{};                                ///< training curves
    std::optional<std::string> charts_error{};  ///< why the curves could not be read (shown instead)
    /// What the outlined cells of a map mean, e.g. "right alignment: anti-diagonal".
    std::string alignment_legend{};
    std::vector<InspectedExample> examples{};  ///< switchable in the page
    /// How the examples' predictions were decoded, e.g. "greedy decoding" or "beam search (beam
    /// 4)": the page names it wherever it shows a prediction. Empty: the page says "prediction".
    std::string decoding{};
    /// What an example's maps were recorded with, e.g. "the model fed its own prediction
    /// (free-running, as it wrote it)": the page says so under its tokens. Empty: not said.
    std::string example_maps{};
    /// The layer (module name) the page opens on, where the answer is read (e.g. a seq2seq
    /// model's last cross-attention): its head average, or its head when it has one. Empty or
    /// absent from an input's maps: that input's last layer.
    std::string open_module{};
    std::vector<AttentionSnapshot> snapshots{};  ///< replayed with a step slider (may be empty)
    /// Does each head explain the output? (inspect/faithfulness_html.hpp; absent: no section)
    std::optional<FaithfulnessSection> faithfulness{};
};

}  // namespace attograd::inspect
