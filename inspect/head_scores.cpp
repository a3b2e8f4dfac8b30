// Previous-token and induction (prefix-matching) scores per head.
#include "inspect/head_scores.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <string_view>

namespace attograd::inspect {
namespace {

// A validated attention layer: weights as float64 [B, heads, T, T], the padding as [B, T].
struct Layer {
    std::int64_t batch = 0, heads = 1, length = 0;
    std::vector<double> weights;
    std::vector<bool> padded;  // empty when there is no mask

    double at(std::int64_t b, std::int64_t h, std::int64_t query, std::int64_t key) const {
        return weights[static_cast<std::size_t>(((b * heads + h) * length + query) * length + key)];
    }
    bool is_padded(std::int64_t b, std::int64_t t) const {
        return !padded.empty() && padded[static_cast<std::size_t>(b * length + t)];
    }
};

Layer check_layer(std::string_view fn, const Tensor& attention, const Tensor& key_padding_mask) {
    AG_CHECK(attention.defined(), ValueError, "{}: attention is an undefined tensor", fn);
    AG_CHECK(is_floating(attention.dtype()), DTypeError,
             "{}: attention has dtype {}; expected float32 or float64", fn, attention.dtype());
    AG_CHECK(attention.dim() == 3 || attention.dim() == 4, ShapeError,
             "{}: attention has shape {} (rank {}); expected [B, h, T, T] or [B, T, T]", fn,
             attention.shape(), attention.dim());
    Layer layer{.batch = attention.size(0),
                .heads = attention.dim() == 4 ? attention.size(1) : 1,
                .length = attention.size(-1),
                .weights = {},
                .padded = {}};
    AG_CHECK(attention.size(-2) == layer.length, ShapeError,
             "{}: attention has shape {}; self-attention weights must be square [.., T, T]", fn,
             attention.shape());
    AG_CHECK(layer.heads > 0, ShapeError, "{}: attention has shape {}: no heads", fn, attention.shape());
    if (key_padding_mask.defined()) {
        AG_CHECK(key_padding_mask.dtype() == DType::Bool, DTypeError,
                 "{}: key_padding_mask has dtype {}; expected bool (true at padding)", fn,
                 key_padding_mask.dtype());
        AG_CHECK(key_padding_mask.shape() == Shape({layer.batch, layer.length}), ShapeError,
                 "{}: key_padding_mask has shape {}; expected [B, T] = [{}, {}] for attention {}", fn,
                 key_padding_mask.shape(), layer.batch, layer.length, attention.shape());
        for (const bool padded : key_padding_mask.to_vector<bool>()) layer.padded.push_back(padded);
    }
    layer.weights = attention.to_vector<double>();
    return layer;
}

}  // namespace

std::vector<double> previous_token_scores(const Tensor& attention, const Tensor& key_padding_mask) {
    const Layer layer = check_layer("previous_token_scores", attention, key_padding_mask);
    std::vector<double> scores(static_cast<std::size_t>(layer.heads), 0.0);
    for (std::int64_t h = 0; h < layer.heads; ++h) {
        double sum = 0.0;
        std::int64_t queries = 0;
        for (std::int64_t b = 0; b < layer.batch; ++b) {
            for (std::int64_t t = 1; t < layer.length; ++t) {
                if (layer.is_padded(b, t) || layer.is_padded(b, t - 1)) continue;
                sum += layer.at(b, h, t, t - 1);
                ++queries;
            }
        }
        scores[static_cast<std::size_t>(h)] = queries > 0 ? sum / static_cast<double>(queries) : 0.0;
    }
    return scores;
}

std::vector<double> induction_scores(const Tensor& attention, const Tensor& tokens,
                                     const Tensor& key_padding_mask) {
    const Layer layer = check_layer("induction_scores", attention, key_padding_mask);
    AG_CHECK(tokens.defined() && tokens.dtype() == DType::Int64, DTypeError,
             "induction_scores: tokens must be int64 token ids [B, T]");
    AG_CHECK(tokens.shape() == Shape({layer.batch, layer.length}), ShapeError,
             "induction_scores: tokens have shape {}; expected [B, T] = [{}, {}] for attention {}",
             tokens.shape(), layer.batch, layer.length, attention.shape());
    const std::vector<std::int64_t> ids = tokens.to_vector<std::int64_t>();
    const auto id = [&](std::int64_t b, std::int64_t t) {
        return ids[static_cast<std::size_t>(b * layer.length + t)];
    };

    // The induction targets K(t) of every (b, t), shared by all heads.
    std::vector<std::vector<std::int64_t>> targets(static_cast<std::size_t>(layer.batch * layer.length));
    std::int64_t queries = 0;
    for (std::int64_t b = 0; b < layer.batch; ++b) {
        for (std::int64_t t = 0; t < layer.length; ++t) {
            if (layer.is_padded(b, t)) continue;
            auto& keys = targets[static_cast<std::size_t>(b * layer.length + t)];
            for (std::int64_t s = 0; s + 1 < t; ++s) {
                if (id(b, s) == id(b, t) && !layer.is_padded(b, s) && !layer.is_padded(b, s + 1))
                    keys.push_back(s + 1);
            }
            queries += keys.empty() ? 0 : 1;
        }
    }
    std::vector<double> scores(static_cast<std::size_t>(layer.heads), 0.0);
    if (queries == 0) return scores;
    for (std::int64_t h = 0; h < layer.heads; ++h) {
        double sum = 0.0;
        for (std::int64_t b = 0; b < layer.batch; ++b) {
            for (std::int64_t t = 0; t < layer.length; ++t) {
                for (const std::int64_t k : targets[static_cast<std::size_t>(b * layer.length + t)])
                    sum += layer.at(b, h, t, k);
            }
        }
        scores[static_cast<std::size_t>(h)] = sum / static_cast<double>(queries);
    }
    return scores;
}

}  // namespace attograd::inspect
