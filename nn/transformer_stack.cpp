// TransformerEncoder and TransformerDecoder: num_layers layers in a ModuleList "layers" and an
// optional final LayerNorm "norm".
#include "core/error.hpp"
#include "nn/layer_norm.hpp"
#include "nn/module_list.hpp"
#include "nn/transformer.hpp"
#include "nn/transformer_inputs.hpp"

#include <algorithm>

namespace attograd::nn {
namespace {

// The layers `Layer` of a stack, built one after the other from `generator` into a ModuleList
// registered as "layers" in `parent` by the caller.
template <class Layer>
std::vector<std::shared_ptr<Layer>> make_layers(const TransformerStackOptions& o, ModuleList& list,
                                                Generator& generator, std::string_view op) {
    AG_CHECK(o.num_layers >= 0, ValueError, "{}: num_layers must be >= 0, got {}", op, o.num_layers);
    std::vector<std::shared_ptr<Layer>> layers;
    for (std::int64_t i = 0; i < o.num_layers; ++i)
        layers.push_back(list.push_back(std::make_shared<Layer>(o.layer, generator)));
    return layers;
}

std::shared_ptr<LayerNorm> make_final_norm(const TransformerStackOptions& o) {
    if (!o.norm) return nullptr;
    return std::make_shared<LayerNorm>(LayerNormOptions{.normalized_shape = {o.layer.d_model},
                                                        .eps = o.layer.layer_norm_eps,
                                                        .bias = o.layer.bias,
                                                        .dtype = o.layer.dtype});
}

std::string stack_repr(const TransformerStackOptions& o) {
    return fmt::format("num_layers={}, norm={}", o.num_layers, o.norm);
}

template <class Layer>
const Layer& layer_at(const std::vector<std::shared_ptr<Layer>>& layers, std::size_t index,
                      std::string_view op) {
    AG_CHECK(index < layers.size(), IndexError, "{}::layer: index {} out of range for {} layers", op, index,
             layers.size());
    return *layers[index];
}

}  // namespace

TransformerEncoder::TransformerEncoder(TransformerStackOptions options, Generator& generator)
    : options_(options) {
    auto list = register_module("layers", std::make_shared<ModuleList>());
    layers_ = make_layers<TransformerEncoderLayer>(options_, *list, generator, type_name());
    if (options_.norm) norm_ = register_module("norm", make_final_norm(options_));
}

TransformerEncoder::~TransformerEncoder() = default;

std::string TransformerEncoder::extra_repr() const { return stack_repr(options_); }

const TransformerEncoderLayer& TransformerEncoder::layer(std::size_t index) const {
    return layer_at(layers_, index, type_name());
}

Tensor TransformerEncoder::forward(const Tensor& src, const TransformerEncoderArgs& args) const {
    check_encoder_inputs(src, args, options_.layer, type_name());
    Tensor x = src;
    for (const auto& layer : layers_) x = layer->forward(x, args);
    return norm_ ? norm_->forward(x) : x;
}

TransformerDecoder::TransformerDecoder(TransformerStackOptions options, Generator& generator)
    : options_(options) {
    auto list = register_module("layers", std::make_shared<ModuleList>());
    layers_ = make_layers<TransformerDecoderLayer>(options_, *list, generator, type_name());
    if (options_.norm) norm_ = register_module("norm", make_final_norm(options_));
}

TransformerDecoder::~TransformerDecoder() = default;

std::string TransformerDecoder::extra_repr() const { return stack_repr(options_); }

const TransformerDecoderLayer& TransformerDecoder::layer(std::size_t index) const {
    return layer_at(layers_, index, type_name());
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory,
                                   const TransformerDecoderArgs& args) const {
    check_decoder_inputs(tgt, memory, args, options_.layer, type_name());
    Tensor x = tgt;
    for (const auto& layer : layers_) x = layer->forward(x, memory, args);
    return norm_ ? norm_->forward(x) : x;
}

void TransformerDecoderCache::reorder(const Tensor& rows) {
    for (TransformerDecoderLayerCache& layer : layers) {
        layer.self_attn.reorder(rows);
        layer.multihead_attn.reorder(rows);
    }
}

bool TransformerDecoder::supports_cache() const {
    return std::all_of(layers_.begin(), layers_.end(),
                       [](const auto& layer) { return layer->supports_cache(); });
}

Tensor TransformerDecoder::forward_cached(const Tensor& tgt, const Tensor& memory,
                                          TransformerDecoderCache& cache,
                                          const TransformerDecoderArgs& args) const {
    if (cache.steps == 0 && cache.layers.empty()) cache.layers.resize(layers_.size());
    AG_CHECK(cache.layers.size() == layers_.size(), ValueError,
             "{}::forward_cached: the cache holds {} layers but the decoder has {}", type_name(),
             cache.layers.size(), layers_.size());
    // every layer has answered cache.steps queries, unless calls on single layers were mixed in
    for (std::size_t i = 0; i < cache.layers.size(); ++i) {
        const auto& layer = cache.layers[i];
        for (const std::int64_t seen :
             {layer.multihead_attn.steps, layer.self_attn.owner ? layer.self_attn.steps : cache.steps}) {
            AG_CHECK(
                seen == cache.steps, ValueError,
                "{}::forward_cached: layer {} of the cache has run {} positions but the cache {} (calls on "
                "single layers mixed into the decoder's cache)",
                type_name(), i, seen, cache.steps);
        }
    }
    // All or nothing: a step that throws in a later layer (another memory, a bad mask) leaves the
    // cache as it was, not with the earlier layers one position ahead. The layers' caches replace
    // their tensors rather than write into them, so the copy shares them.
    const TransformerDecoderCache before = cache;
    Tensor x = tgt;
    try {
        for (std::size_t i = 0; i < layers_.size(); ++i)
            x = layers_[i]->forward_cached(x, memory, cache.layers[i], args);
    } catch (...) {
        cache = before;
        throw;
    }
    ++cache.steps;
    return norm_ ? norm_->forward(x) : x;
}

}  // namespace attograd::nn
