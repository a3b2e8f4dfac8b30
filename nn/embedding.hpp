// Embedding: a lookup table of learned vectors, one per token id.
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

#include <optional>

namespace attograd::nn {

/// Options of Embedding, with PyTorch's defaults.
struct EmbeddingOptions {
    std::int64_t num_embeddings = 0;  ///< vocabulary size V
    std::int64_t embedding_dim = 0;   ///< vector width E
    /// Row that gets no gradient and starts at zero (a negative value counts from the end,
    /// as in PyTorch).
    std::optional<std::int64_t> padding_idx = std::nullopt;
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// PyTorch's `nn.Embedding`: int64 ids [...] -> [..., E], row `id` of `weight` [V, E].
/// `weight` is initialised N(0, 1), with the padding_idx row zeroed. The padding row's vector
/// is returned as it is (the user may overwrite it) but never receives a gradient.
/// Prints as `Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)`.
class Embedding : public Module {
public:
    /// Throws ValueError on negative sizes or a padding_idx outside [-V, V), DTypeError on a
    /// non-float dtype, ResourceError naming num_embeddings and embedding_dim when the weight would
    /// be too large (check_parameter_size).
    explicit Embedding(EmbeddingOptions options, Generator& generator = default_generator());

    /// ids [...] (int64) -> [..., E]. Repeated ids add their gradients. Throws IndexError on
    /// an id outside [0, V), DTypeError when ids are not int64.
    Tensor forward(const Tensor& ids) const;

    std::string type_name() const override { return "Embedding"; }
    std::string extra_repr() const override;

    /// The options, with padding_idx normalised to [0, V).
    const EmbeddingOptions& options() const { return options_; }
    /// The table [V, E] (a handle sharing the parameter's storage).
    Tensor weight() const { return weight_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    EmbeddingOptions options_;
    Tensor weight_;
};

}  // namespace attograd::nn
