// Attention snapshots over training: fixed probe inputs recorded every N steps from a user's own
// training loop, and their file format (safetensors).
#include "inspect/snapshot.hpp"

#include "core/autograd.hpp"
#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/serialization.hpp"
#include "nn/attention_recorder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

namespace attograd::inspect {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "attograd-attention-snapshots";
constexpr const char* kVersion = "1";

/// Every module's training mode, saved at construction and put back at destruction.
class TrainingModes {
public:
    explicit TrainingModes(nn::Module& root) : root_(root) { save(root); }
    ~TrainingModes() {
        std::size_t i = 0;
        restore(root_, i);
    }
    TrainingModes(const TrainingModes&) = delete;
    TrainingModes& operator=(const TrainingModes&) = delete;

private:
    void save(const nn::Module& m) {
        modes_.push_back(m.is_training());
        for (const auto& [name, child] : m.named_children()) save(*child);
    }
    // Pre-order: train() also sets the children, which are then set to their own mode.
    void restore(nn::Module& m, std::size_t& i) {
        const bool mode = modes_[i++];
        if (m.is_training() != mode) m.train(mode);
        for (const auto& [name, child] : m.named_children()) restore(*child, i);
    }

    nn::Module& root_;
    std::vector<bool> modes_;
};

/// attention_maps of `records` whose weights are first cut to their labels' lengths (a probe
/// padded at the end of its batch). Labels longer than the weights are left for attention_maps
/// to refuse.
std::vector<AttentionMap> cropped_maps(const std::vector<nn::RecordedAttention>& records,
                                       const LabelFunction& labels) {
    std::vector<nn::RecordedAttention> cropped;
    std::vector<TokenLabels> shown;
    for (const auto& record : records) {
        TokenLabels l = labels(record.name);
        Tensor w = record.weights;
        if (w.defined() && w.dim() >= 2) {
            const std::int64_t rows = std::ssize(l.queries), cols = std::ssize(l.keys);
            if (rows < w.size(-2)) w = narrow(w, w.dim() - 2, 0, rows);
            if (cols < w.size(-1)) w = narrow(w, w.dim() - 1, 0, cols);
        }
        cropped.push_back({record.name, w});
        shown.push_back(std::move(l));
    }
    std::size_t next = 0;  // attention_maps asks for labels once per record, in order
    return attention_maps(cropped, [&](const std::string&) { return shown.at(next++); });
}

void check_step_order(const std::vector<AttentionSnapshot>& snapshots, const char* where) {
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        AG_CHECK(snapshots[i].step >= 0, ValueError, "{}: snapshot {} has a negative step {}", where, i,
                 snapshots[i].step);
        AG_CHECK(i == 0 || snapshots[i].step > snapshots[i - 1].step, ValueError,
                 "{}: snapshot {} has step {}, not after the previous snapshot's step {}", where, i,
                 snapshots[i].step, snapshots[i - 1].step);
    }
}

std::string joined_tokens(const std::vector<std::string>& tokens) {
    std::string out;
    for (const auto& t : tokens) {
        if (!out.empty()) out += ' ';
        out += t;
    }
    return out.size() > 80 ? out.substr(0, 80) + " ..." : out;
}

/// Throws ValueError / ShapeError / IndexError on a map that a reader should refuse.
void check_snapshot_map(const AttentionMap& map) {
    check_map(map);
    AG_CHECK(static_cast<std::int64_t>(map.right.size()) <= map.rows(), ShapeError,
             "map '{}' [{}, {}] has {} right columns for {} rows", map.title(), map.rows(), map.cols(),
             map.right.size(), map.rows());
    // check_map checked each right column is -1 or a key index.
    for (const auto& value : {map.alignment_share, map.saliency_correlation}) {
        AG_CHECK(!value || std::isfinite(*value), ValueError,
                 "map '{}' has a non-finite share or correlation {}", map.title(), *value);
    }
}

