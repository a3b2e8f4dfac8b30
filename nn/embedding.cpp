// Embedding: a lookup table of learned vectors, one per token id.
#include "nn/embedding.hpp"

#include "core/autograd.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_shape.hpp"
#include "nn/parameter_size.hpp"

#include <algorithm>

namespace attograd::nn {

Embedding::Embedding(EmbeddingOptions options, Generator& generator) : options_(options) {
    const std::int64_t v = options.num_embeddings;
    AG_CHECK(v >= 0 && options.embedding_dim >= 0, ValueError,
             "Embedding: num_embeddings and embedding_dim must be >= 0, got {} and {}", v,
             options.embedding_dim);
    AG_CHECK(is_floating(options.dtype), DTypeError, "Embedding: dtype must be float32 or float64, got {}",
             options.dtype);
    if (options.padding_idx) {
        const std::int64_t p = *options.padding_idx;
        AG_CHECK(p >= -v && p < v, ValueError, "Embedding: padding_idx {} must be within num_embeddings {}",
                 p, v);
        options_.padding_idx = p < 0 ? p + v : p;
    }
    check_parameter_size("Embedding",
                         fmt::format("num_embeddings {} and embedding_dim {}", v, options.embedding_dim),
                         "weight", {v, options.embedding_dim}, options.dtype);
    Tensor weight = randn({v, options.embedding_dim}, generator, {.dtype = options.dtype});
    if (options_.padding_idx) {
        std::byte* row = static_cast<std::byte*>(weight.raw_data()) +
                         *options_.padding_idx * options.embedding_dim *
                             static_cast<std::int64_t>(dtype_size(options.dtype));
        std::fill_n(row, options.embedding_dim * static_cast<std::int64_t>(dtype_size(options.dtype)),
                    std::byte{0});
    }
    weight_ = register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& ids) const {
    AG_CHECK(!ids.defined() || ids.dtype() == DType::Int64, DTypeError,
             "Embedding: ids must be int64 token ids, got {} {}", ids.defined() ? ids.dtype() : DType::Int64,
             ids.shape());
    bool any_padding = false;
    if (options_.padding_idx && ids.defined() && ids.dtype() == DType::Int64) {
        const std::int64_t* first = ids.data<std::int64_t>();
        any_padding = std::find(first, first + ids.numel(), *options_.padding_idx) != first + ids.numel();
    }
    if (!any_padding || !autograd::needs_record({&weight_})) return embedding(weight_, ids);
    // Positions holding padding_idx read the row through a detached handle, so the padding
    // row's gradient stays zero while its value is still the row's current content.
    Shape mask_shape = ids.shape();
    mask_shape.push_back(1);
    const Tensor mask = reshape(eq(ids, index_tensor({*options_.padding_idx}, {})), mask_shape);
    return where(mask, embedding(weight_.detach(), ids), embedding(weight_, ids));
}

std::string Embedding::extra_repr() const {
    std::string out =
        fmt::format("num_embeddings={}, embedding_dim={}", options_.num_embeddings, options_.embedding_dim);
    if (options_.padding_idx) out += fmt::format(", padding_idx={}", *options_.padding_idx);
    return out;
}

}  // namespace attograd::nn
