// The faithfulness table (inspect/faithfulness_table.hpp) of a small trained model: 500 examples,
// every head of a 2-layer, 4-head MultiHeadAttention stack, 100 permutations and the adversarial
// search; prints the table and the seconds each measure costs.
//
//   bench_faithfulness [--examples N] [--permutations P] [--steps S] [--train T]
//
// The model reads T = 8 tokens of a vocabulary of 8 (learned token and position embeddings, two
// residual self-attention layers, E = 16) and predicts at position 0 the token at position T - 1
// (the first output of reversing the sequence); the explained query is row 0 and the right
// alignment is key T - 1.
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>

using namespace attograd;

namespace {

constexpr std::int64_t kVocab = 8, kLength = 8, kWidth = 16;

struct ReverseModel : nn::Module {
    Tensor token, position, out_weight, out_bias;
    std::shared_ptr<nn::MultiHeadAttention> first, second;
    explicit ReverseModel(Generator& gen) {
        token = register_parameter("token", randn({kVocab, kWidth}, gen) * 0.5);
        position = register_parameter("position", randn({kLength, kWidth}, gen) * 0.5);
        out_weight = register_parameter("out_weight", randn({kVocab, kWidth}, gen) * 0.25);
        out_bias = register_parameter("out_bias", zeros({kVocab}));
        first = register_module("first",
                                std::make_shared<nn::MultiHeadAttention>(
                                    nn::MultiHeadAttentionOptions{.embed_dim = kWidth, .num_heads = 4}, gen));
        second = register_module(
            "second", std::make_shared<nn::MultiHeadAttention>(
                          nn::MultiHeadAttentionOptions{.embed_dim = kWidth, .num_heads = 4}, gen));
    }
    std::string type_name() const override { return "ReverseModel"; }
    Tensor embed(const Tensor& tokens) const { return embedding(token, tokens) + position; }
    // inputs [B, T, E] -> logits of position 0 [B, V]
    Tensor logits(const Tensor& x) const {
        Tensor h = x + first->forward(x, {.need_weights = false}).output;
        h = h + second->forward(h, {.need_weights = false}).output;
        return linear(select(h, 1, 0), out_weight, out_bias);
    }
};

Tensor random_tokens(std::int64_t n, Generator& gen) {
    std::vector<std::int64_t> ids;
    for (std::int64_t i = 0; i < n * kLength; ++i) ids.push_back(gen.randint(0, kVocab));
    return index_tensor(ids, {n, kLength});
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t examples = bench::int_flag(argc, argv, "--examples", 500);
    const std::int64_t permutations = bench::int_flag(argc, argv, "--permutations", 100);
    const std::int64_t steps = bench::int_flag(argc, argv, "--steps", 300);
    const std::int64_t train_steps = bench::int_flag(argc, argv, "--train", 300);
    Generator gen(1);
    ReverseModel model(gen);
    {  // a short training run so that the heads attend to something
        optim::Adam adam(model.parameters(), {.lr = 1e-2});
        const double start = bench::now(bench::Clock::Wall);
        double loss_value = 0;
        for (std::int64_t step = 0; step < train_steps; ++step) {
            const Tensor tokens = random_tokens(64, gen);
            const Tensor loss =
                cross_entropy(model.logits(model.embed(tokens)), select(tokens, 1, kLength - 1));
            adam.zero_grad();
            loss.backward();
            adam.step();
            loss_value = loss.item();
        }
        fmt::print("training: {} steps of 64 in {:.1f} s, last loss {:.3f}\n", train_steps,
                   bench::now(bench::Clock::Wall) - start, loss_value);
    }
    model.eval();
    const Tensor tokens = random_tokens(examples, gen);
    inspect::FaithfulnessData data{.inputs = model.embed(tokens).detach(), .labels = {}, .alignment = {}};
    const auto ids = tokens.to_vector<std::int64_t>();
    for (std::int64_t i = 0; i < examples; ++i) {
        data.labels.push_back(ids[static_cast<std::size_t>(i * kLength + kLength - 1)]);
        data.alignment.push_back(kLength - 1);
    }
    const inspect::ExplainedModel explained{
        .model = &model,
        .probabilities = [&](const Tensor& x) { return softmax(model.logits(x), -1); },
        .query = 0};
    const double start = bench::now(bench::Clock::Wall);
    const inspect::FaithfulnessTable table = inspect::faithfulness_table(
        explained, data,
        {.heads = {}, .permutations = permutations, .adversarial_options = {.steps = steps}, .chunk = 64});
    const double total = bench::now(bench::Clock::Wall) - start;
    fmt::print("{} examples, {} heads, {} permutations, adversarial search of {} steps\n\n{}", examples,
               table.heads.size(), permutations, steps, inspect::to_text(table));
    fmt::print("total {:.1f} s wall\n", total);
    return 0;
}
