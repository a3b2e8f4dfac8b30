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
    std::int64_t num_heads;  ///< 1 for nn::Attention, num_heads for nn::MultiHeadAttention
};
/// Every nn::Attention and nn::MultiHeadAttention under `root` (root included).
std::vector<AttentionLayer> attention_layers(const nn::Module& root);

/// Any function of a head's own weights [B, Tq, Tk] and its allowed keys [B, Tq, Tk] (bool, true =
/// may be attended to) returning the weights to use [B, Tq, Tk] (same dtype).
using WeightFunction = std::function<Tensor(const Tensor& weights, const Tensor& allowed)>;

/// What one head attends with while an AttentionIntervention is alive. Every replacement must be
/// a distribution over the allowed keys: finite, >= 0, exactly 0 on masked keys, and each row
/// with an allowed key summing to 1 within AttentionIntervention's tolerance (a row whose keys
/// are all masked is all 0). Weights on masked keys are refused, never silently moved.
class Replacement {
public:
    /// A fixed matrix [Tq, Tk] (the same for every sequence) or [B, Tq, Tk]. When it requires
    /// grad, gradients flow into it through the output (for adversarial search).
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
    /// Zero weights and a zero output (what HeadKnockout does).
    static Replacement silence();

    /// The replacement as a function of the own weights and allowed keys (empty for silence()).
    const WeightFunction& fn() const { return fn_; }
    /// True for silence().
    bool silences() const { return silence_; }

private:
    WeightFunction fn_;
    bool silence_ = false;
};

/// Options of AttentionIntervention.
struct InterventionOptions {
    /// |row sum - 1| allowed for a replacement row; in (0, 0.5).
    double tolerance = 1e-5;
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
/// - Local attention (either layer): its weights live on a band of 2D + 1 keys; replacements are
///   refused (ValueError at construction), silencing works.
/// No dropout is applied to the weights used. An nn::AttentionRecorder alive at the same time
/// records the weights actually used. Guards nest: an inner guard's heads override the outer's
/// for the same head; the outer's other heads stay in force.
///
/// Throws ValueError when `heads` is empty or a layer names no head, when `root` has no
/// attention layer, when a name is not an attention layer under `root` (listing the layers and
/// their head counts), when a replacement other than silence targets a local-attention layer,
/// or when the tolerance is outside (0, 0.5); IndexError when a head is outside [0, num_heads);
/// ShapeError when a fixed matrix is not [Tq, Tk] or [B, Tq, Tk]. At forward time (every check
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
/// nn::MultiHeadAttention), 0 for any other module.
std::int64_t attention_head_count(const nn::Module* module);

/// The attention layer named `name` under `root`. Throws ValueError starting with `op` when root has
/// no attention layer or `name` is not one (listing the layers and their head counts).
const nn::Module& find_attention_layer(const nn::Module& root, const std::string& name, std::string_view op);

/// Checks that `replacement` is a distribution over the allowed keys like `own` [B, Tq, Tk]
/// (see Replacement). Throws as AttentionIntervention does at forward time, naming `what`.
void check_replacement(const Tensor& replacement, const Tensor& own, const Tensor& allowed, double tolerance,
                       std::string_view what);

}  // namespace attograd::inspect
