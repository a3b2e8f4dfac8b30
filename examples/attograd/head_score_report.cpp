// Previous-token and induction scores of a model's self-attention heads over held-out examples.
#include "head_score_report.hpp"

#include "core/autograd.hpp"
#include "inspect/head_scores.hpp"
#include "nn/attention_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::cli {

std::vector<HeadScore> held_out_head_scores(const Model& model, const Vocabulary& vocab, const Task& task,
                                            std::int64_t count) {
    const auto& held_out = task.held_out();
    const auto n = static_cast<std::size_t>(std::clamp<std::int64_t>(count, 0, std::ssize(held_out)));
    std::vector<std::vector<std::int64_t>> sources;
    for (std::size_t i = 0; i < n; ++i) sources.push_back(vocab.encode(held_out[i].source));
    const auto& layers = model.attention_layers();
    std::vector<HeadScore> out;
    if (sources.empty()) return out;
    const Batch batch = model.make_batch(sources, nullptr);
    NoGradGuard no_grad;
    nn::AttentionRecorder recorder(model);
    (void)model.forward(batch);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        if (layers[l].cross) continue;
        const std::vector<Tensor> weights = recorder.weights(layers[l].name);
        if (weights.empty()) continue;
        const auto previous = inspect::previous_token_scores(weights.back(), batch.key_padding_mask);
        const auto induction =
            inspect::induction_scores(weights.back(), batch.source, batch.key_padding_mask);
        for (std::size_t h = 0; h < previous.size(); ++h)
            out.push_back(
                {static_cast<std::int64_t>(l), static_cast<std::int64_t>(h), previous[h], induction[h]});
    }
    return out;
}

std::string head_score_line(const HeadScore& score) {
    std::string labels;
    if (score.previous_token >= head_label_threshold) labels += "previous-token head";
    if (score.induction >= head_label_threshold)
        labels += std::string(labels.empty() ? "" : ", ") + "induction head";
    return fmt::format("layer {} head {}: previous-token {:.2f}, induction {:.2f}{}", score.layer, score.head,
                       score.previous_token, score.induction, labels.empty() ? "" : " (" + labels + ")");
}

}  // namespace attograd::cli
