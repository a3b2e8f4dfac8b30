// Held-out evaluation, alignment shares per head, attention maps and saliency of one input.
#include "evaluation.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/attention_recorder.hpp"
#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attograd::cli {

namespace {

constexpr std::size_t eval_batch = 250;

std::vector<std::vector<std::int64_t>> encode_all(const Vocabulary& vocab,
                                                  const std::vector<std::vector<std::string>>& sequences) {
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(sequences.size());
    for (const auto& s : sequences) out.push_back(vocab.encode(s));
    return out;
}

/// Recorded weights of one call as [B, h, Tq, Tk] values with their sizes.
struct Weights4 {
    std::int64_t b = 0, h = 0, tq = 0, tk = 0;
    std::vector<float> values;
    double at(std::int64_t i, std::int64_t head, std::int64_t q, std::int64_t k) const {
        return values[static_cast<std::size_t>(((i * h + head) * tq + q) * tk + k)];
    }
};

Weights4 as_weights4(const Tensor& w) {
    AG_ASSERT(w.dim() == 3 || w.dim() == 4, "recorded attention weights of rank {}", w.dim());
    Weights4 out;
    out.b = w.size(0);
    out.h = w.dim() == 4 ? w.size(1) : 1;
    out.tq = w.size(-2);
    out.tk = w.size(-1);
    out.values = to_dtype(w, DType::Float32).to_vector<float>();
    return out;
}

std::int64_t layer_index(const Model& model, const std::string& name) {
    const auto& layers = model.attention_layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (layers[i].name == name) return static_cast<std::int64_t>(i);
    }
    return -1;
}

/// The last recorded weights of every attention layer, by layer index.
std::vector<Tensor> record_forward(const Model& model, const Batch& batch, const Knockout& knockout) {
    NoGradGuard no_grad;
    nn::AttentionRecorder recorder(model);
    (void)model.forward(batch, knockout);
    std::vector<Tensor> out(model.attention_layers().size());
    for (const auto& record : recorder.records()) {
        const std::int64_t i = layer_index(model, record.name);
        if (i >= 0) out[static_cast<std::size_t>(i)] = record.weights;
    }
    return out;
}

std::vector<double> ranks(const std::vector<double>& x) {
    std::vector<std::size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
        const double average = (static_cast<double>(i) + static_cast<double>(j)) / 2.0;
        for (std::size_t k = i; k <= j; ++k) r[order[k]] = average;
        i = j + 1;
    }
    return r;
}

}  // namespace

std::vector<std::int64_t> encode_tokens(const Vocabulary& vocab, const std::vector<std::string>& tokens, bool warn) {
    std::vector<std::string> unknown;
    auto ids = vocab.encode(tokens, &unknown);
    if (warn && !unknown.empty()) {
        std::vector<std::string> quoted;
        for (const auto& u : unknown) quoted.push_back(fmt::format("'{}'", printable(u)));
        fmt::print(stderr, "attograd: warning: {} not in the vocabulary, read as {}\n", join(quoted, ", "),
                   Vocabulary::unk);
    }
    return ids;
}

Evaluation evaluate(const Model& model, const Vocabulary& vocab, const std::vector<Example>& examples,
                    const Knockout& knockout) {
    Evaluation result;
    std::int64_t tokens = 0, right_tokens = 0, right_sequences = 0;
    for (std::size_t start = 0; start < examples.size(); start += eval_batch) {
        const std::size_t end = std::min(examples.size(), start + eval_batch);
        std::vector<std::vector<std::int64_t>> sources;
        for (std::size_t i = start; i < end; ++i) sources.push_back(vocab.encode(examples[i].source));
        const auto predicted = model.predict(sources, knockout);
        for (std::size_t i = start; i < end; ++i) {
            auto prediction = vocab.decode(predicted[i - start]);
            const auto& target = examples[i].target;
            for (std::size_t t = 0; t < target.size(); ++t) right_tokens += t < prediction.size() && prediction[t] == target[t];
            tokens += std::ssize(target);
            right_sequences += prediction == target;
            result.predictions.push_back(std::move(prediction));
        }
    }
    if (!examples.empty()) {
        result.token_accuracy = static_cast<double>(right_tokens) / static_cast<double>(std::max<std::int64_t>(tokens, 1));
        result.sequence_accuracy = static_cast<double>(right_sequences) / static_cast<double>(examples.size());
    }
    return result;
}

