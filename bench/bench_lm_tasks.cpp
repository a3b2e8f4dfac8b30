// The language-model tasks' figures: the induction phase change (held-out loss and each head's
// previous-token and induction score over training) and the character-level model on the
// installed fortunes (held-out loss and bits per character after a time budget, then a sample).
//
//   bench_lm_tasks induction [--seed S] [--steps N] [--every K]
//   bench_lm_tasks charlm [--seed S] [--seconds T] [--every K]
//
// induction: vocab 26, length 24, repeated segments of 6-12 tokens; two attention-only layers,
// d_model 64, 4 heads, RoPE; Adam lr 3e-3, batches of 32, gradient norm clipped to 1; scores on
// the first 128 held-out sequences; prints the first step at which the best layer-1 induction
// score passes 0.5. charlm: windows of 64 characters; two layers with feed-forward 256, d_model
// 64, 4 heads, learned positions; the same optimiser; loss on 128 held-out windows; then 300
// characters sampled at temperature 0.8 (seed 1) after the prompt "The ".
#include "attograd.hpp"
#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

using namespace attograd;

namespace {

// Examples of equal length as ids [B, T] and next-token targets [B, T].
std::pair<Tensor, Tensor> encode(const std::vector<data::Example>& examples, const data::Vocabulary& vocab) {
    const data::Batch batch = data::collate(examples, vocab);  // equal lengths: nothing padded
    return {batch.source.ids, batch.target.ids};
}

Tensor lm_loss(const nn::TransformerLM& model, const Tensor& x, const Tensor& y) {
    return cross_entropy(reshape(model.forward(x), {-1, model.options().vocab_size}), reshape(y, {-1}));
}

void print_scores(const char* label, const std::vector<double>& scores) {
    std::printf(" %s", label);
    for (const double s : scores) std::printf(" %.2f", s);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string which = bench::chosen_config(argc, argv, {"induction", "charlm"});
    const bool induction = which != "charlm";
    const auto seed = static_cast<std::uint64_t>(bench::int_flag(argc, argv, "--seed", 0));
    const int steps = bench::int_flag(argc, argv, "--steps", induction ? 1500 : 1000000);
    const int seconds = bench::int_flag(argc, argv, "--seconds", induction ? 1000000 : 120);
    const int every = bench::int_flag(argc, argv, "--every", induction ? 50 : 250);

    const auto task = induction ? data::make_induction_task() : data::make_charlm_task({.context = 64});
    const data::Vocabulary vocab(task->symbols());
    Generator generator(seed);
    nn::TransformerLM model({.vocab_size = vocab.size(),
                             .max_len = task->info().max_source_len,
                             .d_model = 64,
                             .nhead = 4,
                             .num_layers = 2,
                             .dim_feedforward = induction ? 0 : 256,
                             .positional = induction ? nn::Positional::Rotary : nn::Positional::None},
                            generator);
    optim::Adam adam(model.parameters(), {.lr = 3e-3});
    const std::vector<data::Example> held(task->held_out().begin(), task->held_out().begin() + 128);
    const auto [hx, hy] = encode(held, vocab);

    int passed = -1;
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0;; ++step) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool last = step == steps || elapsed > seconds;
        if (step % every == 0 || last) {
            NoGradGuard no_grad;
            model.eval();
            nn::AttentionRecorder recorder(model);
            const double loss = lm_loss(model, hx, hy).item();
            std::printf("step %5d  %6.1f s  held-out loss %.3f (%.2f bits/token)", step, elapsed, loss,
                        loss / std::log(2.0));
            if (induction) {
                double best = 0.0;
                for (int l = 0; l < 2; ++l) {
                    const Tensor w = recorder.weights(fmt::format("encoder.layers.{}.self_attn", l)).at(0);
                    std::printf("  L%d", l);
                    print_scores("prev", inspect::previous_token_scores(w));
                    const auto scores = inspect::induction_scores(w, hx);
                    print_scores("ind", scores);
                    if (l == 1) best = *std::max_element(scores.begin(), scores.end());
                }
                if (passed < 0 && best > 0.5) passed = step;
            }
            std::printf("\n");
            std::fflush(stdout);
            model.train();
        }
        if (last) break;
        const auto [x, y] = encode(task->train_examples(32, generator), vocab);
        adam.zero_grad();
        lm_loss(model, x, y).backward();
        optim::clip_grad_norm(model.parameters(), 1.0);
        adam.step();
    }
    if (induction) std::printf("best layer-1 induction score first above 0.5 at step %d\n", passed);
    if (!induction) {
        model.eval();
        Generator sampler(1);
        const auto ids = nn::generate(
            model.next_token_logits(), vocab.encode(task->tokenize("The ")),
            {.max_new_tokens = 300, .max_context = 64, .sampling = {.temperature = 0.8}}, sampler);
        std::printf("sample: %s\n", task->detokenize(vocab.decode(ids)).c_str());
    }
}