/// Throws ValueError on a map whose values a recorder cannot have written: a negative weight,
/// an attention row summing to more than 1 (softmax rows sum to 1, Luong et al. 2015 §3.2's
/// local-p attention scales them by a Gaussian <= 1; float32 sums drift by a few ulp per key,
/// far inside kRowTolerance), or a share outside [0, 1] or unequal to the one its weights and
/// right keys give (alignment_share, recomputed in the same double arithmetic).
void check_recorded_values(const AttentionMap& map, bool attention) {
    constexpr double kRowTolerance = 1e-3, kShareTolerance = 1e-9;
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        double sum = 0.0;
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            const double w = map.at(r, c);
            AG_CHECK(w >= 0.0, ValueError, "map '{}' has a negative weight {} at row {}, column {}",
                     map.title(), w, r, c);
            sum += w;
        }
        AG_CHECK(!attention || sum <= 1.0 + kRowTolerance, ValueError,
                 "map '{}' row {} sums to {}, more than 1 (attention weights are a softmax, at most "
                 "scaled down)",
                 map.title(), r, sum);
    }
    if (!map.alignment_share) return;
    const double share = *map.alignment_share;
    AG_CHECK(share >= 0.0 && share <= 1.0, ValueError, "map '{}' has an alignment_share {} outside [0, 1]",
             map.title(), share);
    const std::optional<double> recomputed = alignment_share(map, map.right);
    AG_CHECK(recomputed && std::abs(*recomputed - share) <= kShareTolerance, ValueError,
             "map '{}' has an alignment_share {} but its weights and right keys give {}", map.title(), share,
             recomputed ? fmt::format("{}", *recomputed) : std::string("none (no right key)"));
}

/// The maps of one probe in file order: its maps, then saliency, rollout and flow when present.
std::vector<const AttentionMap*> maps_in_order(const InspectedExample& probe) {
    std::vector<const AttentionMap*> out;
    for (const auto& map : probe.maps) out.push_back(&map);
    for (const auto* extra : {&probe.saliency, &probe.rollout, &probe.flow}) {
        if (*extra) out.push_back(&**extra);
    }
    return out;
}

json map_to_json(const AttentionMap& map) {
    json j = {{"module", map.module},   {"layer", map.layer}, {"head", map.head},
              {"queries", map.queries}, {"keys", map.keys},   {"right", map.right}};
    if (map.alignment_share) j["alignment_share"] = *map.alignment_share;
    if (map.saliency_correlation) j["saliency_correlation"] = *map.saliency_correlation;
    return j;
}

// ---- reading: every accessor checks the type first (nlohmann converts 1.5 to int silently).

const json& member(const json& object, const char* key) {
    AG_CHECK(object.is_object(), ValueError, "expected an object holding \"{}\", got {}", key,
             object.type_name());
    const auto it = object.find(key);
    AG_CHECK(it != object.end(), ValueError, "missing \"{}\"", key);
    return *it;
}

std::int64_t integer(const json& j, const char* key) {
    AG_CHECK(j.is_number_integer(), ValueError, "\"{}\" is not an integer ({})", key, j.type_name());
    const std::optional<std::int64_t> value = attograd::detail::json_integer<std::int64_t>(j);
    AG_CHECK(value, ValueError, "\"{}\" is out of range {}", key,
             attograd::detail::json_integer_range<std::int64_t>());
    return *value;
}

std::vector<std::string> strings(const json& j, const char* key) {
    AG_CHECK(j.is_array(), ValueError, "\"{}\" is not an array ({})", key, j.type_name());
    std::vector<std::string> out;
    out.reserve(j.size());
    for (const auto& s : j) {
        AG_CHECK(s.is_string(), ValueError, "\"{}\" holds a {}, not a string", key, s.type_name());
        out.push_back(s.get<std::string>());
    }
    return out;
}

std::optional<double> optional_number(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    AG_CHECK(it->is_number(), ValueError, "\"{}\" is not a number ({})", key, it->type_name());
    return it->get<double>();
}

/// One map: its labels from `j`, its weights the next rows x cols floats of `weights` from `offset`.
AttentionMap map_from_json(const json& j, const std::vector<float>& weights, std::size_t& offset) {
    AttentionMap map;
    const json& module = member(j, "module");
    AG_CHECK(module.is_string(), ValueError, "\"module\" is not a string ({})", module.type_name());
    map.module = module.get<std::string>();
    map.layer = integer(member(j, "layer"), "layer");
    map.head = integer(member(j, "head"), "head");
    AG_CHECK(map.layer >= 0 && map.head >= -1, ValueError, "layer {} or head {} is negative", map.layer,
             map.head);
    map.queries = strings(member(j, "queries"), "queries");
    map.keys = strings(member(j, "keys"), "keys");
    const json& right = member(j, "right");
    AG_CHECK(right.is_array(), ValueError, "\"right\" is not an array ({})", right.type_name());
    for (const auto& col : right) map.right.push_back(integer(col, "right"));
    map.alignment_share = optional_number(j, "alignment_share");
    map.saliency_correlation = optional_number(j, "saliency_correlation");
    // Labels are bounded by the header's size, so the product cannot overflow.
    const auto count = static_cast<std::size_t>(map.rows() * map.cols());
    AG_CHECK(count <= weights.size() - offset, ShapeError,
             "map '{}' [{}, {}] needs {} weights but \"weights\" has only {} left", map.title(), map.rows(),
             map.cols(), count, weights.size() - offset);
    map.weights.assign(weights.begin() + static_cast<std::ptrdiff_t>(offset),
                       weights.begin() + static_cast<std::ptrdiff_t>(offset + count));
    offset += count;
    check_snapshot_map(map);
    return map;
}