bool layer_has_alignment(const Model& model, const ModelConfig& config, std::int64_t layer) {
    return config.kind == "encoder" || model.attention_layers()[static_cast<std::size_t>(layer)].cross;
}

std::vector<HeadAlignment> alignment_by_head(const Model& model, const ModelConfig& config, const Task& task,
                                             const Vocabulary& vocab, const std::vector<Example>& examples,
                                             const std::vector<std::vector<std::string>>& predictions,
                                             const Knockout& knockout) {
    const auto& layers = model.attention_layers();
    std::vector<std::vector<double>> mass(layers.size());
    for (std::size_t l = 0; l < layers.size(); ++l) mass[l].assign(static_cast<std::size_t>(layers[l].heads), 0.0);
    std::int64_t rows = 0;
    for (std::size_t start = 0; start < examples.size(); start += eval_batch) {
        const std::size_t end = std::min(examples.size(), start + eval_batch);
        std::vector<std::vector<std::string>> sources, outputs;
        std::vector<std::vector<std::int64_t>> right;
        for (std::size_t i = start; i < end; ++i) {
            const auto align = task.alignment(examples[i]);
            if (!align) return {};
            sources.push_back(examples[i].source);
            outputs.push_back(predictions[i]);
            if (config.kind == "encoder") outputs.back().resize(examples[i].source.size(), Vocabulary::pad);
            right.push_back(*align);
        }
        const auto source_ids = encode_all(vocab, sources);
        const auto output_ids = encode_all(vocab, outputs);
        const auto recorded = record_forward(model, model.make_batch(source_ids, &output_ids), knockout);
        for (std::size_t l = 0; l < layers.size(); ++l) {
            if (!recorded[l].defined() || !layer_has_alignment(model, config, static_cast<std::int64_t>(l))) continue;
            const Weights4 w = as_weights4(recorded[l]);
            for (std::int64_t i = 0; i < w.b; ++i) {
                const auto& r = right[static_cast<std::size_t>(i)];
                // Rows the model wrote: its tokens and the <eos> after them (seq2seq).
                const auto written = static_cast<std::int64_t>(outputs[static_cast<std::size_t>(i)].size()) +
                                     (config.kind == "encoder" ? 0 : 1);
                for (std::int64_t t = 0; t < std::ssize(r) && t < written && t < w.tq; ++t) {
                    const std::int64_t col = model.source_column(r[static_cast<std::size_t>(t)]);
                    for (std::int64_t head = 0; head < w.h; ++head) {
                        mass[l][static_cast<std::size_t>(head)] += w.at(i, head, t, col);
                    }
                }
            }
        }
        for (const auto& r : right) rows += std::ssize(r);
    }
    std::vector<HeadAlignment> out;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        if (!layer_has_alignment(model, config, static_cast<std::int64_t>(l))) continue;
        for (std::int64_t head = 0; head < layers[l].heads; ++head) {
            out.push_back({static_cast<std::int64_t>(l), layers[l].name, head,
                           rows > 0 ? mass[l][static_cast<std::size_t>(head)] / static_cast<double>(rows) : 0.0});
        }
    }
    return out;
}

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size() || a.size() < 2) return std::nullopt;
    const auto ra = ranks(a), rb = ranks(b);
    const double n = static_cast<double>(a.size());
    const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
    const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
    double sab = 0.0, saa = 0.0, sbb = 0.0;
    for (std::size_t i = 0; i < ra.size(); ++i) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    if (saa == 0.0 || sbb == 0.0) return std::nullopt;
    return sab / std::sqrt(saa * sbb);
}

