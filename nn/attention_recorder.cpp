// Recording attention weights for inspection, by module name, without changing model code.
#include "nn/attention_recorder.hpp"

namespace attograd::nn {

namespace detail {
AttentionRecorder*& active_recorder() {
    thread_local AttentionRecorder* slot = nullptr;
    return slot;
}
}  // namespace detail

AttentionRecorder::AttentionRecorder(const Module& root) : previous_(detail::active_recorder()) {
    for (const auto& [name, module] : root.named_modules()) names_.emplace(module, name);
    detail::active_recorder() = this;
}

AttentionRecorder::~AttentionRecorder() { detail::active_recorder() = previous_; }

std::vector<Tensor> AttentionRecorder::weights(std::string_view name) const {
    std::vector<Tensor> out;
    for (const auto& r : records_)
        if (r.name == name) out.push_back(r.weights);
    return out;
}

void AttentionRecorder::add(const Module* layer, const Tensor& weights) {
    const auto it = names_.find(layer);
    if (it == names_.end() || !weights.defined()) return;
    records_.push_back({it->second, weights.detach()});
}

}  // namespace attograd::nn