std::optional<AttentionMap> optional_map(const json& probe, const char* key,
                                         const std::vector<float>& weights, std::size_t& offset) {
    const auto it = probe.find(key);
    if (it == probe.end() || it->is_null()) return std::nullopt;
    return map_from_json(*it, weights, offset);
}

std::vector<AttentionSnapshot> snapshots_from_json(const json& array, const std::vector<float>& weights) {
    AG_CHECK(array.is_array(), ValueError, "\"snapshots\" is not an array ({})", array.type_name());
    std::vector<AttentionSnapshot> out;
    std::size_t offset = 0;
    for (std::size_t s = 0; s < array.size(); ++s) {
        AttentionSnapshot snapshot;
        const json& probes = [&]() -> const json& {
            try {
                snapshot.step = integer(member(array[s], "step"), "step");
                return member(array[s], "probes");
            } catch (const Error& e) {
                throw ValueError(fmt::format("snapshot {}: {}", s, e.what()));
            }
        }();
        AG_CHECK(probes.is_array(), ValueError, "snapshot {}: \"probes\" is not an array", s);
        for (std::size_t p = 0; p < probes.size(); ++p) {
            const json& j = probes[p];
            std::size_t m = 0;
            try {
                InspectedExample probe;
                probe.source = strings(member(j, "source"), "source");
                probe.target = strings(member(j, "target"), "target");
                probe.prediction = strings(member(j, "prediction"), "prediction");
                const json& maps = member(j, "maps");
                AG_CHECK(maps.is_array(), ValueError, "\"maps\" is not an array ({})", maps.type_name());
                for (; m < maps.size(); ++m) probe.maps.push_back(map_from_json(maps[m], weights, offset));
                probe.saliency = optional_map(j, "saliency", weights, offset);
                probe.rollout = optional_map(j, "rollout", weights, offset);
                probe.flow = optional_map(j, "flow", weights, offset);
                snapshot.probes.push_back(std::move(probe));
            } catch (const Error& e) {
                throw ValueError(fmt::format("snapshot {} (step {}), probe {}, map {}: {}", s, snapshot.step,
                                             p, m, e.what()));
            }
        }
        out.push_back(std::move(snapshot));
    }
    AG_CHECK(offset == weights.size(), ValueError,
             "the maps use {} weights but \"weights\" holds {} (mismatched lengths)", offset, weights.size());
    for (std::size_t i = 0; i < out.size(); ++i) {  // the values, once every map has its own weights
        for (std::size_t p = 0; p < out[i].probes.size(); ++p) {
            const std::vector<const AttentionMap*> maps = maps_in_order(out[i].probes[p]);
            for (std::size_t m = 0; m < maps.size(); ++m) {
                try {
                    // Saliency, rollout and flow (after the maps) are not softmax rows.
                    check_recorded_values(*maps[m], m < out[i].probes[p].maps.size());
                } catch (const Error& e) {
                    throw ValueError(fmt::format("snapshot {} (step {}), probe {}, map {}: {}", i,
                                                 out[i].step, p, m, e.what()));
                }
            }
        }
    }
    check_step_order(out, "snapshots");
    check_probe_inputs(out);
    return out;
}

}  // namespace

AttentionSnapshotter::AttentionSnapshotter(nn::Module& model, std::vector<SnapshotProbe> probes,
                                           SnapshotOptions options)
    : model_(&model),
      probes_(std::move(probes)),
      every_(options.every),
      max_snapshots_(options.max_snapshots) {
    AG_CHECK(!probes_.empty(), ValueError, "AttentionSnapshotter: no probes given (need at least one input)");
    for (std::size_t i = 0; i < probes_.size(); ++i) {
        AG_CHECK(probes_[i].forward && probes_[i].labels, ValueError,
                 "AttentionSnapshotter: probe {} has no {} function", i,
                 probes_[i].forward ? "labels" : "forward");
    }
    AG_CHECK(every_ >= 0, ValueError, "AttentionSnapshotter: every must be >= 0 (0 = off), got {}", every_);
    AG_CHECK(max_snapshots_ == 0 || max_snapshots_ >= 2, ValueError,
             "AttentionSnapshotter: max_snapshots must be 0 (all) or >= 2 (the first and the newest), got {}",
             max_snapshots_);
}