InspectedExample inspect_example(const Model& model, const ModelConfig& config, const Task& task,
                                 const Vocabulary& vocab, const std::vector<std::string>& source,
                                 const std::vector<std::string>& target, const Knockout& knockout, bool saliency) {
    InspectedExample out;
    out.source = source;
    out.target = target;
    const std::vector<std::vector<std::int64_t>> source_ids{encode_tokens(vocab, source, false)};
    out.prediction = vocab.decode(model.predict(source_ids, knockout)[0]);
    std::vector<std::string> outputs = out.prediction;
    if (config.kind == "encoder") outputs.resize(source.size(), Vocabulary::pad);
    const std::vector<std::vector<std::int64_t>> output_ids{vocab.encode(outputs)};
    const Batch batch = model.make_batch(source_ids, &output_ids);

    // Labels: columns are the source as the model sees it; rows the outputs (+ <eos>) for
    // output-row layers, the source for the seq2seq encoder's self-attention.
    const auto columns = model.model_source(source);
    std::vector<std::string> output_rows = outputs;
    if (config.kind != "encoder") output_rows.emplace_back(Vocabulary::eos);
    std::vector<std::int64_t> right;
    if (const auto align = task.alignment(Example{source, target.empty() ? out.prediction : target})) {
        for (const std::int64_t s : *align) right.push_back(model.source_column(s));
    }

    const auto recorded = record_forward(model, batch, knockout);
    const auto& layers = model.attention_layers();
    for (std::size_t l = 0; l < layers.size(); ++l) {
        if (!recorded[l].defined()) continue;
        const Weights4 w = as_weights4(recorded[l]);
        const bool output_rows_layer = layer_has_alignment(model, config, static_cast<std::int64_t>(l));
        const auto& rows = output_rows_layer ? output_rows : columns;
        for (std::int64_t head = 0; head < w.h; ++head) {
            AttentionMap map;
            map.module = layers[l].name;
            map.layer = static_cast<std::int64_t>(l);
            map.head = head;
            map.queries.assign(rows.begin(), rows.begin() + std::min<std::int64_t>(std::ssize(rows), w.tq));
            map.keys.assign(columns.begin(), columns.begin() + std::min<std::int64_t>(std::ssize(columns), w.tk));
            for (std::int64_t q = 0; q < map.rows(); ++q) {
                for (std::int64_t k = 0; k < map.cols(); ++k) map.weights.push_back(w.at(0, head, q, k));
            }
            if (output_rows_layer && !right.empty()) {
                map.right = right;
                map.alignment_share = alignment_share(map, right);
            }
            out.maps.push_back(std::move(map));
        }
    }

    if (saliency) {
        // Gradient x input (Shrikumar et al. 2016; Denil et al. 2014) of each output's chosen
        // logit with respect to the source token embeddings: |sum_e grad[s, e] * x[s, e]|,
        // each row normalised to sum 1.
        AttentionMap map;
        map.module = "saliency (gradient x input)";
        map.queries = output_rows;
        map.keys = columns;
        Tensor x = model.token_embedding(batch);
        x.requires_grad_(true);
        const std::int64_t e = x.size(2);
        const auto out_ids = vocab.encode(output_rows);
        for (std::int64_t t = 0; t < map.rows(); ++t) {
            x.zero_grad();
            const ForwardResult result = model.forward(batch, knockout, x);
            const Tensor chosen = narrow(narrow(narrow(result.logits, 0, 0, 1), 1, t, 1), 2,
                                         out_ids[static_cast<std::size_t>(t)], 1);
            sum(chosen).backward();
            const auto grad = to_dtype(x.grad(), DType::Float32).to_vector<float>();
            const auto value = to_dtype(x, DType::Float32).to_vector<float>();
            std::vector<double> row;
            for (std::int64_t s = 0; s < map.cols(); ++s) {
                double dot = 0.0;
                for (std::int64_t j = 0; j < e; ++j) {
                    dot += static_cast<double>(grad[static_cast<std::size_t>(s * e + j)]) *
                           value[static_cast<std::size_t>(s * e + j)];
                }
                row.push_back(std::abs(dot));
            }
            const double total = std::accumulate(row.begin(), row.end(), 0.0);
            for (double& v : row) v = total > 0.0 ? v / total : 0.0;
            map.weights.insert(map.weights.end(), row.begin(), row.end());
        }
        for (auto& head : out.maps) {
            if (!layer_has_alignment(model, config, head.layer)) continue;
            double total = 0.0;
            std::int64_t counted = 0;
            for (std::int64_t t = 0; t < std::min(head.rows(), map.rows()); ++t) {
                std::vector<double> a, s;
                for (std::int64_t k = 0; k < std::min(head.cols(), map.cols()); ++k) {
                    a.push_back(head.at(t, k));
                    s.push_back(map.at(t, k));
                }
                if (const auto rho = spearman(a, s)) {
                    total += *rho;
                    ++counted;
                }
            }
            if (counted > 0) head.saliency_correlation = total / static_cast<double>(counted);
        }
        out.saliency = std::move(map);
    }
    return out;
}

}  // namespace attograd::cli
