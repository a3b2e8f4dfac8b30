// Inspecting a model of your own with the inspect library: a two-layer self-attention model
// learns to reverse digits while an AttentionSnapshotter records how its attention forms; then
// its heads, attention rollout and flow, saliency and a head knockout go into one interactive
// HTML report. Run: build/examples/inspect_my_model [report.html]
#include "attograd.hpp"

using namespace attograd;

namespace {

constexpr std::int64_t T = 8, V = 10, E = 32;

/// tokens [B, T] -> logits [B, T, V]: token + position embeddings, two residual multi-head
/// self-attention layers ("attn0", "attn1"), a linear read-out.
class Reverser : public nn::Module {
public:
    explicit Reverser(Generator& gen) {
        tokens_ = register_module("tokens", std::make_shared<nn::Embedding>(nn::EmbeddingOptions{.num_embeddings = V, .embedding_dim = E}, gen));
        positions_ = register_module("positions", std::make_shared<nn::Embedding>(nn::EmbeddingOptions{.num_embeddings = T, .embedding_dim = E}, gen));
        attn0_ = register_module("attn0", std::make_shared<nn::MultiHeadAttention>(nn::MultiHeadAttentionOptions{.embed_dim = E, .num_heads = 2}, gen));
        attn1_ = register_module("attn1", std::make_shared<nn::MultiHeadAttention>(nn::MultiHeadAttentionOptions{.embed_dim = E, .num_heads = 2}, gen));
        out_ = register_module("out", std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = E, .out_features = V}, gen));
    }
    std::string type_name() const override { return "Reverser"; }

    /// The token embeddings [B, T, E] of `x` (what saliency differentiates with respect to).
    Tensor embed(const Tensor& x) const { return tokens_->forward(x); }
    /// Logits [B, T, V] from token embeddings [B, T, E].
    Tensor forward_embedded(const Tensor& embedded) const {
        Tensor h = embedded + positions_->forward(arange(T));
        h = h + attn0_->forward(h, {.need_weights = false}).output;
        h = h + attn1_->forward(h, {.need_weights = false}).output;
        return out_->forward(h);
    }
    Tensor forward(const Tensor& x) const { return forward_embedded(embed(x)); }

private:
    std::shared_ptr<nn::Embedding> tokens_, positions_;
    std::shared_ptr<nn::MultiHeadAttention> attn0_, attn1_;
    std::shared_ptr<nn::Linear> out_;
};

std::vector<std::string> digits_of(const Tensor& row) {
    std::vector<std::string> out;
    for (const std::int64_t d : row.to_vector<std::int64_t>()) out.push_back(std::to_string(d));
    return out;
}

/// Share of sequences reversed exactly.
double accuracy(const Reverser& model, const Tensor& x, const Tensor& reversed) {
    NoGradGuard no_grad;
    const auto predicted = argmax(model.forward(x), 2).to_vector<std::int64_t>();
    const auto expected = index_select(x, 1, reversed).to_vector<std::int64_t>();
    std::int64_t right = 0;
    for (std::size_t b = 0; b < predicted.size(); b += T)
        right += std::equal(predicted.begin() + b, predicted.begin() + b + T, expected.begin() + b);
    return static_cast<double>(right) / static_cast<double>(x.size(0));
}

}  // namespace

int main(int argc, char** argv) {
    Generator gen(0);
    Reverser model(gen);
    optim::Adam adam(model.parameters(), {.lr = 1e-2});
    const Tensor reversed = index_tensor({7, 6, 5, 4, 3, 2, 1, 0}, {T});
    const Tensor probe = randint(0, V, {1, T}, gen), held_out = randint(0, V, {500, T}, gen);
    const std::vector<std::string> digits = digits_of(probe);
    const inspect::TokenLabels labels{.queries = digits, .keys = digits};
    std::vector<std::int64_t> anti_diagonal;  // the right key of output t is input T-1-t
    for (std::int64_t t = 0; t < T; ++t) anti_diagonal.push_back(T - 1 - t);

    // Watch attention learn: the probe's attention every 20 steps.
    inspect::AttentionSnapshotter snapshotter(
        model,
        {{.forward = [&] { return digits_of(argmax(model.forward(probe), 2)); },
          .labels = [&](const std::string&) { return labels; },
          .right = {{"attn1", anti_diagonal}},
          .source = digits}},
        {.every = 20});
    inspect::Series loss_curve{.name = "training loss", .colour = "#c0392b"};
    for (std::int64_t step = 0; step < 300; ++step) {
        snapshotter.maybe_snapshot(step);
        const Tensor x = randint(0, V, {64, T}, gen);
        const Tensor loss = cross_entropy(reshape(model.forward(x), {-1, V}), reshape(index_select(x, 1, reversed), {-1}));
        adam.zero_grad();
        loss.backward();
        adam.step();
        loss_curve.x.push_back(static_cast<double>(step + 1));
        loss_curve.y.push_back(loss.item());
    }
    snapshotter.snapshot(300);

    // Inspect: every head of both layers, rollout and flow over the stack, saliency, knockout.
    nn::AttentionRecorder recorder(model);
    {
        NoGradGuard no_grad;
        (void)model.forward(probe);
    }
    inspect::InspectedExample example{.source = digits, .prediction = digits_of(argmax(model.forward(probe), 2))};
    example.maps = inspect::attention_maps(recorder.records(), labels);
    const std::vector<Tensor> stack = {recorder.weights("attn0")[0], recorder.weights("attn1")[0]};
    example.rollout = inspect::rollout_map(stack, labels);
    example.flow = inspect::flow_map(stack, labels);
    const Tensor embedded = reshape(model.embed(probe).detach(), {T, E});
    const auto chosen_logits = [&](const Tensor& x) {  // the logit of each output's predicted digit
        const Tensor logits = reshape(model.forward_embedded(reshape(x, {1, T, E})), {T, V});
        return reshape(max(logits, 1).values, {T});
    };
    example.saliency = inspect::saliency(chosen_logits, embedded, labels);
    for (auto& map : example.maps) {
        if (map.module == "attn1") map.alignment_share = inspect::alignment_share(map, anti_diagonal);
        map.saliency_correlation = inspect::saliency_correlation(map, *example.saliency);
    }
    const double with_all_heads = accuracy(model, held_out, reversed);
    double without_head = 0.0;
    {
        inspect::HeadKnockout knockout(model, {{"attn1", {0}}});
        without_head = accuracy(model, held_out, reversed);
    }

    // The report: a handful of lines.
    inspect::Report report{.title = "my own model: reversing digits"};
    report.notes = {fmt::format("held-out accuracy {:.1f}%, {:.1f}% with head 0 of attn1 knocked out", 100 * with_all_heads,
                                100 * without_head)};
    report.charts = {{.title = "training loss", .x_label = "step", .y_label = "cross-entropy", .series = {loss_curve}}};
    report.alignment_legend = "right alignment: output t attends input T-1-t";
    report.examples = {example};
    report.snapshots = snapshotter.snapshots();
    const std::string path = argc > 1 ? argv[1] : "inspect_my_model.html";
    write_file_atomic(path, inspect::render_html(report));
    fmt::print("{}\nwrote {}\n", report.notes[0], path);
}
