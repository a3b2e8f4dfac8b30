// What `train` snapshots over training: probes of the first held-out examples for
// inspect::AttentionSnapshotter, run through the program's models.
#pragma once

#include "config.hpp"
#include "models.hpp"

#include "inspect/snapshot.hpp"

#include <cstdint>
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

/// Throws ValueError when `snapshots` (read from a run's snapshot file) cannot be what `train`
/// wrote for the run: a layout other than `layout`'s (snapshot_layout: another probe input or
/// target, a map of another module, layer or head, other labels or right alignment, a
/// prediction longer than the probe's output rows), a prediction token outside `vocab` (the
/// run's target vocabulary: the argmax tokens are its), a step after the `steps_done` the
/// run has trained, or, for a snapshot at `steps_done` itself (taken of the model the run
/// saved, which `layout` was taken of), predictions other than `layout`'s or weights more than
/// 1e-3 from them. The message names the snapshot, its step and what differs.
void check_run_snapshots(const std::vector<inspect::AttentionSnapshot>& snapshots, const Vocabulary& vocab,
                         std::int64_t steps_done, const inspect::AttentionSnapshot& layout);

/// Throws ValueError when the snapshot of the run's last step (`steps_done`) in `snapshots`,
/// where it has `layout`'s layout, holds predictions other than `layout`'s or weights more than
/// 1e-3 from them: it was taken of the model the run saved, so the model as loaded now (its
/// settings read from config.json) is not that model. The rest of check_run_snapshots is left
/// to the reader of the snapshots.
void check_last_snapshot_is_model(const std::vector<inspect::AttentionSnapshot>& snapshots,
                                  std::int64_t steps_done, const inspect::AttentionSnapshot& layout);

}  // namespace attograd::cli
