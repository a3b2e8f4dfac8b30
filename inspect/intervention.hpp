// Attention intervention as a scoped guard: named heads attend with weights given from outside.
#pragma once

#include "core/generator.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::inspect {

/// The attention layers of a module tree: dotted name and head count, in named_modules() order.
struct AttentionLayer {
    std::string name;        ///< e.g. "layers.0.self_attn" ("" for the root itself)
    std::int64_t num_heads;  ///< 1 for nn::Attention and a decoder's attention, num_heads for MHA
};
/// Every nn::Attention and nn::MultiHeadAttention under `root` (root included), and the attention
/// of every nn::BahdanauDecoder and nn::LuongDecoder: its "attention" submodule (e.g.
/// "decoder.attention", the name its AttentionRecorder records under), one head.
std::vector<AttentionLayer> attention_layers(const nn::Module& root);

/// Any function of a head's own weights [B, Tq, Tk] and its allowed keys [B, Tq, Tk] (bool, true =
/// may be attended to) returning the weights to use [B, Tq, Tk] (same dtype).
using WeightFunction = std::function<Tensor(const Tensor& weights, const Tensor& allowed)>;
/// A WeightFunction that also takes the index of the weights' first query row among the layer's:
/// 0 for a whole-sequence layer, t for step t of a recurrent decoder (which attends one row at a
/// time, weights [B, 1, Tk]).
using RowWeightFunction =
    std::function<Tensor(const Tensor& weights, const Tensor& allowed, std::int64_t first_row)>;

/// What one head attends with while an AttentionIntervention is alive. Every replacement must be
/// a distribution over the allowed keys: finite, >= 0, exactly 0 on masked keys, and each row
/// with an allowed key summing to 1 within AttentionIntervention's tolerance (a row whose keys
/// are all masked is all 0). Weights on masked keys are refused, never silently moved.
class Replacement {
public:
    /// A fixed matrix [Tq, Tk] (the same for every sequence) or [B, Tq, Tk]. When it requires
    /// grad, gradients flow into it through the output (for adversarial search). A recurrent
    /// decoder's step t attends with row t (Tq = the forward's T steps; when decoding step by step,
    /// any Tq > t).
    static Replacement fixed(Tensor weights);
    /// 1 / n over the n allowed keys of each query (Jain & Wallace 2019 §4's uniform baseline);
    /// the output is then the mean of the allowed values.
    static Replacement uniform();
    /// The head's own weights, each row's weights on its allowed keys randomly permuted among those
    /// keys (Jain & Wallace 2019 §4.1), one permutation per row drawn from `generator` (which must
    /// outlive the intervention). Differentiable in the own weights.
    static Replacement permuted(Generator& generator);
    /// Any function of the head's own weights and allowed keys.
    static Replacement function(WeightFunction f);
    /// Any function of the head's own weights, allowed keys and the index of their first query
    /// row (what a function of one query row needs on a recurrent decoder, called step by step).
    static Replacement row_function(RowWeightFunction f);
    /// Zero weights and a zero output (what HeadKnockout does).
    static Replacement silence();

    /// The replacement as a function of the own weights and allowed keys (empty for silence()).
    const WeightFunction& fn() const { return fn_; }
    /// True for silence().
    bool silences() const { return silence_; }

private:
    friend class AttentionIntervention;
    WeightFunction fn_;
    RowWeightFunction row_fn_;  // row_function(): used instead of fn_
    Tensor fixed_;              // fixed(): the matrix, whose rows a recurrent decoder's steps take one by one
    bool silence_ = false;
};

/// Options of AttentionIntervention.
struct InterventionOptions {
    /// |row sum - 1| allowed for a replacement row; in (0, 0.5).
    double tolerance = 1e-5;
    /// Apply this guard's replacements beneath the interventions already in force on this thread,
    /// instead of overriding them: a head an outer guard silences stays silenced, and a head an
    /// outer guard replaces gets the outer replacement applied to this guard's weights (which
    /// the outer replacement sees as the head's own). A model whose layer is held uniform by
    /// its own forward (attograd train --uniform-attention) is then measured on the weights it
    /// attends with: permuting or knocking out that head from outside acts on uniform weights.
    bool beneath = false;
};

