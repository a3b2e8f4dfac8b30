// What `train` snapshots over training: probes of the first held-out examples for
// inspect::AttentionSnapshotter, run through the program's models.
#pragma once

#include "config.hpp"
#include "models.hpp"

#include "inspect/snapshot.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attograd::cli {

/// The run directory's attention snapshots (written by `train`, read by `inspect`).
inline constexpr const char* snapshot_file = "attention_snapshots.safetensors";

/// Probes of the first `count` held-out examples of `task` (fewer when it has fewer). Each runs
/// `model` once, teacher-forced on the example's target (so every snapshot of a probe has the
/// same rows: the right output, + <eos> for seq2seq), and shows the argmax token of each row as
/// its prediction. Labels are those `inspect` draws (columns: the source as the model sees it;
/// rows: the outputs for layers whose rows are outputs, else the source), the padding of the
/// model's fixed-width batch cropped; where the task defines a right alignment, the output-row
/// layers get it. `model` and the target vocabulary (vocab.target) must outlive the probes.
std::vector<inspect::SnapshotProbe> snapshot_probes(const Model& model, const ModelConfig& config,
                                                    const Task& task, const Vocabularies& vocab,
                                                    std::int64_t count);

/// The probes `train` snapshots: the first this many held-out examples.
inline constexpr std::int64_t snapshot_probe_count = 3;

/// One snapshot of the run's probes (snapshot_probes with snapshot_probe_count) on `model` as
/// it is now: the layout every snapshot `train` wrote for the run has (the same probes, layers,
/// heads, labels and right alignments; only the weights and the predictions change with
/// training). Runs the probes' forwards once; draws no random numbers.
inspect::AttentionSnapshot snapshot_layout(Model& model, const ModelConfig& config, const Task& task,
                                           const Vocabularies& vocab);

/// What the model outputs for one of the run's probes, run as snapshot_probes runs it
/// (teacher-forced on the example's target).
struct ProbeOutput {
    std::vector<std::string> prediction;     ///< the argmax tokens, decoded (Vocabulary::decode)
    std::vector<std::vector<float>> logits;  ///< each output row's logits [V]
    double loss = 0.0;  ///< mean cross-entropy of the right output, nats per target token
};

/// The outputs of `model` for the first `count` held-out examples of `task` (the run's probes
/// first), each run as snapshot_probes runs a probe, in eval mode (the model's mode is put back).
/// Runs each one's forward once; draws no random numbers.
std::vector<ProbeOutput> probe_outputs(Model& model, const ModelConfig& config, const Task& task,
                                       const Vocabularies& vocab, std::int64_t count = snapshot_probe_count);

/// The held-out examples whose loss a run records at each save (progress.probe_losses): more than
/// the probes, so that an edit that changes the model's outputs elsewhere shows.
inline constexpr std::int64_t probe_loss_count = 32;

/// Rounding another CPU's kernels (or Eigen for LIBXSMM) may bring to a probe's logits and loss:
/// two logits this close tie (relative to the row's largest, at least 1), and two losses this close
/// (relative to the larger: a loss is a sum of terms each rounded relative to itself) are the same
/// model's.
inline constexpr float kProbeTieTolerance = 1e-4f;
inline constexpr double kProbeLossTolerance = 1e-4;

/// Whether `prediction` (tokens of the `target` vocabulary) is what `output` predicts, a row's
/// token being free to be any whose logit ties the row's largest within kProbeTieTolerance.
bool predicts_up_to_ties(const ProbeOutput& output, const std::vector<std::string>& prediction,
                         const Vocabulary& target);

/// Whether a probe loss recorded by one process and one computed now are the same model's
/// (within kProbeLossTolerance of the larger).
bool same_probe_loss(double recorded, double now);

/// Throws ValueError when `snapshots` (read from a run's snapshot file) cannot be what `train`
/// wrote for the run: a layout other than `layout`'s (snapshot_layout: another probe input or
/// target, a map of another module, layer or head, other labels or right alignment, a
/// prediction longer than the probe's output rows), a prediction token outside `vocab` (the
/// run's target vocabulary: the argmax tokens are its), a step after the `steps_done` the
/// run has trained, or, for a snapshot at `steps_done` itself (taken of the model the run
/// saved, which `layout` and `outputs` (probe_outputs) were taken of), predictions other than
/// `layout`'s (up to ties: predicts_up_to_ties) or weights more than 1e-3 from them. The message
/// names the snapshot, its step and what differs.
void check_run_snapshots(const std::vector<inspect::AttentionSnapshot>& snapshots, const Vocabulary& vocab,
                         std::int64_t steps_done, const inspect::AttentionSnapshot& layout,
                         const std::vector<ProbeOutput>& outputs);

/// Throws ValueError when the snapshot of the run's last step (`steps_done`) in `snapshots`,
/// where it has `layout`'s layout, holds predictions other than `layout`'s (up to ties, with
/// `outputs` and the target vocabulary `vocab`) or weights more than 1e-3 from them: it was taken
/// of the model the run saved, so the model as loaded now (its settings read from config.json) is
/// not that model. The rest of check_run_snapshots is left to the reader of the snapshots.
void check_last_snapshot_is_model(const std::vector<inspect::AttentionSnapshot>& snapshots,
                                  std::int64_t steps_done, const inspect::AttentionSnapshot& layout,
                                  const std::vector<ProbeOutput>& outputs, const Vocabulary& vocab);

/// As check_last_snapshot_is_model for the snapshot of step 0, taken before the first step of the
/// model the run's seed made: `layout` and `outputs` are that model's (before its weights were
/// loaded). A step-0 snapshot edited to other predictions or weights would show the untrained
/// model as something it was not.
void check_first_snapshot_is_seed_model(const std::vector<inspect::AttentionSnapshot>& snapshots,
                                        const inspect::AttentionSnapshot& layout,
                                        const std::vector<ProbeOutput>& outputs, const Vocabulary& vocab);

}  // namespace attograd::cli
