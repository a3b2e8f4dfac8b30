// Gradient x input saliency of any differentiable function of an embedding, and how well a
// head's attention agrees with it (Spearman rank correlation).
#pragma once

#include "core/tensor.hpp"
#include "inspect/attention_map.hpp"
#include "inspect/recorded_maps.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace attograd::inspect {

/// A differentiable function of an input embedding [S, E] returning one score per output [Tout],
/// e.g. the logit of the token each output position predicts. It runs the model from the
/// embedding on (the embedding replaces the model's own token lookup).
using ScoreFunction = std::function<Tensor(const Tensor& embedding)>;

/// Gradient x input saliency (Denil et al. 2014; Shrikumar et al. 2016; Ancona et al. 2018 §2):
/// for output t and input position s, |sum_e (d f(x)_t / d x[s, e]) * x[s, e]|, each row
/// normalised to sum 1 (a row whose total is 0 stays 0). `embedding` [S, E] (float32 or
/// float64; not modified); `f` is run once and differentiated once per output (the graph is
/// retained between them). Returns a map [Tout, S] (module "saliency (gradient x input)",
/// head -1) with labels.queries (Tout of them) and labels.keys (S of them). Throws ShapeError
/// when the embedding is not 2-D, f's result is not 1-D, or the labels' lengths differ from Tout
/// / S (naming the shapes); ValueError when f's result does not depend on the embedding or a
/// gradient or score is not finite; what `f` itself throws.
AttentionMap saliency(const ScoreFunction& f, const Tensor& embedding, const TokenLabels& labels);

/// Spearman's rank correlation of two equally long series (average ranks for ties); nullopt
/// when either is constant or shorter than 2. Throws ShapeError when the lengths differ.
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b);

/// The mean over rows of the Spearman correlation between a head's weights and the saliency
/// of the same outputs (Jain & Wallace 2019 compare attention with gradient attributions this
/// way); rows where either is constant are skipped; nullopt when every row is. Throws
/// ShapeError when the two maps' shapes differ (naming both titles and shapes).
std::optional<double> saliency_correlation(const AttentionMap& head, const AttentionMap& saliency);

}  // namespace attograd::inspect
