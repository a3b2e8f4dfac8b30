// What `train` snapshots over training: probes of the first held-out examples for
// inspect::AttentionSnapshotter, run through the program's models.
#include "snapshot_probes.hpp"

#include "evaluation.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/ops.hpp"
#include "data/text.hpp"
#include "inspect/snapshot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

namespace attograd::cli {

namespace {

// The probe's model input: the example alone, teacher-forced on its target.
Batch probe_batch(const Model& model, const Vocabularies& vocab, const Example& example) {
    const std::vector<std::vector<std::int64_t>> sources{vocab.source.encode(example.source)},
        targets{vocab.target.encode(example.target)};
    return model.make_batch(sources, &targets);
}

// The probe's output rows: the target (+ <eos>, which the seq2seq decoder also writes).
std::vector<std::string> probe_rows(const ModelConfig& config, const Example& example) {
    std::vector<std::string> rows = example.target;
    if (!writes_per_input(config)) rows.emplace_back(Vocabulary::eos);
    return rows;
}

// The argmax id of each of the first `rows` rows of logits [1, T, V].
std::vector<std::int64_t> argmax_rows(const Tensor& logits, std::int64_t rows) {
    const Tensor l = to_dtype(logits, DType::Float32);
    const std::int64_t v = l.size(-1);
    const float* data = l.data<float>();
    std::vector<std::int64_t> ids;
    for (std::int64_t t = 0; t < std::min(rows, l.size(1)); ++t)
        ids.push_back(std::max_element(data + t * v, data + (t + 1) * v) - (data + t * v));
    return ids;
}

}  // namespace

std::vector<inspect::SnapshotProbe> snapshot_probes(const Model& model, const ModelConfig& config,
                                                    const Task& task, const Vocabularies& vocab,
                                                    std::int64_t count) {
    const auto& held_out = task.held_out();
    const auto& layers = model.attention_layers();
    std::vector<inspect::SnapshotProbe> probes;
    for (std::size_t i = 0; i < held_out.size() && std::ssize(probes) < count; ++i) {
        const Example& example = held_out[i];
        const Batch batch = probe_batch(model, vocab, example);
        auto output_rows = std::make_shared<std::vector<std::string>>(probe_rows(config, example));
        const auto columns = model.model_source(example.source);
        std::map<std::string, bool> output_layers;
        auto labels = std::make_shared<std::map<std::string, inspect::TokenLabels>>();
        for (std::size_t l = 0; l < layers.size(); ++l) {
            output_layers[layers[l].name] = layer_has_alignment(model, config, static_cast<std::int64_t>(l));
            (*labels)[layers[l].name] = layer_labels(model, config, layers[l].name, columns, *output_rows);
        }

        inspect::SnapshotProbe probe;
        probe.source = example.source;
        probe.target = example.target;
        probe.crop = true;
        probe.labels = [labels, columns](const std::string& name) {
            const auto it = labels->find(name);
            return it != labels->end() ? it->second : inspect::TokenLabels{columns, columns};
        };
        const auto rows = static_cast<std::int64_t>(output_rows->size());
        probe.forward = [&model, &target_vocab = vocab.target, batch, rows] {
            return target_vocab.decode(argmax_rows(model.forward(batch).logits, rows));
        };
        if (const auto align = task.alignment(example)) {
            std::vector<std::int64_t> right;
            for (const std::int64_t s : *align) right.push_back(model.source_column(s));
            for (const auto& [name, outputs] : output_layers) {
                if (outputs) probe.right[name] = right;
            }
        }
        probes.push_back(std::move(probe));
    }
    return probes;
}

inspect::AttentionSnapshot snapshot_layout(Model& model, const ModelConfig& config, const Task& task,
                                           const Vocabularies& vocab) {
    auto probes = snapshot_probes(model, config, task, vocab, snapshot_probe_count);
    if (probes.empty()) return {};
    inspect::AttentionSnapshotter snapshotter(model, std::move(probes), {.every = 0});
    return snapshotter.snapshot(0);
}

std::vector<ProbeOutput> probe_outputs(Model& model, const ModelConfig& config, const Task& task,
                                       const Vocabularies& vocab, std::int64_t count) {
    NoGradGuard no_grad;
    // In eval mode (no dropout, hard attention's argmax), as the snapshots; the program's models
    // take one mode throughout, which is put back.
    struct EvalMode {
        Model& model;
        const bool was_training = model.is_training();
        explicit EvalMode(Model& m) : model(m) { model.eval(); }
        ~EvalMode() { model.train(was_training); }
        EvalMode(const EvalMode&) = delete;
        EvalMode& operator=(const EvalMode&) = delete;
    } eval_mode(model);
    const auto& held_out = task.held_out();
    std::vector<ProbeOutput> outputs;
    for (std::size_t i = 0; i < held_out.size() && std::ssize(outputs) < count; ++i) {
        const Batch batch = probe_batch(model, vocab, held_out[i]);
        const auto rows = static_cast<std::int64_t>(probe_rows(config, held_out[i]).size());
        const Tensor logits = to_dtype(model.forward(batch).logits, DType::Float32);  // [1, T, V]
        ProbeOutput out;
        out.prediction = vocab.target.decode(argmax_rows(logits, rows));
        const std::int64_t v = logits.size(-1);
        const float* data = logits.data<float>();
        for (std::int64_t t = 0; t < std::min(rows, logits.size(1)); ++t)
            out.logits.emplace_back(data + t * v, data + (t + 1) * v);
        out.loss = cross_entropy(reshape(to_dtype(logits, DType::Float64), {-1, v}),
                                 reshape(batch.target, {-1}), {.ignore_index = Vocabulary::pad_id})
                       .item();
        outputs.push_back(std::move(out));
    }
    return outputs;
}

bool predicts_up_to_ties(const ProbeOutput& output, const std::vector<std::string>& prediction,
                         const Vocabulary& target) {
    // decode's walk over the rows' tokens (skip <pad> and <bos>, stop at <eos>), where a row may
    // give any token whose logit ties its largest within the tolerance.
    std::size_t next = 0;  // the first token of `prediction` not yet matched
    for (const std::vector<float>& row : output.logits) {
        const float top = *std::max_element(row.begin(), row.end());
        const float floor = top - kProbeTieTolerance * std::max(1.0f, std::abs(top));
        const auto ties = [&](std::int64_t id) {
            return id >= 0 && id < std::ssize(row) && row[static_cast<std::size_t>(id)] >= floor;
        };
        if (next < prediction.size() && target.contains(prediction[next]) &&
            ties(target.id(prediction[next])))
            ++next;
        else if (next == prediction.size() && ties(Vocabulary::eos_id))
            return true;
        else if (!ties(Vocabulary::pad_id) && !ties(Vocabulary::bos_id))
            return false;
    }
    return next == prediction.size();
}

bool same_probe_loss(double recorded, double now) {
    return std::abs(recorded - now) <=
           kProbeLossTolerance * std::max(std::abs(recorded), std::abs(now)) + 1e-12;
}

namespace {

// Whether `got` has the layout of `want`: everything but the weights and the shares.
bool same_layout(const inspect::AttentionMap& got, const inspect::AttentionMap& want) {
    return got.module == want.module && got.layer == want.layer && got.head == want.head &&
           got.queries == want.queries && got.keys == want.keys && got.right == want.right;
}

// A snapshot taken at the run's last step was taken of the model the run saved: its
// predictions are the model's and its weights the model's within kSnapshotWeightTolerance
// (float32 storage, and another CPU's rounding, stay far inside it).
constexpr double kSnapshotWeightTolerance = 1e-3;

/// Which model a snapshot was taken of, in check_against_model's messages.
struct SnapshotModel {
    const char* taken;  ///< "taken at the run's last step"
    const char* model;  ///< "the model the run's seed made"
    const char* why;    ///< "this file was edited, or config.json's seed or model settings"
};
constexpr SnapshotModel saved_model{"taken at the run's last step",
                                    "that of model.safetensors under config.json's model settings",
                                    "a model setting in config.json was edited since, or this file and "
                                    "model.safetensors are not from one save"};
constexpr SnapshotModel seed_model{"taken before the first step", "the model the run's seed made",
                                   "this file was edited, or config.json's seed or model settings"};

void check_against_model(const inspect::InspectedExample& got, const inspect::InspectedExample& want,
                         const ProbeOutput& output, const Vocabulary& target, const std::string& where,
                         const SnapshotModel& of = saved_model) {
    AG_CHECK(got.prediction == want.prediction || predicts_up_to_ties(output, got.prediction, target),
             ValueError, "{}, {}: its prediction '{}' is not {} '{}' ({})", where, of.taken,
             data::escape_control(excerpt(data::join(got.prediction, " "), 80)), of.model,
             data::escape_control(excerpt(data::join(want.prediction, " "), 80)), of.why);
    for (std::size_t m = 0; m < got.maps.size(); ++m) {
        const auto& a = got.maps[m].weights;
        const auto& b = want.maps[m].weights;
        bool close = a.size() == b.size();
        for (std::size_t k = 0; close && k < a.size(); ++k)
            close = std::abs(a[k] - b[k]) <= kSnapshotWeightTolerance;
        AG_CHECK(close, ValueError, "{}, {}: map {} ('{}') holds weights other than {} ({})", where, of.taken,
                 m, data::escape_control(excerpt(got.maps[m].title(), 80)), of.model, of.why);
    }
}

}  // namespace

void check_run_snapshots(const std::vector<inspect::AttentionSnapshot>& snapshots, const Vocabulary& vocab,
                         std::int64_t steps_done, const inspect::AttentionSnapshot& layout,
                         const std::vector<ProbeOutput>& outputs) {
    // The steps are not checked against train.snapshot_every: --resume may change the period.
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        const inspect::AttentionSnapshot& snapshot = snapshots[i];
        AG_CHECK(snapshot.step <= steps_done, ValueError,
                 "snapshot {} has step {}, after the {} steps the run has trained (config.json's "
                 "progress.steps_done, or this file, was edited)",
                 i, snapshot.step, steps_done);
        AG_CHECK(snapshot.probes.size() == layout.probes.size(), ValueError,
                 "snapshot {} (step {}) has {} probes, where the run's held-out set gives {}", i,
                 snapshot.step, snapshot.probes.size(), layout.probes.size());
        for (std::size_t p = 0; p < snapshot.probes.size(); ++p) {
            const inspect::InspectedExample &got = snapshot.probes[p], &want = layout.probes[p];
            const auto where = fmt::format("snapshot {} (step {}), probe {}", i, snapshot.step, p);
            AG_CHECK(got.source == want.source && got.target == want.target, ValueError,
                     "{}: its input '{}' or target is not the run's held-out example '{}'", where,
                     data::escape_control(excerpt(data::join(got.source, " "), 80)),
                     data::escape_control(excerpt(data::join(want.source, " "), 80)));
            AG_CHECK(got.maps.size() == want.maps.size(), ValueError,
                     "{}: holds {} maps, where the model has {}", where, got.maps.size(), want.maps.size());
            for (std::size_t m = 0; m < got.maps.size(); ++m) {
                AG_CHECK(
                    same_layout(got.maps[m], want.maps[m]), ValueError,
                    "{}: map {} ('{}') is not the model's '{}': its layer, head, labels or right alignment "
                    "differ",
                    where, m, data::escape_control(excerpt(got.maps[m].title(), 80)),
                    data::escape_control(want.maps[m].title()));
            }
            // One predicted token per output row at most (decoding may stop at <eos> before).
            std::size_t rows = 0;
            for (const auto& map : want.maps) rows = std::max(rows, map.queries.size());
            AG_CHECK(got.prediction.size() <= rows, ValueError,
                     "{}: its prediction has {} tokens, more than the probe's {} output rows", where,
                     got.prediction.size(), rows);
            for (const std::string& token : got.prediction) {
                AG_CHECK(vocab.contains(token), ValueError,
                         "{}: prediction token '{}' is not in the run's vocabulary", where,
                         data::escape_control(token));
            }
            if (snapshot.step == steps_done) check_against_model(got, want, outputs.at(p), vocab, where);
        }
    }
}

