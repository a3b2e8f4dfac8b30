// The registry of attention score functions: the four built-in scores and any a program adds.
#pragma once

#include "nn/attention_scores.hpp"

#include <functional>
#include <memory>
#include <string>

namespace attograd::nn {

/// Makes a score module. `kind` is the Score that register_score() returned for this entry, to
/// be handed to the AttentionScore constructor; `options` carries the widths.
using ScoreFactory = std::function<std::shared_ptr<AttentionScore>(
    Score kind, const AttentionScoreOptions& options, Generator& generator)>;

/// A score's entry in the registry: the name parse_score() and config files use, and how to make
/// its module.
struct ScoreEntry {
    std::string name{};   ///< e.g. "cosine"; non-empty, without spaces or control characters
    ScoreFactory make{};  ///< the module for given widths, parameters drawn from the generator
};

/// Adds a score function: parse_score(entry.name) returns the Score this returns,
/// make_score() of it calls entry.make, score_names() lists it last, and every attention layer
/// (Attention, MultiHeadAttention, the Transformer layers, LuongDecoder) accepts it in
/// ScoringOptions::score. Only Dot and ScaledDot take the fused scaled-dot-product kernels; a
/// registered score runs through its module's forward (or forward_local for local attention).
/// Register before building the layers that use it. Thread-safe.
/// Throws ValueError when the name is empty, contains whitespace or a control character, or is
/// taken, and when `make` is empty.
Score register_score(ScoreEntry entry);

}  // namespace attograd::nn
