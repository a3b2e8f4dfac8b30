// Internal: a scoped guard that stops a model's parameters from requiring grad.
#pragma once

#include "core/tensor.hpp"
#include "nn/module.hpp"

#include <vector>

namespace attograd::inspect::detail {

/// RAII: while alive, the model's parameters that require grad do not, so that a backward through
/// the model computes only the gradient a measure asks for (of its inputs, or of its attention
/// logits) and adds nothing into the parameters' gradients. Parameters already frozen are left
/// alone (a guard inside another, or on another thread under it, then changes nothing).
class FrozenParameters {
public:
    explicit FrozenParameters(const nn::Module& model) {
        for (Tensor& p : model.parameters())
            if (p.requires_grad()) frozen_.push_back(p.requires_grad_(false));
    }
    ~FrozenParameters() {
        for (Tensor& p : frozen_) p.requires_grad_(true);
    }
    FrozenParameters(const FrozenParameters&) = delete;
    FrozenParameters& operator=(const FrozenParameters&) = delete;

private:
    std::vector<Tensor> frozen_;
};

}  // namespace attograd::inspect::detail
