// A short training program (the README's is docs/snippets/train_reverse.cpp): token + position
// embeddings and one self-attention layer learn to reverse sequences of 8 digits; the learned weights show
// the anti-diagonal.
#include "attograd.hpp"

using namespace attograd;

int main() {
    const std::int64_t T = 8, V = 10, E = 32;
    Generator gen(0);
    nn::Embedding tokens({.num_embeddings = V, .embedding_dim = E}, gen);
    nn::Embedding positions({.num_embeddings = T, .embedding_dim = E}, gen);
    nn::MultiHeadAttention attention({.embed_dim = E, .num_heads = 2}, gen);
    nn::Linear classifier({.in_features = E, .out_features = V}, gen);
    std::vector<Tensor> params;
    for (const nn::Module* m :
         std::initializer_list<const nn::Module*>{&tokens, &positions, &attention, &classifier})
        for (const Tensor& p : m->parameters()) params.push_back(p);
    optim::Adam adam(params, {.lr = 1e-2});

    const Tensor reversed = index_tensor({7, 6, 5, 4, 3, 2, 1, 0}, {T});
    for (int step = 1; step <= 400; ++step) {
        const Tensor x = randint(0, V, {64, T}, gen);  // [B, T] digits
        const auto [out, weights] = attention.forward(tokens.forward(x) + positions.forward(arange(T)));
        const Tensor logits = reshape(classifier.forward(out), {-1, V});  // [B * T, V]
        const Tensor loss = cross_entropy(logits, reshape(index_select(x, 1, reversed), {-1}));
        adam.zero_grad();
        loss.backward();
        adam.step();
        if (step % 100 == 0) fmt::print("step {:3d}  loss {:.4f}\n", step, loss.item());
        if (step == 400)
            fmt::print("attention weights of one sequence [Tq, Tk]:\n{}\n", narrow(weights, 0, 0, 1));
    }
}
