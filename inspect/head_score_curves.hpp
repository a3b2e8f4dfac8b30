// Previous-token and induction scores of every self-attention head over training, from the
// attention snapshots of fixed probe inputs.
#pragma once

#include "inspect/report.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attograd::inspect {

/// One head's scores at each snapshot.
struct HeadScoreCurve {
    std::string module{};                  ///< e.g. "encoder.layers.1.self_attn"
    std::int64_t layer = 0;                ///< the map's layer index
    std::int64_t head = 0;                 ///< head within the layer
    std::vector<double> steps{};           ///< the snapshot's step, one per point
    std::vector<double> previous_token{};  ///< previous_token_scores at each step
    std::vector<double> induction{};       ///< induction_scores at each step
};

/// The curves of every self-attention head (maps with head >= 0 whose query and key labels are
/// the same tokens) in `snapshots`: at each snapshot, the mean over the probes that have the head
/// of previous_token_scores and induction_scores of its map, the tokens being the map's key
/// labels (equal labels are equal tokens). Curves are ordered by layer, then head; a head absent
/// from a snapshot has no point there. Throws ShapeError from check_map on a malformed map.
std::vector<HeadScoreCurve> head_score_curves(const std::vector<AttentionSnapshot>& snapshots);

/// The charts of head_score_curves(snapshots): "previous-token score per head" and "induction
/// score per head", one series "L<layer>.H<head>" per head, y in [0, 1]. Empty when no snapshot
/// has a self-attention head. Throws as head_score_curves.
std::vector<Chart> head_score_charts(const std::vector<AttentionSnapshot>& snapshots);

}  // namespace attograd::inspect
