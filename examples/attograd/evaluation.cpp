// Held-out evaluation, alignment shares per head, attention maps and saliency of one input.
#include "evaluation.hpp"
#include "console.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/ops.hpp"
#include "data/text.hpp"
#include "inspect/rollout.hpp"
#include "inspect/saliency.hpp"
#include "nn/attention_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attograd::cli {

namespace {

/// Ids of rows the program made: held-out examples (checked when read), predictions (which may
/// hold <unk>) and labels padded with <pad>.
std::vector<std::vector<std::int64_t>> encode_all(const Vocabulary& vocab,
                                                  const std::vector<std::vector<std::string>>& sequences) {
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(sequences.size());
    for (const auto& s : sequences) out.push_back(vocab.lookup_indices(s));
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

/// The records of one teacher-forced forward.
std::vector<nn::RecordedAttention> record_forward(const Model& model, const Batch& batch) {
    NoGradGuard no_grad;
    nn::AttentionRecorder recorder(model);
    (void)model.forward(batch);
    return recorder.records();
}

/// `labels` padded with <pad> to `width` (the batch's padded length).
std::vector<std::string> padded(std::vector<std::string> labels, std::int64_t width) {
    labels.resize(static_cast<std::size_t>(std::max<std::int64_t>(width, std::ssize(labels))),
                  Vocabulary::pad);
    return labels;
}

}  // namespace

std::vector<std::int64_t> encode_tokens(const Vocabulary& vocab, const std::vector<std::string>& tokens,
                                        bool warn) {
    std::vector<std::string> unknown;
    auto ids = vocab.encode(tokens, &unknown);
    if (warn && !unknown.empty()) {
        std::vector<std::string> quoted;
        for (const auto& u : unknown) quoted.push_back(fmt::format("'{}'", data::printable(u)));
        output(stderr, "attograd: warning: {} not in the vocabulary, read as {}\n", data::join(quoted, ", "),
               Vocabulary::unk);
    }
    return ids;
}

std::string shown_text(std::string_view text) { return data::escape_control(excerpt(text, 60)); }

std::vector<std::string> read_input(const Task& task, const RunConfig& config, const std::string& text) {
    const std::string quoted = fmt::format("--input '{}'", shown_text(text));
    AG_CHECK(data::is_valid_utf8(text), ValueError, "{}: is not valid UTF-8 (bad bytes shown as \\xHH)",
             quoted);
    // Word-level: every ASCII whitespace character separates words, as a space does (a newline
    // from "$(cat file)" too). Other control characters (C0, DEL, C1) are invisible or drive the
    // terminal, and no training source holds one (nor, in a character-level task, a tab or
    // newline): refused, not read as <unk>.
    const bool words = !task.info().char_level;
    std::string normalised(data::strip_bom(text));  // as Task::tokenize, which drops a leading BOM
    for (char& c : normalised) {
        const bool space = c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
        if (words && space) c = ' ';
    }
    if (const std::string control = data::first_control(normalised); !control.empty()) {
        throw ValueError(fmt::format("{}: holds the control character {}{}", quoted, control,
                                     words ? "" : " (this task reads every character as a token)"));
    }
    auto source = task.tokenize(normalised);
    AG_CHECK(!source.empty(), ValueError, "{}: is empty", quoted);
    AG_CHECK(std::ssize(source) <= config.model.max_source_len, ValueError,
             "{}: has {} tokens; this model takes at most {}", quoted, source.size(),
             config.model.max_source_len);
    try {
        (void)encode_tokens(config.vocab, source, true);  // warns about unknown tokens once
    } catch (const ValueError& e) {                       // a reserved token written as a word
        throw ValueError(fmt::format("{}: {}", quoted, e.what()));
    }
    if (std::ssize(source) < config.model.min_source_len) {
        output(stderr,
               "attograd: warning: {} has {} token(s), fewer than any training source ({} or more); the "
               "model has not learned such inputs\n",
               quoted, source.size(), config.model.min_source_len);
    }
    return source;
}

std::string input_error(const std::function<void()>& body) {
    std::string error;
    try {
        body();
    } catch (const ValueError& e) {  // bad input (exit code 2 in run_cli too)
        error = e.what();
    } catch (const ResourceError& e) {  // e.g. a size that does not fit in memory
        error = e.what();
    }
    if (!error.empty()) output(stderr, "attograd: {}\n", data::escape_control(error));
    return error;
}

std::string prediction_line(const Task& task, const std::vector<std::string>& source,
                            const std::vector<std::string>& prediction,
                            const std::vector<std::string>& target) {
    // Escaped (data::escape_control), so that a prediction that differs from its target only by
    // an invisible character (U+200C, a variation selector) does not look the same as it.
    const auto shown = [&](const std::vector<std::string>& tokens) {
        return data::escape_control(task.detokenize(tokens));
    };
    std::string line = fmt::format("{} -> {}", shown(source), shown(prediction));
    if (target.empty()) return line;
    if (prediction == target) return line + "   (right)";
    return line + fmt::format("   (wrong, expected {})", shown(target));
}

std::string decoding_description(const DecodeSettings& decoding, const ModelConfig& config) {
    if (writes_per_input(config)) return "the most likely token at each position";
    if (decoding.beam <= 1) return "greedy decoding";
    if (decoding.length_penalty == 0.0) return fmt::format("beam search (beam {})", decoding.beam);
    return fmt::format("beam search (beam {}, length penalty {:g})", decoding.beam, decoding.length_penalty);
}

std::string example_maps_description(const ModelConfig& config) {
    return writes_per_input(config) ? "the model reading the input alone (no output is fed back)"
                                    : "the model fed its own prediction (free-running, as it wrote it)";
}

std::size_t eval_batch_size(const Model& model, const std::vector<Example>& examples) {
    double parameters = 0.0;
    for (const Tensor& p : model.parameters()) parameters += static_cast<double>(p.numel());
    std::size_t longest = 1;  // source and target tokens with <eos>
    for (const Example& e : examples) longest = std::max(longest, e.source.size() + e.target.size() + 1);
    const double fits = std::ldexp(1.0, 32) / std::max(1.0, parameters * static_cast<double>(longest));
    return static_cast<std::size_t>(std::clamp(fits, 1.0, 250.0));
}

Evaluation evaluate(const Model& model, const Vocabularies& vocab, const std::vector<Example>& examples,
                    const DecodeSettings& decoding, const std::function<void()>& between_batches) {
    Evaluation result;
    std::int64_t tokens = 0, right_tokens = 0, right_sequences = 0;
    const std::size_t batch = eval_batch_size(model, examples);
    for (std::size_t start = 0; start < examples.size(); start += batch) {
        if (between_batches) between_batches();
        const std::size_t end = std::min(examples.size(), start + batch);
        std::vector<std::vector<std::int64_t>> sources;
        for (std::size_t i = start; i < end; ++i) sources.push_back(vocab.source.encode(examples[i].source));
        const auto predicted = model.predict(sources, decoding);
        for (std::size_t i = start; i < end; ++i) {
            auto prediction = vocab.target.decode(predicted[i - start]);
            const auto& target = examples[i].target;
            for (std::size_t t = 0; t < target.size(); ++t)
                right_tokens += t < prediction.size() && prediction[t] == target[t];
            tokens += std::ssize(target);
            right_sequences += prediction == target;
            result.predictions.push_back(std::move(prediction));
        }
    }
    if (!examples.empty()) {
        result.token_accuracy =
            static_cast<double>(right_tokens) / static_cast<double>(std::max<std::int64_t>(tokens, 1));
        result.sequence_accuracy =
            static_cast<double>(right_sequences) / static_cast<double>(examples.size());
    }
    return result;
}

bool layer_has_alignment(const Model& model, const ModelConfig& config, std::int64_t layer) {
    return config.kind == "encoder" || model.attention_layers()[static_cast<std::size_t>(layer)].cross;
}

bool decoder_self_attention(const Model& model, const std::string& name) {
    const std::int64_t l = layer_index(model, name);
    return l >= 0 && model.attention_layers()[static_cast<std::size_t>(l)].over_outputs;
}

inspect::TokenLabels layer_labels(const Model& model, const ModelConfig& config, const std::string& name,
                                  const std::vector<std::string>& columns,
                                  const std::vector<std::string>& output_rows) {
    if (decoder_self_attention(model, name)) {
        // the decoder's inputs: <bos> y_1 .. y_m, one per output row
        std::vector<std::string> inputs{Vocabulary::bos};
        if (!output_rows.empty()) inputs.insert(inputs.end(), output_rows.begin(), output_rows.end() - 1);
        return {output_rows, inputs};
    }
    const std::int64_t l = layer_index(model, name);
    return {l >= 0 && layer_has_alignment(model, config, l) ? output_rows : columns, columns};
}

std::vector<HeadAlignment> alignment_by_head(const Model& model, const ModelConfig& config, const Task& task,
                                             const Vocabularies& vocab, const std::vector<Example>& examples,
                                             const std::vector<std::vector<std::string>>& predictions) {
    const auto& layers = model.attention_layers();
    std::vector<std::vector<double>> mass(layers.size());
    for (std::size_t l = 0; l < layers.size(); ++l)
        mass[l].assign(static_cast<std::size_t>(layers[l].heads), 0.0);
    std::int64_t rows = 0;
    const std::size_t batch = eval_batch_size(model, examples);
    for (std::size_t start = 0; start < examples.size(); start += batch) {
        const std::size_t end = std::min(examples.size(), start + batch);
        std::vector<std::vector<std::string>> sources, outputs;
        std::vector<std::vector<std::int64_t>> right;
        for (std::size_t i = start; i < end; ++i) {
            const auto align = task.alignment(examples[i]);
            if (!align) return {};
            sources.push_back(examples[i].source);
            outputs.push_back(predictions[i]);
            if (writes_per_input(config)) outputs.back().resize(examples[i].source.size(), Vocabulary::pad);
            right.push_back(*align);
        }
        const auto source_ids = encode_all(vocab.source, sources);
        const auto output_ids = encode_all(vocab.target, outputs);
        std::vector<Tensor> recorded(layers.size());  // the last call of each layer
        for (const auto& record : record_forward(model, model.make_batch(source_ids, &output_ids))) {
            const std::int64_t l = layer_index(model, record.name);
            if (l >= 0) recorded[static_cast<std::size_t>(l)] = record.weights;
        }
        for (std::size_t l = 0; l < layers.size(); ++l) {
            if (!recorded[l].defined() || !layer_has_alignment(model, config, static_cast<std::int64_t>(l)))
                continue;
            const Weights4 w = as_weights4(recorded[l]);
            for (std::int64_t i = 0; i < w.b; ++i) {
                const auto& r = right[static_cast<std::size_t>(i)];
                // Rows where the model wrote a token (not its <eos>, which has no source position).
                const auto written = static_cast<std::int64_t>(outputs[static_cast<std::size_t>(i)].size());
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
            out.push_back(
                {static_cast<std::int64_t>(l), layers[l].name, head,
                 rows > 0 ? mass[l][static_cast<std::size_t>(head)] / static_cast<double>(rows) : 0.0});
        }
    }
    return out;
}

inspect::InspectedExample inspect_example(const Model& model, const ModelConfig& config, const Task& task,
                                          const Vocabularies& vocab, const std::vector<std::string>& source,
                                          const std::vector<std::string>& target,
                                          const InspectOptions& options) {
    inspect::InspectedExample out;
    out.source = source;
    out.target = target;
    const std::vector<std::vector<std::int64_t>> source_ids{encode_tokens(vocab.source, source, false)};
    out.prediction = vocab.target.decode(model.predict(source_ids, options.decoding)[0]);
    std::vector<std::string> outputs = out.prediction;
    if (writes_per_input(config)) outputs.resize(source.size(), Vocabulary::pad);
    const std::vector<std::vector<std::int64_t>> output_ids{vocab.target.lookup_indices(outputs)};
    const Batch batch = model.make_batch(source_ids, &output_ids);

    // Labels: columns are the source as the model sees it; rows the outputs (+ <eos>) for
    // output-row layers, the source for the seq2seq encoder's self-attention. The batch may be
    // padded beyond them: label the padding, then crop every map to the real tokens.
    const auto columns = model.model_source(source);
    std::vector<std::string> output_rows = outputs;
    if (!writes_per_input(config)) output_rows.emplace_back(Vocabulary::eos);
    const std::int64_t source_width = batch.source.size(1);
    const std::int64_t output_width =
        batch.decoder_input.defined() ? batch.decoder_input.size(1) : source_width;
    const auto output_layer = [&](const std::string& name) {
        const std::int64_t l = layer_index(model, name);
        return l >= 0 && layer_has_alignment(model, config, l);
    };
    const inspect::LabelFunction labels = [&](const std::string& name) {
        const bool over_outputs = decoder_self_attention(model, name);
        const bool rows_are_outputs = over_outputs || output_layer(name);
        const inspect::TokenLabels l = layer_labels(model, config, name, columns, output_rows);
        return inspect::TokenLabels{
            .queries = padded(l.queries, rows_are_outputs ? output_width : source_width),
            .keys = padded(l.keys, over_outputs ? output_width : source_width)};
    };
    std::vector<std::int64_t> right;
    if (const auto align = task.alignment(Example{source, target.empty() ? out.prediction : target})) {
        for (const std::int64_t s : *align) right.push_back(model.source_column(s));
    }
    // Outlined: the rows of the prediction's tokens that have a target token; the share sums
    // them over every target token (alignment_share counts the rows a map lacks as 0). Without a
    // target the prediction's own tokens are the whole alignment: none is unreached.
    const auto written = std::ssize(outputs);
    if (target.empty() && std::ssize(right) > written) right.resize(static_cast<std::size_t>(written));
    const auto set_alignment = [&](inspect::AttentionMap& map) {
        const std::int64_t rows = std::min(written, map.rows());
        map.alignment_share = inspect::alignment_share(inspect::crop_map(map, rows, map.cols()), right);
        map.right.assign(right.begin(), right.begin() + std::min(rows, std::ssize(right)));
    };

    const auto records = record_forward(model, batch);
    for (auto& map : inspect::attention_maps(records, labels)) {
        const bool rows_are_outputs = output_layer(map.module);
        const inspect::TokenLabels real = layer_labels(model, config, map.module, columns, output_rows);
        map = inspect::crop_map(map, std::ssize(real.queries), std::ssize(real.keys));
        map.layer = layer_index(model, map.module);
        if (rows_are_outputs && !right.empty()) set_alignment(map);
        out.maps.push_back(std::move(map));
    }

    if (options.rollout || options.flow) {
        // The self-attention stack (the encoder's layers, in order) and, for seq2seq, the last
        // decoder layer's cross-attention on top: its queries are the outputs.
        std::vector<Tensor> stack;
        Tensor cross;
        for (const auto& info : model.attention_layers()) {
            Tensor last;
            for (const auto& record : records)
                if (record.name == info.name) last = record.weights;
            if (!last.defined() || info.over_outputs) continue;  // rollout and flow reach the source
            if (info.cross) {
                cross = last;
            } else {
                stack.push_back(last);
            }
        }
        const bool rows_are_outputs = cross.defined() || config.kind == "encoder";
        const inspect::TokenLabels top{.queries = cross.defined()    ? padded(output_rows, output_width)
                                                  : rows_are_outputs ? padded(output_rows, source_width)
                                                                     : padded(columns, source_width),
                                       .keys = padded(columns, source_width)};
        const auto finish = [&](inspect::AttentionMap map) {
            map = inspect::crop_map(map, std::ssize(rows_are_outputs ? output_rows : columns),
                                    std::ssize(columns));
            if (rows_are_outputs && !right.empty()) set_alignment(map);
            return map;
        };
        if (options.rollout) out.rollout = finish(inspect::rollout_map(stack, cross, top));
        if (options.flow) out.flow = finish(inspect::flow_map(stack, cross, top));
    }

    if (options.saliency) {
        // Gradient x input of each output's chosen logit with respect to the source token
        // embeddings (the model's own <eos> marker included as a column).
        const auto out_ids = vocab.target.lookup_indices(output_rows);
        const Tensor embedding = model.token_embedding(batch);  // [1, S, E]
        const std::int64_t s = embedding.size(1), e = embedding.size(2);
        const inspect::ScoreFunction chosen_logits = [&](const Tensor& x) {
            const ForwardResult result = model.forward(batch, reshape(x, {1, s, e}));
            const Tensor logits = reshape(narrow(result.logits, 1, 0, std::ssize(output_rows)),
                                          {std::ssize(output_rows), -1});  // [Tout, V]
            return reshape(gather(logits, 1, index_tensor(out_ids, {std::ssize(out_ids), 1})), {-1});
        };
        auto map = inspect::saliency(chosen_logits, reshape(embedding, {s, e}),
                                     {.queries = output_rows, .keys = padded(columns, s)});
        map = inspect::crop_map(map, map.rows(), std::ssize(columns));
        for (auto& head : out.maps) {
            if (output_layer(head.module))
                head.saliency_correlation = inspect::saliency_correlation(head, map);
        }
        out.saliency = std::move(map);
    }
    return out;
}

}  // namespace attograd::cli
