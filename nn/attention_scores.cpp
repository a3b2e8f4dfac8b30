// Attention score functions: additive, dot, scaled dot and bilinear, as reusable modules.
#include "nn/attention_scores.hpp"

#include "core/error.hpp"
#include "core/ops_additive_score.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_local_attention.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

// Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] (PyTorch's nn.Linear default bound).
Tensor init_uniform(const Shape& shape, std::int64_t fan_in, Generator& generator) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return uniform(shape, -bound, bound, generator);
}

// x [..., in] times w^T for a weight w [out, in] -> [..., out].
Tensor times_transposed(const Tensor& x, const Tensor& w) { return matmul(x, transpose(w, 0, 1)); }

}  // namespace

AttentionScore::AttentionScore(Score kind, std::int64_t query_dim, std::int64_t key_dim)
    : kind_(kind), query_dim_(query_dim), key_dim_(key_dim == 0 ? query_dim : key_dim) {
    AG_CHECK(query_dim_ >= 1 && key_dim_ >= 1, ValueError,
             "{} score: query_dim and key_dim must be >= 1, got query_dim={} key_dim={}", to_string(kind),
             query_dim, key_dim);
}

std::string AttentionScore::extra_repr() const {
    return fmt::format("query_dim={}, key_dim={}", query_dim_, key_dim_);
}

void AttentionScore::check_inputs(const Tensor& query, const Tensor& key) const {
    AG_CHECK(query.defined() && key.defined(), ValueError, "{}: undefined query or key", type_name());
    AG_CHECK(query.dim() == 3 && key.dim() == 3 && query.size(0) == key.size(0) &&
                 query.size(2) == query_dim_ && key.size(2) == key_dim_,
             ShapeError, "{}: expected query [B, Tq, {}] and key [B, Tk, {}], got query {} and key {}",
             type_name(), query_dim_, key_dim_, query.shape(), key.shape());
}

// --- additive ----------------------------------------------------------------------------------

AdditiveScore::AdditiveScore(const AttentionScoreOptions& o, Generator& generator)
    : AttentionScore(Score::Additive, o.query_dim, o.key_dim) {
    AG_CHECK(o.hidden >= 0, ValueError, "AdditiveScore: hidden must be >= 0, got {}", o.hidden);
    const std::int64_t h = o.hidden == 0 ? query_dim() : o.hidden;
    const std::string dims = fmt::format("hidden {}, query_dim {} and key_dim {}", h, query_dim(), key_dim());
    check_parameter_size("AdditiveScore", dims, "W", {h, key_dim()},
                         DType::Float32);  // init_uniform is float32
    check_parameter_size("AdditiveScore", dims, "U", {h, query_dim()},
                         DType::Float32);  // init_uniform is float32
    W_ = register_parameter("W", init_uniform({h, key_dim()}, key_dim(), generator));
    U_ = register_parameter("U", init_uniform({h, query_dim()}, query_dim(), generator));
    v_ = register_parameter("v", init_uniform({h}, h, generator));
    if (o.bias) {
        W_bias_ = register_parameter("W_bias", init_uniform({h}, key_dim(), generator));
        U_bias_ = register_parameter("U_bias", init_uniform({h}, query_dim(), generator));
        v_bias_ = register_parameter("v_bias", init_uniform({1}, h, generator));
    }
}

Tensor AdditiveScore::project_query(const Tensor& query) const {
    return U_bias_.defined() ? linear(query, U_, U_bias_) : times_transposed(query, U_);
}

Tensor AdditiveScore::project_keys(const Tensor& key) const {
    AG_CHECK(key.defined(), ValueError, "AdditiveScore: undefined key");
    AG_CHECK(key.dim() == 3 && key.size(2) == key_dim(), ShapeError,
             "AdditiveScore: expected key [B, Tk, {}], got {}", key_dim(), key.shape());
    return W_bias_.defined() ? linear(key, W_, W_bias_) : times_transposed(key, W_);
}

Tensor AdditiveScore::forward_projected(const Tensor& query, const Tensor& projected_keys) const {
    AG_CHECK(query.defined() && projected_keys.defined(), ValueError,
             "AdditiveScore: undefined query or keys");
    AG_CHECK(query.dim() == 3 && query.size(2) == query_dim() && projected_keys.dim() == 3 &&
                 projected_keys.size(0) == query.size(0) && projected_keys.size(2) == hidden(),
             ShapeError,
             "AdditiveScore: expected query [B, Tq, {}] and projected keys [B, Tk, {}], got {} and {}",
             query_dim(), hidden(), query.shape(), projected_keys.shape());
    const Tensor scores = additive_score(project_query(query), projected_keys, v_);
    return v_bias_.defined() ? scores + v_bias_ : scores;
}

Tensor AdditiveScore::forward(const Tensor& query, const Tensor& key) const {
    check_inputs(query, key);
    return forward_projected(query, project_keys(key));
}

Tensor AdditiveScore::forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                                    std::int64_t width) const {
    check_inputs(query, key);
    const Tensor scores =
        local_additive_score(project_query(query), project_keys(key), v_, window_start, width);
    return v_bias_.defined() ? scores + v_bias_ : scores;
}

// --- dot and scaled dot ------------------------------------------------------------------------

DotScore::DotScore(const AttentionScoreOptions& o, bool scaled)
    : AttentionScore(scaled ? Score::ScaledDot : Score::Dot, o.query_dim, o.key_dim) {
    AG_CHECK(query_dim() == key_dim(), ShapeError,
             "{}: query and key widths must be equal, got query_dim={} key_dim={}", type_name(), query_dim(),
             key_dim());
}

double DotScore::scale() const {
    return kind() == Score::ScaledDot ? 1.0 / std::sqrt(static_cast<double>(key_dim())) : 1.0;
}

Tensor DotScore::forward(const Tensor& query, const Tensor& key) const {
    check_inputs(query, key);
    // q [B, Tq, D] x k^T [B, D, Tk] -> [B, Tq, Tk]
    Tensor scores = matmul(query, transpose(key, 1, 2));
    return kind() == Score::ScaledDot ? scores * scale() : scores;
}

Tensor DotScore::forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                               std::int64_t width) const {
    check_inputs(query, key);
    return local_dot_score(query, key, window_start, width, scale());
}

// --- bilinear ----------------------------------------------------------------------------------

BilinearScore::BilinearScore(const AttentionScoreOptions& o, Generator& generator)
    : AttentionScore(Score::Bilinear, o.query_dim, o.key_dim) {
    check_parameter_size("BilinearScore", fmt::format("query_dim {} and key_dim {}", query_dim(), key_dim()),
                         "W", {key_dim(), query_dim()}, DType::Float32);  // init_uniform is float32
    W_ = register_parameter("W", init_uniform({key_dim(), query_dim()}, query_dim(), generator));
}

Tensor BilinearScore::forward(const Tensor& query, const Tensor& key) const {
    check_inputs(query, key);
    // x^T W q = x . (W q): q W^T [B, Tq, Dk], then x^T [B, Dk, Tk]
    return matmul(times_transposed(query, W_), transpose(key, 1, 2));
}

Tensor BilinearScore::forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                                    std::int64_t width) const {
    check_inputs(query, key);
    return local_dot_score(times_transposed(query, W_), key, window_start, width);
}

}  // namespace attograd::nn
