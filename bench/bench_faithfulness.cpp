// The faithfulness table (inspect/faithfulness_table.hpp) of a small model trained on the bundled
// keyword task: its 500 held-out examples, every head of a 2-layer, 4-head MultiHeadAttention
// stack, 100 permutations and the adversarial search; prints the table and the seconds each
// measure costs.
//
//   bench_faithfulness [--examples N] [--permutations P] [--steps S] [--train T] [--threads H]
//                      [--exact 1]
//
// --threads: heads summarised at once (FaithfulnessOptions::threads), 2 by default.
// --exact 1 also prints every head's values with 17 significant digits (to compare two builds'
// results bit for bit). The process's CPU time (every thread, getrusage) and the load average
// are printed beside the wall time: on a shared machine the wall time grows with the load.
//
// keyword's sources are 24 words, one of them a cue word whose topic is the label (data/keyword.hpp).
// The model reads them (learned token and position embeddings, two residual self-attention
// layers, E = 16) and predicts the topic at position 0; the explained query is row 0 and the
// right alignment is the cue's position.
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>

#include <sys/resource.h>

#include <cstdlib>

using namespace attograd;

namespace {

constexpr std::int64_t kWidth = 16;

struct KeywordModel : nn::Module {
    Tensor token, position, out_weight, out_bias;
    std::shared_ptr<nn::MultiHeadAttention> first, second;
    KeywordModel(std::int64_t vocab, std::int64_t length, Generator& gen) {
        token = register_parameter("token", randn({vocab, kWidth}, gen) * 0.5);
        position = register_parameter("position", randn({length, kWidth}, gen) * 0.5);
        out_weight = register_parameter("out_weight", randn({vocab, kWidth}, gen) * 0.25);
        out_bias = register_parameter("out_bias", zeros({vocab}));
        first = register_module("first",
                                std::make_shared<nn::MultiHeadAttention>(
                                    nn::MultiHeadAttentionOptions{.embed_dim = kWidth, .num_heads = 4}, gen));
        second = register_module(
            "second", std::make_shared<nn::MultiHeadAttention>(
                          nn::MultiHeadAttentionOptions{.embed_dim = kWidth, .num_heads = 4}, gen));
    }
    std::string type_name() const override { return "KeywordModel"; }
    Tensor embed(const Tensor& tokens) const { return embedding(token, tokens) + position; }
    // inputs [B, T, E] -> logits of position 0 [B, V]
    Tensor logits(const Tensor& x) const {
        Tensor h = x + first->forward(x, {.need_weights = false}).output;
        h = h + second->forward(h, {.need_weights = false}).output;
        return linear(select(h, 1, 0), out_weight, out_bias);
    }
};

// Sources [N, T] and labels [N] of examples as ids.
struct Encoded {
    Tensor tokens;
    std::vector<std::int64_t> labels;
};
Encoded encode(const std::vector<data::Example>& examples, const data::Vocabulary& vocab) {
    std::vector<std::int64_t> ids;
    Encoded out;
    for (const auto& e : examples) {
        const auto source = vocab.encode(e.source);
        ids.insert(ids.end(), source.begin(), source.end());
        out.labels.push_back(vocab.encode(e.target).front());
    }
    const auto n = static_cast<std::int64_t>(examples.size());
    out.tokens = index_tensor(ids, {n, static_cast<std::int64_t>(ids.size()) / n});
    return out;
}

// User + system CPU seconds of the whole process (every thread).
double process_cpu() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string exact(const std::optional<double>& v) {
    return v ? fmt::format("{:.17g}", *v) : std::string("-");
}

// Every field of every row with 17 significant digits.
void print_exact(const inspect::FaithfulnessTable& table) {
    for (const auto& h : table.heads)
        fmt::print("exact {} {}: {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n", h.head.layer,
                   h.head.head, exact(h.alignment), exact(h.entropy), exact(h.max_weight), exact(h.accuracy),
                   exact(h.knockout_accuracy), exact(h.tau_gradient), exact(h.tau_loo),
                   exact(h.permutation_median), exact(h.permutation_iqr), exact(h.adversarial_jsd),
                   exact(h.flip_top), exact(h.flip_random), exact(h.fraction_attention),
                   exact(h.fraction_gradient), exact(h.fraction_product), exact(h.fraction_random));
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t examples = bench::int_flag(argc, argv, "--examples", 500);
    const std::int64_t permutations = bench::int_flag(argc, argv, "--permutations", 100);
    const std::int64_t steps = bench::int_flag(argc, argv, "--steps", 300);
    const std::int64_t train_steps = bench::int_flag(argc, argv, "--train", 300);
    const std::int64_t threads = bench::int_flag(argc, argv, "--threads", 2);
    const bool exact_values = bench::int_flag(argc, argv, "--exact", 0) != 0;
    const auto task = data::make_task("keyword");
    const data::Vocabulary vocab(task->symbols());
    const std::int64_t length = task->info().max_source_len;
    Generator gen(1);
    KeywordModel model(vocab.size(), length, gen);
    {  // a short training run so that the heads attend to something
        optim::Adam adam(model.parameters(), {.lr = 1e-2});
        const double start = bench::now(bench::Clock::Wall);
        double loss_value = 0;
        for (std::int64_t step = 0; step < train_steps; ++step) {
            const Encoded batch = encode(task->train_examples(64, gen), vocab);
            const Tensor loss = cross_entropy(model.logits(model.embed(batch.tokens)),
                                              index_tensor(batch.labels, {std::ssize(batch.labels)}));
            adam.zero_grad();
            loss.backward();
            adam.step();
            loss_value = loss.item();
        }
        fmt::print("training: {} steps of 64 in {:.1f} s, last loss {:.3f}\n", train_steps,
                   bench::now(bench::Clock::Wall) - start, loss_value);
    }
    model.eval();
    const auto& held_out = task->held_out();
    const std::vector<data::Example> measured(
        held_out.begin(), held_out.begin() + std::min<std::ptrdiff_t>(examples, std::ssize(held_out)));
    const Encoded encoded = encode(measured, vocab);
    inspect::FaithfulnessData data{
        .inputs = model.embed(encoded.tokens).detach(), .labels = encoded.labels, .alignment = {}};
    for (const auto& e : measured) data.alignment.push_back(task->alignment(e)->front());
    const inspect::ExplainedModel explained{
        .model = &model,
        .probabilities = [&](const Tensor& x) { return softmax(model.logits(x), -1); },
        .query = 0};
    const double start = bench::now(bench::Clock::Wall), cpu_start = bench::now(bench::Clock::ThreadCpu),
                 process_start = process_cpu();
    const inspect::FaithfulnessTable table =
        inspect::faithfulness_table(explained, data,
                                    {.heads = {},
                                     .permutations = permutations,
                                     .adversarial_options = {.steps = steps},
                                     .chunk = 64,
                                     .threads = threads});
    const double total = bench::now(bench::Clock::Wall) - start;
    const double cpu = bench::now(bench::Clock::ThreadCpu) - cpu_start;
    const double process = process_cpu() - process_start;
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    fmt::print(
        "{} held-out examples of {}, {} heads, {} permutations, adversarial search of {} steps, {} "
        "threads\n\n{}",
        measured.size(), task->info().name, table.heads.size(), permutations, steps, threads,
        inspect::to_text(table));
    if (exact_values) print_exact(table);
    // On a shared machine the wall time grows with the load; the CPU times do not.
    fmt::print(
        "total {:.1f} s wall, {:.1f} s CPU of the process, {:.1f} s CPU of the calling thread; load "
        "average {:.2f} {:.2f} {:.2f}\n",
        total, process, cpu, load[0], load[1], load[2]);
    return 0;
}
