// `attograd inspect --faithfulness`: the faithfulness table over held-out examples, one example
// (a batch of one) and one output position (a decision) at a time.
#include "faithfulness_run.hpp"

#include "evaluation.hpp"
#include "report_builder.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "inspect/faithfulness_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

namespace attograd::cli {

namespace {

using inspect::HeadFaithfulness;
using inspect::HeadId;

// Mean of the defined values.
struct Mean {
    double total = 0;
    std::int64_t count = 0;
    void add(const std::optional<double>& v) {
        if (v && !std::isnan(*v)) {
            total += *v;
            ++count;
        }
    }
    std::optional<double> value() const {
        return count > 0 ? std::optional<double>(total / static_cast<double>(count)) : std::nullopt;
    }
};

// One decision of one example: the output distribution at position `t` of the teacher-forced
// forward pass on (source, target), for any number of copies of the example's embeddings.
inspect::ExplainedModel decision_model(const Model& model, const std::vector<std::int64_t>& source,
                                       const std::vector<std::int64_t>& target, std::int64_t t,
                                       std::int64_t query) {
    auto batches = std::make_shared<std::map<std::int64_t, Batch>>();  // by number of copies
    auto probabilities = [&model, source, target, t, batches](const Tensor& x) {
        const std::int64_t copies = x.size(0);
        auto it = batches->find(copies);
        if (it == batches->end()) {
            const std::vector<std::vector<std::int64_t>> sources(static_cast<std::size_t>(copies), source),
                targets(static_cast<std::size_t>(copies), target);
            it = batches->emplace(copies, model.make_batch(sources, &targets)).first;
        }
        return softmax(select(model.forward(it->second, x).logits, 1, t), -1);
    };
    return {.model = &model, .probabilities = probabilities, .query = query};
}

// Heads measured at the same query row of a decision.
struct HeadGroup {
    std::vector<HeadId> heads;
};

// Per head, the decisions' rows summarised as faithfulness_table summarises examples.
HeadFaithfulness summarise(const HeadId& head, const std::vector<HeadFaithfulness>& rows) {
    Mean alignment, entropy, max_weight, accuracy, knockout, tau_g, tau_l, iqr, adversarial, flip_top,
        flip_random, f_att, f_grad, f_prod, f_rand;
    std::vector<double> medians;
    for (const auto& r : rows) {
        alignment.add(r.alignment);
        entropy.add(r.entropy);
        max_weight.add(r.max_weight);
        accuracy.add(r.accuracy);
        knockout.add(r.knockout_accuracy);
        tau_g.add(r.tau_gradient);
        tau_l.add(r.tau_loo);
        medians.push_back(r.permutation_median);
        iqr.add(r.permutation_iqr);
        adversarial.add(r.adversarial_jsd);
        flip_top.add(r.flip_top);
        flip_random.add(r.flip_random);
        f_att.add(r.fraction_attention);
        f_grad.add(r.fraction_gradient);
        f_prod.add(r.fraction_product);
        f_rand.add(r.fraction_random);
    }
    HeadFaithfulness h;
    h.head = head;
    h.alignment = alignment.value();
    h.entropy = entropy.value().value_or(0.0);
    h.max_weight = max_weight.value().value_or(0.0);
    h.accuracy = accuracy.value();
    h.knockout_accuracy = knockout.value();
    h.tau_gradient = tau_g.value();
    h.tau_loo = tau_l.value();
    h.permutation_median = medians.empty() ? 0.0 : inspect::quantile(medians, 0.5);
    h.permutation_iqr = iqr.value().value_or(0.0);
    h.adversarial_jsd = adversarial.value();
    h.flip_top = flip_top.value().value_or(0.0);
    h.flip_random = flip_random.value().value_or(0.0);
    h.fraction_attention = f_att.value();
    h.fraction_gradient = f_grad.value();
    h.fraction_product = f_prod.value();
    h.fraction_random = f_rand.value();
    return h;
}

// The source column the answer layer's heads (mean weight) attend to most at the decision's row.
std::int64_t read_position(const inspect::ExplainedModel& m, const Tensor& inputs,
                           const AttentionLayerInfo& answer) {
    std::vector<double> mean;
    for (std::int64_t h = 0; h < answer.heads; ++h) {
        const auto seen = inspect::observe_head(m, inputs, {answer.name, h});
        const auto& w = seen.weights.front();
        mean.resize(w.size(), 0.0);
        for (std::size_t k = 0; k < w.size(); ++k) mean[k] += w[k];
    }
    return std::max_element(mean.begin(), mean.end()) - mean.begin();
}

void merge_evidence(std::optional<inspect::FaithfulnessEvidence>& into, inspect::FaithfulnessEvidence more) {
    if (!into) {
        into = std::move(more);
        return;
    }
    into->permutation_tvd.insert(into->permutation_tvd.end(), more.permutation_tvd.begin(),
                                 more.permutation_tvd.end());
    into->adversarial_jsd.insert(into->adversarial_jsd.end(), more.adversarial_jsd.begin(),
                                 more.adversarial_jsd.end());
    into->erasure.insert(into->erasure.end(), more.erasure.begin(), more.erasure.end());
}

}  // namespace

FaithfulnessRun faithfulness_over_held_out(const Model& model, const ModelConfig& config, const Task& task,
                                           const Vocabularies& vocab, std::int64_t samples,
                                           const FaithfulnessSettings& settings) {
    AG_CHECK(samples >= 1, ValueError, "faithfulness: samples must be >= 1, got {}", samples);
    const auto& layers = model.attention_layers();
    AG_CHECK(!layers.empty(), ValueError, "faithfulness: the model has no attention layer");
    const auto start = std::chrono::steady_clock::now();
    const std::string answer_name = answer_layer(layers);
    const AttentionLayerInfo& answer =
        *std::find_if(layers.begin(), layers.end(), [&](const auto& l) { return l.name == answer_name; });
    HeadGroup output_heads, source_heads;  // rows are output positions; rows are source positions
    std::vector<HeadId> order;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        // The decoder's self-attention weighs earlier outputs, not source tokens: the measures,
        // which perturb the source, do not apply to it.
        if (layers[l].over_outputs) continue;
        HeadGroup& group =
            layer_has_alignment(model, config, static_cast<std::int64_t>(l)) ? output_heads : source_heads;
        for (std::int64_t h = 0; h < layers[l].heads; ++h) {
            group.heads.push_back({layers[l].name, h});
            order.push_back({layers[l].name, h});
        }
    }
    inspect::FaithfulnessOptions options{.permutations = settings.permutations,
                                         .adversarial_options = {.steps = settings.adversarial_steps},
                                         .seed = settings.seed};
    std::map<std::pair<std::string, std::int64_t>, std::vector<HeadFaithfulness>> rows;
    FaithfulnessRun result;
    const auto& held_out = task.held_out();
    const bool fixed_length = std::all_of(held_out.begin(), held_out.end(), [&](const Example& e) {
        return e.target.size() == held_out.front().target.size();
    });
    for (std::int64_t e = 0; e < samples && e < std::ssize(held_out); ++e) {
        const Example& example = held_out[static_cast<std::size_t>(e)];
        const auto source = encode_tokens(vocab.source, example.source, false);
        const auto target = encode_tokens(vocab.target, example.target, false);
        const std::vector<std::vector<std::int64_t>> sources{source}, targets{target};
        const Batch batch = model.make_batch(sources, &targets);
        const Tensor inputs = model.token_embedding(batch);          // [1, S, E]
        const auto labels = batch.target.to_vector<std::int64_t>();  // [1, T]
        const auto align = task.alignment(example);
        // seq2seq: the target tokens, and <eos> where the held-out targets differ in length (where
        // they do not, as for a one-token label, its place is no decision); encoder: one output per
        // source token
        const auto decisions = static_cast<std::int64_t>(example.target.size()) +
                               (config.kind == "encoder" || fixed_length ? 0 : 1);
        for (std::int64_t t = 0; t < decisions; ++t) {
            const auto label = labels[static_cast<std::size_t>(t)];
            const auto m = decision_model(model, source, target, t, t);
            inspect::FaithfulnessData data{.inputs = inputs, .labels = {label}};
            if (align && t < std::ssize(*align))
                data.alignment = {model.source_column((*align)[static_cast<std::size_t>(t)])};
            auto measure = [&](const HeadGroup& group, const inspect::ExplainedModel& em,
                               const inspect::FaithfulnessData& d) {
                if (group.heads.empty()) return;
                options.heads = group.heads;
                ++options.seed;  // fresh draws per decision
                auto table = inspect::faithfulness_table(em, d, options);
                for (auto& row : table.heads) rows[{row.head.layer, row.head.head}].push_back(std::move(row));
                for (const auto& [part, s] : table.seconds) result.table.seconds[part] += s;
            };
            measure(output_heads, m, data);
            if (!source_heads.heads.empty()) {
                const auto read = decision_model(model, source, target, t, read_position(m, inputs, answer));
                measure(source_heads, read, {.inputs = inputs, .labels = {label}});
            }
            if (settings.evidence) {
                std::vector<std::string> keys = model.model_source(example.source);
                keys.resize(static_cast<std::size_t>(inputs.size(1)), Vocabulary::pad);
                merge_evidence(result.evidence,
                               inspect::faithfulness_evidence(m, inputs, {answer.name, 0}, 0, keys, options));
            }
            ++result.decisions;
        }
        ++result.examples;
    }
    result.table.epsilon = options.adversarial_options.epsilon;
    for (const HeadId& head : order) {
        HeadFaithfulness h = summarise(head, rows[{head.layer, head.head}]);
        h.verdict = inspect::faithfulness_verdict(h, result.table.epsilon);
        const std::int64_t uniform = config.uniform_attention;
        if (uniform >= 0 && uniform < std::ssize(layers) &&
            head.layer == layers[static_cast<std::size_t>(uniform)].name)
            h.verdict += fmt::format(
                "; the layer attends uniformly (trained with --uniform-attention {}): its weights say "
                "nothing "
                "of the input",
                uniform);
        result.table.heads.push_back(std::move(h));
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace attograd::cli
