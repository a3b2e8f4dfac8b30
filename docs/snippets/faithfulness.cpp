// Is a head's attention an explanation of the output? A small attention classifier learns which
// position holds the largest first feature; then its head's weights are compared with gradient
// and leave-one-out importance (Kendall tau-b) and permuted (Jain & Wallace 2019).
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    const std::int64_t B = 64, T = 6, E = 8;
    Generator gen(0);
    nn::MultiHeadAttention attention({.embed_dim = E, .num_heads = 1}, gen);
    nn::Linear classifier({.in_features = E, .out_features = T}, gen);
    std::vector<Tensor> params = attention.parameters();
    for (const Tensor& p : classifier.parameters()) params.push_back(p);
    optim::Adam adam(params, {.lr = 1e-2});
    // probabilities [B, T]: the output at query 0, classified over the T positions.
    const auto probabilities = [&](const Tensor& x) {
        return softmax(classifier.forward(select(attention.forward(x).output, 1, 0)), -1);
    };
    for (int step = 0; step < 300; ++step) {
        const Tensor x = randn({B, T, E}, gen);
        const Tensor label = argmax(select(x, 2, 0), 1);  // the position of the largest first feature
        const Tensor loss =
            cross_entropy(classifier.forward(select(attention.forward(x).output, 1, 0)), label);
        adam.zero_grad();
        loss.backward();
        adam.step();
    }

    const inspect::ExplainedModel explained{.model = &attention, .probabilities = probabilities, .query = 0};
    const inspect::HeadId head{.layer = "", .head = 0};
    const Tensor inputs = randn({8, T, E}, gen);
    const inspect::HeadObservation observed = inspect::observe_head(explained, inputs, head);
    const auto by_gradient =
        inspect::attention_agreement(observed, inspect::gradient_importance(explained, inputs, head));
    const auto by_removal =
        inspect::attention_agreement(observed, inspect::leave_one_out(explained, inputs, head));
    const auto permuted = inspect::permutation_test(explained, inputs, head, 20, gen);
    for (std::size_t b = 0; b < 3; ++b)
        fmt::print(
            "example {}: tau(attention, gradient) {:+.2f}  tau(attention, leave-one-out) {:+.2f}  "
            "median TVD under permutation {:.3f} (max weight {:.2f})\n",
            b, by_gradient[b].value_or(0.0), by_removal[b].value_or(0.0), permuted[b].median,
            permuted[b].max_weight);
}
