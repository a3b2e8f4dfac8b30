// A score function of one's own in the score registry: the Gaussian kernel of Nadaraya-Watson
// regression, s(x, q) = -|x - q|^2 / 2 (d2l.ai, "Attention Pooling by Similarity").
#include <attograd/attograd.hpp>

#include <cstdio>
using namespace attograd;

// -|x - q|^2 / 2 = q . x - |q|^2 / 2 - |x|^2 / 2 is the dot product of q' = [q, 1, -|q|^2 / 2]
// and x' = [x, -|x|^2 / 2, 1], so the global and the banded (local attention) forms are both
// dot scores of the augmented vectors.
class GaussianScore final : public nn::AttentionScore {
public:
    GaussianScore(nn::Score kind, const nn::AttentionScoreOptions& o)
        : AttentionScore(kind, o.query_dim, o.key_dim) {}
    Tensor forward(const Tensor& query, const Tensor& key) const override {
        check_inputs(query, key);
        return matmul(augment_query(query), transpose(augment_key(key), 1, 2));
    }
    Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                         std::int64_t width) const override {
        check_inputs(query, key);
        return local_dot_score(augment_query(query), augment_key(key), window_start, width);
    }
    std::string type_name() const override { return "GaussianScore"; }

private:
    static Tensor half_square(const Tensor& x) { return sum(x * x, {-1}, true) * 0.5; }
    static Tensor augment_query(const Tensor& q) {
        return concat({q, ones_like(half_square(q)), -half_square(q)}, -1);
    }
    static Tensor augment_key(const Tensor& x) {
        return concat({x, -half_square(x), ones_like(half_square(x))}, -1);
    }
};

int main() {
    const nn::Score gaussian = nn::register_score(
        {.name = "gaussian", .make = [](nn::Score kind, const nn::AttentionScoreOptions& o, Generator&) {
             return std::make_shared<GaussianScore>(kind, o);
         }});
    // Any attention layer takes it by value or by name (as a config file would hold it).
    nn::Attention pooling({.query_dim = 1, .scoring = {.score = nn::parse_score("gaussian")}});
    const Tensor keys = tensor({0, 1, 2, 3}, {1, 4, 1});
    const Tensor values = tensor({0, 10, 20, 30}, {1, 4, 1});
    const Tensor query = tensor({1}, {1, 1, 1});
    const auto out = pooling.forward(query, keys, values);
    // weights softmax(-(x - 1)^2 / 2) over x = 0..3: the nearest key, x = 1, weighs most
    std::printf("score %s: weights %s, output %.4f\n", std::string(nn::to_string(gaussian)).c_str(),
                to_string(out.weights).c_str(), out.output.at({0, 0, 0}));
    return 0;
}
