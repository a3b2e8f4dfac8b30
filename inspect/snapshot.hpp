// Attention snapshots over training: fixed probe inputs recorded every N steps from a user's own
// training loop, and their file format (safetensors).
#pragma once

#include "core/atomic_file.hpp"
#include "inspect/recorded_maps.hpp"
#include "inspect/report.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attograd::inspect {

/// One fixed input whose attention every snapshot records.
struct SnapshotProbe {
    /// Runs the model on the probe input; the snapshotter's AttentionRecorder captures every
    /// attention layer it calls. Returns the output tokens to show with the maps (e.g. the
    /// argmax of teacher-forced logits), or {} when there is nothing to show. It runs under
    /// NoGradGuard with the model in eval mode, and must not draw from a generator the training
    /// uses (eval-mode layers draw nothing), so that snapshots leave the training run unchanged.
    std::function<std::vector<std::string>()> forward{};
    /// Token labels of each recorded layer (see attention_maps).
    LabelFunction labels{};
    /// When true, a layer's labels may be shorter than its Tq / Tk: the probe ran in a batch
    /// padded at the end (e.g. to a model's fixed width), and each map keeps only its first
    /// queries.size() rows and keys.size() columns. Labels longer than the weights are a
    /// ShapeError either way.
    bool crop = false;
    /// The right key column per query row, by layer name (AttentionMap::right), for the layers
    /// where the probe defines one; their maps get alignment_share(map, right).
    std::map<std::string, std::vector<std::int64_t>> right{};
    std::vector<std::string> source{};  ///< the input tokens, shown in the report
    std::vector<std::string> target{};  ///< the right output (may be empty)
};

/// When an AttentionSnapshotter snapshots, and how many snapshots it keeps.
struct SnapshotOptions {
    std::int64_t every = 10;  ///< period in steps: maybe_snapshot snapshots every N steps (0 = never)
    /// Most snapshots kept (0 = all). A snapshot that would exceed it doubles the period and
    /// drops the earlier snapshots off the new grid (step % every != 0; the first and the
    /// newest stay), repeating until it fits, so that a run of any length keeps between about
    /// max_snapshots / 2 and max_snapshots snapshots spread over all of it. Must be 0 or >= 2.
    std::int64_t max_snapshots = 0;
};

/// Records the attention of fixed probe inputs during training, for the report's step slider
/// and alignment-share-over-steps plot. Call it from your own loop:
///
///     inspect::AttentionSnapshotter snapshotter(model, {probe}, {.every = 50});
///     for (std::int64_t step = 0; step < steps; ++step) {
///         snapshotter.maybe_snapshot(step);        // steps 0, 50, 100, ...
///         ... forward, backward, optimizer.step() ...
///     }
///     snapshotter.snapshot(steps);                 // the trained model
///     inspect::save_snapshots(dir / "attention_snapshots.safetensors", snapshotter.snapshots());
///
/// A snapshot runs every probe's forward under NoGradGuard with `model` in eval mode inside an
/// nn::AttentionRecorder of `model`, then restores each module's training mode (also when a
/// forward throws). It draws no random numbers itself, so a run with snapshots gives the same
/// parameters, bit for bit, as one without.
class AttentionSnapshotter {
public:
    /// `model` must outlive the snapshotter. Throws ValueError when `probes` is empty, a probe
    /// has no forward or labels function, `options.every` < 0 or `options.max_snapshots` is
    /// negative or 1.
    AttentionSnapshotter(nn::Module& model, std::vector<SnapshotProbe> probes, SnapshotOptions options = {});

    /// Snapshots when every() > 0, `step` % every() == 0 (step 0 included) and `step` is after
    /// the last snapshot's step; returns whether it did. Throws ValueError when `step` < 0,
    /// and as snapshot().
    bool maybe_snapshot(std::int64_t step);
    /// Records every probe now, labelled `step` (optimizer steps taken so far), and returns the
    /// new snapshot (then thins the earlier ones, see SnapshotOptions::max_snapshots). Throws
    /// ValueError when `step` < 0 or is not after the last snapshot's step
    /// (snapshots are kept in step order), and what attention_maps / alignment_share throw
    /// (e.g. ValueError "no attention was recorded" when a probe's forward calls no attention
    /// layer of `model`, ShapeError when its labels do not fit the weights).
    const AttentionSnapshot& snapshot(std::int64_t step);

