// One attention matrix ready to draw, the colour scale the renderers share, and display labels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attograd::cli {

/// One head's attention weights for one example, with token labels on both axes.
struct AttentionMap {
    std::string module;                     ///< module name, e.g. "decoder.layers.0.cross_attn"
    std::int64_t layer = 0;                 ///< layer index within its stack
    std::int64_t head = 0;                  ///< head index within the layer
    std::vector<std::string> queries;       ///< row labels (output or input tokens)
    std::vector<std::string> keys;          ///< column labels (source tokens)
    std::vector<double> weights;            ///< [queries, keys] row-major
    std::vector<std::int64_t> right;        ///< per row, the right key column or -1 (may be empty)
    std::optional<double> alignment_share;  ///< mass on the right keys, when defined
    /// Mean over rows of the Spearman rank correlation between this head's weights and the
    /// gradient x input saliency of the same output (only with `inspect --saliency`).
    std::optional<double> saliency_correlation;

    std::int64_t rows() const { return static_cast<std::int64_t>(queries.size()); }
    std::int64_t cols() const { return static_cast<std::int64_t>(keys.size()); }
    double at(std::int64_t row, std::int64_t col) const {
        return weights[static_cast<std::size_t>(row * cols() + col)];
    }
    /// "decoder.layers.0.cross_attn head 0".
    std::string title() const;
};

/// What `inspect` found for one input: the tokens and every head's map.
struct InspectedExample {
    std::vector<std::string> source;      ///< the input tokens
    std::vector<std::string> target;      ///< the right output (empty when the task cannot tell)
    std::vector<std::string> prediction;  ///< the model's output
    std::vector<AttentionMap> maps;       ///< every layer's and head's attention
    /// Per output token, |gradient x input| over the source tokens, each row normalised to sum
    /// 1 (only with `inspect --saliency`).
    std::optional<AttentionMap> saliency;
};

/// Share of attention mass on the right keys: the mean over `right`'s rows of the weight at the
/// right column; a row missing from the map (the output stopped early) counts 0, rows with
/// right = -1 are skipped. nullopt when `right` has no row with a right key.
std::optional<double> alignment_share(const AttentionMap& map, const std::vector<std::int64_t>& right);

/// An RGB colour.
struct Rgb {
    int r = 0, g = 0, b = 0;
};
/// The colour of weight `w` in [0, 1] on a viridis-like scale (dark blue -> yellow).
Rgb weight_colour(double w);
/// "#rrggbb".
std::string hex(Rgb colour);

/// A short label for drawing: `<bos>` -> "^", `<eos>` -> "$", `<pad>` -> "_", `<unk>` -> "\ufffd",
/// a space -> "␣"; other tokens unchanged.
std::string display_label(const std::string& token);
/// Width of a UTF-8 string in terminal columns (one per code point).
std::int64_t display_width(const std::string& text);

}  // namespace attograd::cli
