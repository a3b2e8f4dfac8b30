// Token and position embeddings and one self-attention layer learn to reverse 8 digits.
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    Generator gen(0);
    nn::Embedding tokens({.num_embeddings = 10, .embedding_dim = 32}, gen);
    nn::Embedding positions({.num_embeddings = 8, .embedding_dim = 32}, gen);
    nn::MultiHeadAttention attention({.embed_dim = 32, .num_heads = 2}, gen);
    nn::Linear classifier({.in_features = 32, .out_features = 10}, gen);
    std::vector<Tensor> params;
    for (const nn::Module* m :
         std::initializer_list<const nn::Module*>{&tokens, &positions, &attention, &classifier})
        for (const Tensor& p : m->parameters()) params.push_back(p);
    optim::Adam adam(params, {.lr = 1e-2});
    const Tensor reversed = index_tensor({7, 6, 5, 4, 3, 2, 1, 0}, {8});
    for (int step = 1; step <= 400; ++step) {
        const Tensor x = randint(0, 10, {64, 8}, gen);  // [B, T] digits
        auto [out, weights] = attention.forward(tokens.forward(x) + positions.forward(arange(8)));
        Tensor loss = cross_entropy(reshape(classifier.forward(out), {-1, 10}),
                                    reshape(index_select(x, 1, reversed), {-1}));
        adam.zero_grad();
        loss.backward();
        adam.step();
        if (step % 100 == 0) fmt::print("step {}  loss {:.3g}\n", step, loss.item());
    }
}
