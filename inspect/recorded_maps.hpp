// Attention maps from an AttentionRecorder's records plus token labels, and the alignment share.
#pragma once

#include "inspect/attention_map.hpp"
#include "nn/attention_recorder.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attograd::inspect {

/// Token labels of one attention layer's two axes.
struct TokenLabels {
    std::vector<std::string> queries{};  ///< one per query (rows), Tq of them
    std::vector<std::string> keys{};     ///< one per key (columns), Tk of them
};

/// The labels of the layer called `layer_name` (e.g. "layers.0.self_attn").
using LabelFunction = std::function<TokenLabels(const std::string& layer_name)>;

/// One map per head of one recorded call: `weights` [B, Tq, Tk] (one head, or averaged) or
/// [B, h, Tq, Tk] (per head) as layers report them (local attention's dense view included:
/// positions outside the window are 0), taken at batch element `batch_index`. The maps get
/// `module` = `layer_name`, `layer` = `layer`, `head` = 0..h-1. Throws ShapeError when the
/// weights are not rank 3 or 4 or the labels' lengths differ from Tq / Tk (naming the layer
/// and both shapes), IndexError when batch_index is outside [0, B), ValueError on a
/// non-finite weight (naming layer, head, row and column).
std::vector<AttentionMap> maps_from_weights(const std::string& layer_name, std::int64_t layer,
                                            const Tensor& weights, std::int64_t batch_index,
                                            const TokenLabels& labels);

/// Every head of every record, in call order. Layers are numbered by the order in which the
/// recorder first saw them; a layer called more than once (a decoder run step by step) gives
/// one set of maps per call. `labels` is asked once per record. Throws as maps_from_weights,
/// and ValueError when `records` is empty ("no attention was recorded": the model has no
/// attention layer under the recorder's root, or no forward ran while it was alive).
std::vector<AttentionMap> attention_maps(const std::vector<nn::RecordedAttention>& records,
                                         const LabelFunction& labels, std::int64_t batch_index = 0);
/// The same with one set of labels for every layer (a self-attention stack over one sequence).
std::vector<AttentionMap> attention_maps(const std::vector<nn::RecordedAttention>& records,
                                         const TokenLabels& labels, std::int64_t batch_index = 0);

/// The maps of one layer, by name, from what `recorder` holds: maps_from_weights of the layer's
/// `call`-th record (0: the first; a decoder's step-by-step calls are records 0, 1, ...) at
/// batch element `batch_index`, numbered `layer` as attention_maps numbers it. For example, the
/// cross-attention of a beam_search output, with the output's ids (Hypothesis::output_ids) as
/// query labels and the source as key labels. Throws ValueError when the recorder holds no record
/// of `layer_name` (listing the names it holds), IndexError when `call` is outside the layer's
/// records, and as maps_from_weights.
std::vector<AttentionMap> layer_maps(const nn::AttentionRecorder& recorder, const std::string& layer_name,
                                     const TokenLabels& labels, std::int64_t call = 0,
                                     std::int64_t batch_index = 0);

/// The first `rows` queries and `cols` keys of `map` (an example padded in its batch, cut back
/// to its real length; labels and right alignment are cut too). Throws IndexError when rows or
/// cols is negative or larger than the map's (naming its title and shape).
AttentionMap crop_map(const AttentionMap& map, std::int64_t rows, std::int64_t cols);

/// Share of attention mass on the right keys: the mean over `right`'s rows of the weight at the
/// right column (Luong et al. 2015 §5.4 measure alignment quality this way, as agreement with
/// a reference alignment). A row of `right` beyond the map's rows (the output stopped early)
/// counts 0; rows with right = -1 are skipped. nullopt when `right` has no row with a right
/// key. Throws IndexError when a right column is below -1 or >= the map's key count, ValueError on a
/// non-finite weight.
std::optional<double> alignment_share(const AttentionMap& map, const std::vector<std::int64_t>& right);

}  // namespace attograd::inspect
