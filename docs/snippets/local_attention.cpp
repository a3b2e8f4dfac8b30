// Local attention (Luong et al. 2015): each query sees only the 2D + 1 keys around its centre
// p_t, and only that band is computed. local-m: p_t = t; local-p: p_t is predicted and the
// weights are multiplied by a Gaussian around it.
#include <attograd/attograd.hpp>
#include <iostream>
using namespace attograd;

int main() {
    Generator gen(0);
    const std::int64_t B = 2, T = 12, E = 16, D = 2;
    const Tensor x = randn({B, T, E}, gen);
    nn::Attention monotonic({.query_dim = E, .scoring = {.local = nn::LocalMode::Monotonic, .window = D}},
                            gen);
    const nn::AttentionOutput m = monotonic.forward(x, x);  // self-attention, plain keys = values
    // m.band_weights [B, Tq, 2D + 1]: slot j of query t is key window_start + j
    fmt::print("band {} starts {} dense view {}\n", m.band_weights.shape(), m.window_start.shape(),
               m.weights.shape());

    nn::Attention predictive({.query_dim = E, .scoring = {.local = nn::LocalMode::Predictive, .window = D}},
                             gen);
    const nn::AttentionOutput p = predictive.forward(x, x);
    std::cout << "predicted centres p_t of the first sequence:\n" << p.centre.index({0}) << "\n";

    // The same in every head of a MultiHeadAttention, on the fused band kernel (dot / scaled-dot):
    nn::MultiHeadAttention heads(
        {.embed_dim = E, .num_heads = 4, .scoring = {.local = nn::LocalMode::Monotonic, .window = D}}, gen);
    const auto out = heads.forward(x, {.need_weights = false});
    fmt::print("multi-head local output {}\n", out.output.shape());
}