    /// Every snapshot so far, in step order (a resumed run's earlier ones first).
    const std::vector<AttentionSnapshot>& snapshots() const { return snapshots_; }
    /// Continues after `earlier` (a resumed run's saved snapshots, in step order): they come
    /// first in snapshots(), and steps up to their last one are not snapshotted again. Throws
    /// ValueError when snapshots were taken already, `earlier` is not in increasing step order or
    /// mixes inputs under one probe index (check_probe_inputs).
    /// More than max_snapshots are thinned as snapshot() does. `every`, when > 0, is the period
    /// the earlier run had reached (its every()), so that the resumed run snapshots and thins as
    /// the uninterrupted one would; it must be options.every times a power of two (ValueError).
    void resume(std::vector<AttentionSnapshot> earlier, std::int64_t every = 0);
    /// The period now: options.every, doubled each time max_snapshots made it thin.
    std::int64_t every() const { return every_; }

private:
    void thin();

    nn::Module* model_;
    std::vector<SnapshotProbe> probes_;
    std::int64_t every_, max_snapshots_;
    std::vector<AttentionSnapshot> snapshots_;
};

/// Throws ValueError unless every probe index names one input throughout: probe p of each
/// snapshot that has one has the same source and target as in the first such snapshot (its
/// prediction and maps change with the step). The report replays probe p as one input, so a
/// file mixing inputs would show one input's maps under another's tokens. The message names
/// the probe and both steps.
void check_probe_inputs(const std::vector<AttentionSnapshot>& snapshots);

/// Writes `snapshots` to `path` as safetensors (core/serialization.hpp), atomically (the
/// previous file stays intact when writing fails):
///   - tensor "weights": F32 [N], every map's weights row-major, back to back in the order
///     snapshot, probe, then its maps followed by its saliency, rollout and flow maps when present;
///   - metadata "format" = "attograd-attention-snapshots", "format_version" = "1", and
///     "snapshots" = a JSON array, one object per snapshot:
///     `{"step": S, "probes": [{"source": [..], "target": [..], "prediction": [..],
///       "maps": [MAP, ..], "saliency": MAP, "rollout": MAP, "flow": MAP}]}` (the last three
///     only when present), MAP = `{"module": "..", "layer": L, "head": H, "queries": [..],
///     "keys": [..], "right": [..], "alignment_share": x, "saliency_correlation": x}` (the
///     last two only when present). A map's weights are the next rows x cols of "weights".
/// Weights are stored as float32 (the training type: float32 weights round-trip exactly);
/// shares and correlations as JSON doubles (exact). Throws ValueError when steps are not
/// increasing or >= 0, or a share is not finite, ShapeError / ValueError from check_map on a
/// malformed map, IoError naming the file when writing fails. `symlinks` says what becomes of
/// a symbolic link at `path` (save_safetensors, AtomicFile).
void save_snapshots(const std::filesystem::path& path, const std::vector<AttentionSnapshot>& snapshots,
                    AtomicFile::Symlinks symlinks = AtomicFile::Symlinks::follow);

/// Reads a file written by save_snapshots, checking everything before trusting it: the
/// safetensors container, the format and version, every field's type, step order, each map's
/// labels against its share of "weights" (which must be used exactly), right columns in
/// [-1, cols), finite and non-negative weights, rows of each attention map (not of saliency,
/// rollout or flow) summing to at most 1 (+ 1e-3: softmax rows, or local-p attention's scaled
/// ones), shares in [0, 1] equal to alignment_share of
/// the map's weights and right keys, one input per probe index (check_probe_inputs). Any problem throws
/// IoError naming the file and, where one is at fault, the snapshot, probe and map.
std::vector<AttentionSnapshot> load_snapshots(const std::filesystem::path& path);

}  // namespace attograd::inspect
