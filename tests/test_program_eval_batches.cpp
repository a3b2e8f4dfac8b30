// The attograd program's held-out evaluation runs in batches small enough for a large model
// that a Ctrl-C, checked between them, is answered within about a second; how the examples
// are batched changes no prediction.
#include "config.hpp"
#include "evaluation.hpp"
#include "models.hpp"

#include "core/generator.hpp"
#include "data/task.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace attograd;
using namespace attograd::cli;

namespace {

double parameter_count(const Model& model) {
    double count = 0.0;
    for (const Tensor& p : model.parameters()) count += static_cast<double>(p.numel());
    return count;
}

}  // namespace

TEST_CASE("evaluation batches shrink with the model and never change a prediction") {
    const auto task = data::make_task("reverse");
    RunConfig config = default_config(*task);
    const auto& held_out = task->held_out();
    Generator generator(3);
    const auto small = make_model(config.model, vocabularies(config), generator);
    CHECK(eval_batch_size(*small, held_out) == 250);

    config.model.embed_dim = 256;
    config.model.ffn_dim = 1024;
    config.model.layers = 3;
    config.model.decoder_layers = 3;
    const auto large = make_model(config.model, vocabularies(config), generator);
    large->eval();
    std::vector<Example> examples(held_out.begin(), held_out.begin() + 40);
    for (Example& e : examples)  // long examples: the source repeated
        for (int i = 0; i < 3; ++i) e.source.insert(e.source.end(), e.source.begin(), e.source.end());
    config.model.max_source_len = 200;
    const auto longer = make_model(config.model, vocabularies(config), generator);
    longer->eval();
    const std::size_t batch = eval_batch_size(*longer, examples);
    CHECK(batch < 250);
    CHECK(batch >= 1);
    std::size_t longest = 0;
    for (const Example& e : examples) longest = std::max(longest, e.source.size() + e.target.size() + 1);
    CHECK(static_cast<double>(batch) * parameter_count(*longer) * static_cast<double>(longest) <=
          std::ldexp(1.0, 32));

    // One batch of all, or batches of `batch`: the same predictions, example by example.
    const Evaluation batched = evaluate(*longer, vocabularies(config), examples);
    for (std::size_t i = 0; i < examples.size(); i += 7) {
        INFO("example " << i);
        const Evaluation alone = evaluate(*longer, vocabularies(config), {examples[i]});
        CHECK(alone.predictions.at(0) == batched.predictions.at(i));
    }
}