/// RAII: while alive, the named heads of the named attention layers under `root` attend, on this
/// thread, with the given replacement weights instead of their own; model code does not change:
///
///     inspect::AttentionIntervention uniform(model, {{"layers.0.self_attn", {{2,
///     Replacement::uniform()}}}}); auto logits = model.forward(tokens);   // layer 0's head 2 attends
///     uniformly
///
/// The layer computes its own weights W, the replacement W' is formed from them, and the head's
/// output is recomputed as W' V (values per head, Jain & Wallace 2019 §4; Serrano & Smith 2019
/// §3), so the intervention reaches every later layer. Paths:
/// - nn::Attention, global: soft, sparse and hard weights alike are replaced after
///   normalisation (hard attention's REINFORCE log_prob still refers to the key it sampled).
/// - nn::MultiHeadAttention, global: a layer with a replaced head takes the unfused path that
///   materialises its weights (only that layer, only while the guard lives); the other heads'
///   outputs are recomputed from their own weights.
/// - Local attention (local-m and local-p, either layer): the allowed keys are those inside each
///   query's window that are not masked, so a replacement may put weight only there (weights
///   outside the window are refused as on masked keys). The head's band is widened to [B, Tq, Tk]
///   for the replacement and the weights used are gathered back into the band (while the guard
///   lives, the layer takes its unfused banded path and costs Tq * Tk per head). local-p: the
///   replacement stands for the normalised weights (align(h_t, h_s), Luong et al. 2015 eq. 10),
///   which the layer multiplies by its Gaussian as it does its own; the recorder sees the product.
/// - nn::BahdanauDecoder, nn::LuongDecoder (global, local-m, local-p): the layer is the decoder's
///   "attention" (one head); the replacement is applied at every step to that step's weights
///   [B, 1, S], so later steps see the states the replaced weights lead to.
/// No dropout is applied to the weights used. An nn::AttentionRecorder alive at the same time
/// records the weights actually used. Guards nest: an inner guard's heads override the outer's
/// for the same head (or lie beneath them: InterventionOptions::beneath); the outer's other heads
/// stay in force.
///
/// Throws ValueError when `heads` is empty or a layer names no head, when `root` has no
/// attention layer, when a name is not an attention layer under `root` (listing the layers and
/// their head counts), or when the tolerance is outside (0, 0.5); IndexError when a head is outside [0,
/// num_heads); ShapeError when a fixed matrix is not [Tq, Tk] or [B, Tq, Tk]. At forward time (every check
/// names the layer and head): ShapeError when a replacement's shape differs from the head's
/// weights (naming layer, head and shapes), DTypeError when its dtype does, ValueError when a
/// weight is negative or not finite, lies on a masked key, or a row does not sum to 1.
class AttentionIntervention {
public:
    /// While alive, the heads named in `heads` (layer name under `root` -> head -> replacement)
    /// attend with their replacements; throws as described above.
    AttentionIntervention(const nn::Module& root,
                          const std::map<std::string, std::map<std::int64_t, Replacement>>& heads,
                          InterventionOptions options = {});
    /// As above, with error messages starting with `op` (HeadKnockout's).
    AttentionIntervention(const nn::Module& root,
                          const std::map<std::string, std::map<std::int64_t, Replacement>>& heads,
                          InterventionOptions options, std::string_view op);
    ~AttentionIntervention();
    AttentionIntervention(const AttentionIntervention&) = delete;
    AttentionIntervention& operator=(const AttentionIntervention&) = delete;

private:
    nn::AttentionInterventions installed_;
};

/// The head count of an attention layer (1 for nn::Attention, num_heads for
/// nn::MultiHeadAttention), 0 for any other module (a decoder's attention included: see
/// attention_layers).
std::int64_t attention_head_count(const nn::Module* module);

/// The attention layer named `name` under `root`. Throws ValueError starting with `op` when root has
/// no attention layer or `name` is not one (listing the layers and their head counts).
const nn::Module& find_attention_layer(const nn::Module& root, const std::string& name, std::string_view op);

/// Checks that `replacement` is a distribution over the allowed keys like `own` [B, Tq, Tk]
/// (see Replacement). Throws as AttentionIntervention does at forward time, naming `what`.
void check_replacement(const Tensor& replacement, const Tensor& own, const Tensor& allowed, double tolerance,
                       std::string_view what);

}  // namespace attograd::inspect
