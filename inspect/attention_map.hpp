// One attention matrix ready to draw, the colour scale the renderers share, and display labels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attograd::inspect {

/// One matrix to draw for one example: a head's attention weights (rows: queries, columns:
/// keys), or a derived map (rollout, flow, saliency) with `head` = -1.
struct AttentionMap {
    std::string module{};    ///< module name, e.g. "decoder.layers.0.multihead_attn", or "rollout"
    std::int64_t layer = 0;  ///< index of the layer in the order the recorder first saw it
    std::int64_t head = 0;   ///< head index within the layer; -1 for a map that is not a head
    std::vector<std::string> queries{};       ///< row labels, one per query
    std::vector<std::string> keys{};          ///< column labels, one per key
    std::vector<double> weights{};            ///< [queries, keys] row-major
    std::vector<std::int64_t> right{};        ///< per row, the right key column or -1 (may be empty)
    std::optional<double> alignment_share{};  ///< mass on the right keys, when defined
    /// Mean over rows of the Spearman rank correlation between this head's weights and the
    /// gradient x input saliency of the same output (inspect::saliency_correlation).
    std::optional<double> saliency_correlation{};

    /// Tq, the number of queries.
    std::int64_t rows() const { return static_cast<std::int64_t>(queries.size()); }
    std::int64_t cols() const { return static_cast<std::int64_t>(keys.size()); }  ///< Tk, the number of keys
    /// The weight of query `row` on key `col` (unchecked).
    double at(std::int64_t row, std::int64_t col) const {
        return weights[static_cast<std::size_t>(row * cols() + col)];
    }
    /// The full title: "decoder.layers.0.multihead_attn head 0", or the module alone when head < 0
    /// ("saliency (gradient x input)").
    std::string title() const;
};

/// Throws ShapeError unless weights.size() == rows x cols, ValueError when a weight is not
/// finite, IndexError when an entry of `right` is neither -1 nor a key index; each message names
/// the map's title and its shape. (`right` may be longer than the rows: an output that stopped
/// early; renderers ignore those rows.)
void check_map(const AttentionMap& map);

/// Everything inspected for one input: its tokens and every map.
struct InspectedExample {
    std::vector<std::string> source{};       ///< the input tokens
    std::vector<std::string> target{};       ///< the right output (empty when unknown)
    std::vector<std::string> prediction{};   ///< the model's output (empty when not a seq model)
    std::vector<AttentionMap> maps{};        ///< every layer's and head's attention, in layer order
    std::optional<AttentionMap> saliency{};  ///< gradient x input per output row (head = -1)
    std::optional<AttentionMap> rollout{};   ///< attention rollout (head = -1)
    std::optional<AttentionMap> flow{};      ///< attention flow (head = -1)
};

/// An RGB colour.
struct Rgb {
    /// red, green and blue, 0-255
    /// @{
    int r = 0, g = 0, b = 0;
    /// @}
};
/// The colour of weight `w` in [0, 1] on matplotlib's viridis (dark blue -> yellow; NaN -> 0).
Rgb weight_colour(double w);
/// "#rrggbb".
std::string hex(Rgb colour);

/// A short label for drawing: `<bos>` -> "^", `<eos>` -> "$", `<pad>` -> "_", `<unk>` -> U+FFFD,
/// a space -> "␣", a tab -> "⇥", control characters escaped (data::escape_control); other tokens
/// unchanged.
std::string display_label(const std::string& token);
/// What the special labels among `map`'s queries and keys stand for, in display_label's order,
/// e.g. "^ = <bos> (start), \ufffd = <unk> (a token outside the vocabulary)"; "" when none appears.
std::string symbol_legend(const AttentionMap& map);
/// Width of a UTF-8 string in terminal columns: the sum of codepoint_width over its code points.
std::int64_t display_width(const std::string& text);
/// Terminal columns of one code point, as wcwidth(3) in a UTF-8 locale for the common cases: 2 for
/// East Asian wide and fullwidth characters (Hangul, CJK, kana, fullwidth forms, most emoji), 0 for
/// combining marks and zero-width characters, 1 otherwise.
int codepoint_width(char32_t c);
/// The length in bytes (1-4) of the UTF-8 sequence starting at `text[i]` and its code point
/// (U+FFFD for a malformed sequence, which then counts one byte).
std::pair<std::size_t, char32_t> next_codepoint(const std::string& text, std::size_t i);

}  // namespace attograd::inspect
