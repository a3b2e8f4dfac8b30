// `attograd train --uniform-attention LAYER`: a model whose attention layer number LAYER attends
// uniformly over its allowed keys, in training and evaluation alike.
#pragma once

#include "models.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace attograd::cli {

/// `model` with every head of its attention layer number `layer` (as Model::attention_layers()
/// numbers them, as inspect lists them) attending with weights 1 / n over the n keys it may
/// attend to (not masked, inside a local window), in every forward and predict: the uniform
/// baseline of Wiegreffe & Pinter 2019 §3.1 (after Jain & Wallace 2019 §4), trained as such
/// (the rest of the model learns around the fixed weights; the layer's values still carry
/// gradients). The returned model holds `model`'s modules under the same names (the same
/// parameters, state_dict and layer names). The uniform weights lie beneath interventions from
/// outside (inspect::InterventionOptions::beneath), so knockout and the faithfulness measures
/// act on the weights the model attends with. Throws ValueError, its message starting with
/// `flag` ("--uniform-attention" or "config.json: model.uniform_attention"), when the model has
/// no attention layer or `layer` is not one of its layer numbers (listing them).
std::shared_ptr<Model> with_uniform_attention(std::shared_ptr<Model> model, std::int64_t layer,
                                              std::string_view flag);

}  // namespace attograd::cli