bool AttentionSnapshotter::maybe_snapshot(std::int64_t step) {
    AG_CHECK(step >= 0, ValueError, "AttentionSnapshotter::maybe_snapshot: step must be >= 0, got {}", step);
    if (every_ == 0 || step % every_ != 0) return false;
    if (!snapshots_.empty() && step <= snapshots_.back().step) return false;
    snapshot(step);
    return true;
}

const AttentionSnapshot& AttentionSnapshotter::snapshot(std::int64_t step) {
    AG_CHECK(step >= 0, ValueError, "AttentionSnapshotter::snapshot: step must be >= 0, got {}", step);
    AG_CHECK(snapshots_.empty() || step > snapshots_.back().step, ValueError,
             "AttentionSnapshotter::snapshot: step {} is not after the last snapshot's step {}", step,
             snapshots_.back().step);
    AttentionSnapshot out;
    out.step = step;
    {
        NoGradGuard no_grad;
        TrainingModes modes(*model_);
        model_->eval();
        for (const SnapshotProbe& probe : probes_) {
            InspectedExample example;
            example.source = probe.source;
            example.target = probe.target;
            {
                nn::AttentionRecorder recorder(*model_);
                example.prediction = probe.forward();
                example.maps = probe.crop ? cropped_maps(recorder.records(), probe.labels)
                                          : attention_maps(recorder.records(), probe.labels);
            }
            for (const auto& right : probe.right) {
                const std::string& layer = right.first;  // clang 14 cannot capture a structured binding
                const bool recorded = std::any_of(example.maps.begin(), example.maps.end(),
                                                  [&](const AttentionMap& m) { return m.module == layer; });
                if (!recorded) {
                    std::string names;
                    for (const AttentionMap& m : example.maps)
                        if (names.find("'" + m.module + "'") == std::string::npos)
                            names += (names.empty() ? "'" : ", '") + m.module + "'";
                    throw ValueError(
                        fmt::format("AttentionSnapshotter: a probe's right alignment names layer '{}', which "
                                    "its forward did "
                                    "not record; recorded layers: {}",
                                    layer, names));
                }
            }
            for (AttentionMap& map : example.maps) {
                const auto right = probe.right.find(map.module);
                if (right == probe.right.end()) continue;
                map.right = right->second;
                map.alignment_share = alignment_share(map, map.right);
            }
            out.probes.push_back(std::move(example));
        }
    }
    snapshots_.push_back(std::move(out));
    thin();
    return snapshots_.back();
}

void AttentionSnapshotter::thin() {
    while (max_snapshots_ > 0 && std::ssize(snapshots_) > max_snapshots_) {
        // On a doubled grid when there is one; else (no period, or it would overflow) every other.
        const bool grid = every_ > 0 && every_ <= std::numeric_limits<std::int64_t>::max() / 2;
        if (grid) every_ *= 2;
        std::vector<AttentionSnapshot> kept;
        for (std::size_t i = 0; i < snapshots_.size(); ++i) {
            const bool keep = i == 0 || i + 1 == snapshots_.size() ||
                              (grid ? snapshots_[i].step % every_ == 0 : i % 2 == 0);
            if (keep) kept.push_back(std::move(snapshots_[i]));
        }
        snapshots_ = std::move(kept);
    }
}

void AttentionSnapshotter::resume(std::vector<AttentionSnapshot> earlier, std::int64_t every) {
    AG_CHECK(snapshots_.empty(), ValueError, "AttentionSnapshotter::resume: {} snapshots were taken already",
             snapshots_.size());
    check_step_order(earlier, "AttentionSnapshotter::resume");
    check_probe_inputs(earlier);
    if (every > 0) {
        std::int64_t period = every_;
        while (period > 0 && period < every && period <= std::numeric_limits<std::int64_t>::max() / 2)
            period *= 2;
        AG_CHECK(period == every, ValueError,
                 "AttentionSnapshotter::resume: the saved run's snapshot period {} is not this snapshotter's "
                 "period {} doubled zero or more times (snapshots are taken every {} steps, and the period "
                 "doubles "
                 "when they are thinned)",
                 every, every_, every_);
        every_ = every;
    }
    snapshots_ = std::move(earlier);
    thin();
}

