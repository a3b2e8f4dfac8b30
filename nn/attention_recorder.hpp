// Recording attention weights for inspection, by module name, without changing model code.
#pragma once

#include "nn/module.hpp"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attograd::nn {

/// One attention call captured by an AttentionRecorder.
struct RecordedAttention {
    std::string
        name;  ///< the layer's dot-joined module name under the root, e.g. "encoder.layers.0.self_attn"
    Tensor
        weights;  ///< the layer's weights as it reported them (detached), e.g. [B, Tq, Tk] or [B, h, Tq, Tk]
};

/// RAII: while alive, every attention layer of `root`'s module tree that runs a forward on this
/// thread reports its attention weights here, under its module name. Model code does not change:
///
///     nn::AttentionRecorder recorder(model);
///     model.forward(tokens);
///     for (const auto& r : recorder.records()) draw(r.name, r.weights);
///
/// Names come from `root.named_modules()` at construction ("" is the root itself), so modules
/// added to the tree afterwards, and layers outside it, are not recorded. Recorders nest: the
/// innermost one alive on the thread receives the records; the previous one is active again
/// when it is destroyed. Weights are recorded detached (no gradient, no tape).
class AttentionRecorder {
public:
    /// Records every attention layer under `root` while alive.
    explicit AttentionRecorder(const Module& root);
    ~AttentionRecorder();
    AttentionRecorder(const AttentionRecorder&) = delete;
    AttentionRecorder& operator=(const AttentionRecorder&) = delete;

    /// Every captured call, in call order.
    const std::vector<RecordedAttention>& records() const { return records_; }
    /// The weights of every call of the layer named `name`, in call order (empty when none).
    std::vector<Tensor> weights(std::string_view name) const;
    /// Forgets the records (the recorder stays active).
    void clear() { records_.clear(); }

    /// Stores `weights` under `layer`'s name; ignored when `layer` is not in the root's tree.
    void add(const Module* layer, const Tensor& weights);

private:
    std::unordered_map<const Module*, std::string> names_;
    std::vector<RecordedAttention> records_;
    AttentionRecorder* previous_;
};

namespace detail {
/// The innermost recorder alive on this thread, or nullptr.
/// This thread's slot for it. A function, not an `extern thread_local` variable: UBSan (GCC 12)
/// flags loads of such variables from other translation units as null.
AttentionRecorder*& active_recorder();
}  // namespace detail

/// True while an AttentionRecorder is alive on this thread. Layers whose weights cost extra to
/// produce (local attention's dense view) check it before building them.
inline bool attention_recording() { return detail::active_recorder() != nullptr; }

/// Called by every attention layer after computing its weights: hands them to the active
/// recorder under the layer's name. Costs one thread-local pointer test when nothing records.
inline void record_attention(const Module* layer, const Tensor& weights) {
    if (AttentionRecorder* recorder = detail::active_recorder()) recorder->add(layer, weights);
}

}  // namespace attograd::nn
