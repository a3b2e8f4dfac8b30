// A model whose one attention layer attends uniformly: every call runs under an
// inspect::AttentionIntervention installed beneath any intervention from outside.
#include "uniform_attention.hpp"

#include "core/error.hpp"
#include "inspect/intervention.hpp"

#include <fmt/format.h>

namespace attograd::cli {

namespace {

class UniformAttentionModel final : public Model {
public:
    UniformAttentionModel(std::shared_ptr<Model> inner, const AttentionLayerInfo& layer)
        : inner_(std::move(inner)) {
        // The inner model's modules under their own names: the same parameters and state_dict.
        AG_ASSERT(inner_->named_parameters(false).empty() && inner_->named_buffers(false).empty(),
                  "with_uniform_attention: the model holds tensors outside its submodules");
        for (const auto& [name, child] : inner_->named_children()) register_module(name, child);
        layers_info_ = inner_->attention_layers();
        std::map<std::int64_t, inspect::Replacement> heads;
        for (std::int64_t h = 0; h < layer.heads; ++h) heads.emplace(h, inspect::Replacement::uniform());
        heads_[layer.name] = std::move(heads);
    }

    std::string type_name() const override { return inner_->type_name(); }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        return inner_->make_batch(sources, targets);
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        const inspect::AttentionIntervention uniform(*this, heads_, {.beneath = true});
        return inner_->forward(batch, token_embedding);
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources,
                                                   const DecodeSettings& decoding) const override {
        const inspect::AttentionIntervention uniform(*this, heads_, {.beneath = true});
        return inner_->predict(sources, decoding);
    }

    Tensor token_embedding(const Batch& batch) const override { return inner_->token_embedding(batch); }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        return inner_->model_source(source);
    }

    std::int64_t source_column(std::int64_t i) const override { return inner_->source_column(i); }

private:
    std::shared_ptr<Model> inner_;
    std::map<std::string, std::map<std::int64_t, inspect::Replacement>> heads_;
};

}  // namespace

std::shared_ptr<Model> with_uniform_attention(std::shared_ptr<Model> model, std::int64_t layer,
                                              std::string_view flag) {
    const auto& layers = model->attention_layers();
    AG_CHECK(!layers.empty(), ValueError, "{} {}: the model has no attention layer", flag, layer);
    std::string listing;
    for (std::size_t l = 0; l < layers.size(); ++l)
        listing +=
            fmt::format("{}{} = {} ({} head(s))", l == 0 ? "" : ", ", l, layers[l].name, layers[l].heads);
    AG_CHECK(layer >= 0 && layer < std::ssize(layers), ValueError,
             "{} {}: no such attention layer; this model's attention layers: {}", flag, layer, listing);
    return std::make_shared<UniformAttentionModel>(std::move(model), layers[static_cast<std::size_t>(layer)]);
}

}  // namespace attograd::cli