namespace {

void check_snapshot_is_model(const std::vector<inspect::AttentionSnapshot>& snapshots, std::int64_t step,
                             const inspect::AttentionSnapshot& layout,
                             const std::vector<ProbeOutput>& outputs, const Vocabulary& vocab,
                             const SnapshotModel& of) {
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        const inspect::AttentionSnapshot& snapshot = snapshots[i];
        if (snapshot.step != step || snapshot.probes.size() != layout.probes.size()) continue;
        for (std::size_t p = 0; p < snapshot.probes.size(); ++p) {
            const inspect::InspectedExample &got = snapshot.probes[p], &want = layout.probes[p];
            const bool same = got.source == want.source && got.target == want.target &&
                              got.maps.size() == want.maps.size() &&
                              std::equal(got.maps.begin(), got.maps.end(), want.maps.begin(), same_layout);
            if (same)
                check_against_model(got, want, outputs.at(p), vocab,
                                    fmt::format("snapshot {} (step {}), probe {}", i, snapshot.step, p), of);
        }
    }
}

}  // namespace

void check_last_snapshot_is_model(const std::vector<inspect::AttentionSnapshot>& snapshots,
                                  std::int64_t steps_done, const inspect::AttentionSnapshot& layout,
                                  const std::vector<ProbeOutput>& outputs, const Vocabulary& vocab) {
    check_snapshot_is_model(snapshots, steps_done, layout, outputs, vocab, saved_model);
}

void check_first_snapshot_is_seed_model(const std::vector<inspect::AttentionSnapshot>& snapshots,
                                        const inspect::AttentionSnapshot& layout,
                                        const std::vector<ProbeOutput>& outputs, const Vocabulary& vocab) {
    check_snapshot_is_model(snapshots, 0, layout, outputs, vocab, seed_model);
}

}  // namespace attograd::cli
