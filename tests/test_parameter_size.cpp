// nn::check_parameter_size: every module constructor names the option that would make a
// parameter or buffer too large, before any allocation.
#include "helpers.hpp"

using namespace attograd;

namespace {
constexpr std::int64_t huge = std::int64_t{1} << 40;
}  // namespace

TEST_CASE("check_parameter_size names the option, the tensor and its shape") {
    CHECK_THROWS_WITH_AS(
        nn::check_parameter_size("M", "width 5", "w", {huge, huge, huge}, DType::Float32),
        doctest::Contains("M: width 5 makes w [1099511627776, 1099511627776, 1099511627776], "
                          "which has too many elements"),
        ResourceError);
    CHECK_THROWS_WITH_AS(nn::check_parameter_size("M", "width 5", "w", {huge, 512}, DType::Float64),
                         doctest::Contains("more than this machine's"), ResourceError);
    CHECK_NOTHROW(nn::check_parameter_size("M", "width 5", "w", {1000, 1000}, DType::Float64));
    CHECK_NOTHROW(nn::check_parameter_size("M", "width 5", "w", {0, huge, huge, huge}, DType::Float64));
}

TEST_CASE("module constructors name their option when a parameter would be too large") {
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = huge}),
                         doctest::Contains("MultiHeadAttention: embed_dim 1099511627776 makes in_proj_weight "
                                           "[3298534883328, 1099511627776], which has too many elements"),
                         ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::MultiHeadAttention({.embed_dim = std::int64_t{1} << 62}),
        doctest::Contains("MultiHeadAttention: embed_dim 4611686018427387904 makes in_proj_weight"),
        ResourceError);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention({.embed_dim = 8, .kdim = std::int64_t{1} << 62}),
                         doctest::Contains("MultiHeadAttention: embed_dim 8 and kdim"), ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Linear({.in_features = huge, .out_features = huge}),
        doctest::Contains("Linear: in_features 1099511627776 and out_features 1099511627776 makes "
                          "weight"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Embedding({.num_embeddings = huge, .embedding_dim = 512}),
        doctest::Contains("Embedding: num_embeddings 1099511627776 and embedding_dim 512 makes weight"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::LayerNorm({.normalized_shape = {huge, huge}}),
        doctest::Contains("LayerNorm: normalized_shape [1099511627776, 1099511627776] makes weight"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::SinusoidalPositionalEncoding({.embedding_dim = 512, .max_len = huge}),
        doctest::Contains("SinusoidalPositionalEncoding: max_len 1099511627776 and embedding_dim "
                          "512 makes pe"),
        ResourceError);
    CHECK_THROWS_WITH_AS(nn::LearnedPositionalEmbedding({.embedding_dim = 512, .max_len = huge}),
                         doctest::Contains("LearnedPositionalEmbedding: max_len 1099511627776"),
                         ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Attention({.query_dim = huge, .project_query = true}),
        doctest::Contains("Attention: query_dim 1099511627776 and embed_dim 1099511627776 makes "
                          "q_proj.weight"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::TransformerDecoderLayer({.d_model = 8, .nhead = 2, .dim_feedforward = std::int64_t{1} << 62}),
        doctest::Contains("TransformerDecoderLayer: d_model 8 and dim_feedforward"), ResourceError);
}