void check_probe_inputs(const std::vector<AttentionSnapshot>& snapshots) {
    std::vector<const AttentionSnapshot*> first;  // per probe index, the first snapshot that has it
    for (const AttentionSnapshot& snapshot : snapshots) {
        for (std::size_t p = 0; p < snapshot.probes.size(); ++p) {
            if (first.size() <= p) first.push_back(&snapshot);
            const InspectedExample &was = first[p]->probes[p], &is = snapshot.probes[p];
            for (const auto& [name, a, b] : {std::tuple{"source", &was.source, &is.source},
                                             std::tuple{"target", &was.target, &is.target}}) {
                AG_CHECK(*a == *b, ValueError,
                         "snapshots: probe {} has {} '{}' at step {} but '{}' at step {} (a probe must "
                         "be one input throughout)",
                         p + 1, name, joined_tokens(*a), first[p]->step, joined_tokens(*b), snapshot.step);
            }
        }
    }
}

void save_snapshots(const std::filesystem::path& path, const std::vector<AttentionSnapshot>& snapshots,
                    AtomicFile::Symlinks symlinks) {
    check_step_order(snapshots, "save_snapshots");
    json array = json::array();
    std::vector<float> weights;
    for (const AttentionSnapshot& snapshot : snapshots) {
        json probes = json::array();
        for (const InspectedExample& probe : snapshot.probes) {
            json j = {{"source", probe.source}, {"target", probe.target}, {"prediction", probe.prediction}};
            j["maps"] = json::array();
            for (const AttentionMap* map : maps_in_order(probe)) {
                check_snapshot_map(*map);
                weights.insert(weights.end(), map->weights.begin(), map->weights.end());
            }
            for (const AttentionMap& map : probe.maps) j["maps"].push_back(map_to_json(map));
            if (probe.saliency) j["saliency"] = map_to_json(*probe.saliency);
            if (probe.rollout) j["rollout"] = map_to_json(*probe.rollout);
            if (probe.flow) j["flow"] = map_to_json(*probe.flow);
            probes.push_back(std::move(j));
        }
        array.push_back({{"step", snapshot.step}, {"probes", std::move(probes)}});
    }
    Tensor flat = empty({static_cast<std::int64_t>(weights.size())}, {.dtype = DType::Float32});
    std::copy(weights.begin(), weights.end(), flat.data<float>());
    std::string text;
    try {
        text = array.dump();
    } catch (const json::exception& e) {  // a label that is not UTF-8
        throw ValueError(
            fmt::format("save_snapshots: '{}': a label cannot be written: {}", path.string(), e.what()));
    }
    save_safetensors(path, {{"weights", flat}},
                     {{"format", kFormat}, {"format_version", kVersion}, {"snapshots", std::move(text)}},
                     symlinks);
}

std::vector<AttentionSnapshot> load_snapshots(const std::filesystem::path& path) {
    const SafetensorsContents contents = read_safetensors(path);  // IoError naming the file
    const std::string where = fmt::format("load_snapshots: '{}'", path.string());
    const auto field = [&](const char* key) -> const std::string& {
        const auto it = contents.metadata.find(key);
        AG_CHECK(it != contents.metadata.end(), IoError,
                 "{}: not an attention snapshot file (no \"{}\" metadata)", where, key);
        return it->second;
    };
    AG_CHECK(field("format") == kFormat, IoError, "{}: not an attention snapshot file (format '{}')", where,
             field("format"));
    AG_CHECK(field("format_version") == kVersion, IoError,
             "{}: snapshot format version '{}' is not supported (this attograd reads version {})", where,
             field("format_version"), kVersion);
    const auto it = contents.tensors.find("weights");
    AG_CHECK(it != contents.tensors.end() && contents.tensors.size() == 1, IoError,
             "{}: expected exactly one tensor, \"weights\"", where);
    const Tensor& flat = it->second;
    AG_CHECK(flat.dtype() == DType::Float32 && flat.dim() == 1, IoError,
             "{}: \"weights\" must be float32 of rank 1, got {} of shape {}", where, flat.dtype(),
             flat.shape());
    const std::vector<float> weights(flat.data<float>(), flat.data<float>() + flat.numel());
    try {
        return snapshots_from_json(json::parse(field("snapshots")), weights);
    } catch (const json::exception& e) {
        throw IoError(fmt::format("{}: corrupt \"snapshots\" metadata: {}", where, e.what()));
    } catch (const IoError&) {
        throw;
    } catch (const Error& e) {
        throw IoError(fmt::format("{}: {}", where, e.what()));
    }
}

}  // namespace attograd::inspect
