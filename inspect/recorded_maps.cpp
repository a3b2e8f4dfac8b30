// Attention maps from an AttentionRecorder's records plus token labels, and the alignment share.
#include "inspect/recorded_maps.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace attograd::inspect {

std::vector<AttentionMap> maps_from_weights(const std::string& layer_name, std::int64_t layer,
                                            const Tensor& weights, std::int64_t batch_index,
                                            const TokenLabels& labels) {
    AG_CHECK(weights.defined(), ValueError, "inspect: layer '{}' recorded no weights", layer_name);
    AG_CHECK(weights.dim() == 3 || weights.dim() == 4, ShapeError,
             "inspect: layer '{}' weights must be [B, Tq, Tk] or [B, h, Tq, Tk], got {}", layer_name,
             weights.shape());
    const std::int64_t b = weights.size(0), h = weights.dim() == 4 ? weights.size(1) : 1;
    const std::int64_t tq = weights.size(-2), tk = weights.size(-1);
    AG_CHECK(batch_index >= 0 && batch_index < b, IndexError,
             "inspect: batch index {} is outside [0, {}) for layer '{}' weights {}", batch_index, b,
             layer_name, weights.shape());
    AG_CHECK(std::ssize(labels.queries) == tq && std::ssize(labels.keys) == tk, ShapeError,
             "inspect: layer '{}' weights {} need {} query and {} key labels, got {} and {}", layer_name,
             weights.shape(), tq, tk, labels.queries.size(), labels.keys.size());
    // One example's [h, Tq, Tk] block, as doubles.
    const Tensor block = to_dtype(narrow(weights, 0, batch_index, 1), DType::Float64);
    const auto values = block.to_vector<double>();
    std::vector<AttentionMap> maps;
    for (std::int64_t head = 0; head < h; ++head) {
        AttentionMap map;
        map.module = layer_name;
        map.layer = layer;
        map.head = head;
        map.queries = labels.queries;
        map.keys = labels.keys;
        const auto first = values.begin() + head * tq * tk;
        map.weights.assign(first, first + tq * tk);
        check_map(map);
        maps.push_back(std::move(map));
    }
    return maps;
}

std::vector<AttentionMap> attention_maps(const std::vector<nn::RecordedAttention>& records,
                                         const LabelFunction& labels, std::int64_t batch_index) {
    AG_CHECK(!records.empty(), ValueError,
             "inspect: no attention was recorded (no attention layer under the recorder's root ran a "
             "forward while it was alive)");
    std::unordered_map<std::string, std::int64_t> layer_of;
    std::vector<AttentionMap> out;
    for (const auto& record : records) {
        const auto [it, added] = layer_of.try_emplace(record.name, std::ssize(layer_of));
        (void)added;
        auto maps =
            maps_from_weights(record.name, it->second, record.weights, batch_index, labels(record.name));
        for (auto& map : maps) out.push_back(std::move(map));
    }
    return out;
}

std::vector<AttentionMap> attention_maps(const std::vector<nn::RecordedAttention>& records,
                                         const TokenLabels& labels, std::int64_t batch_index) {
    return attention_maps(
        records, [&labels](const std::string&) { return labels; }, batch_index);
}

std::vector<AttentionMap> layer_maps(const nn::AttentionRecorder& recorder, const std::string& layer_name,
                                     const TokenLabels& labels, std::int64_t call, std::int64_t batch_index) {
    std::vector<std::string> names;  // distinct, in first-seen order: the layer numbers
    std::vector<const Tensor*> calls;
    for (const auto& record : recorder.records()) {
        if (std::find(names.begin(), names.end(), record.name) == names.end()) names.push_back(record.name);
        if (record.name == layer_name) calls.push_back(&record.weights);
    }
    AG_CHECK(!calls.empty(), ValueError, "layer_maps: no record of layer '{}'; the recorder holds [{}]",
             layer_name, fmt::join(names, ", "));
    AG_CHECK(call >= 0 && call < std::ssize(calls), IndexError,
             "layer_maps: call {} of layer '{}' outside [0, {}) (its records)", call, layer_name,
             std::ssize(calls));
    const auto layer = std::find(names.begin(), names.end(), layer_name) - names.begin();
    return maps_from_weights(layer_name, layer, *calls[static_cast<std::size_t>(call)], batch_index, labels);
}

AttentionMap crop_map(const AttentionMap& map, std::int64_t rows, std::int64_t cols) {
    check_map(map);
    AG_CHECK(rows >= 0 && rows <= map.rows() && cols >= 0 && cols <= map.cols(), IndexError,
             "crop_map: cannot keep [{}, {}] of map '{}' [{}, {}]", rows, cols, map.title(), map.rows(),
             map.cols());
    AttentionMap out = map;
    out.queries.resize(static_cast<std::size_t>(rows));
    out.keys.resize(static_cast<std::size_t>(cols));
    out.weights.clear();
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto first = map.weights.begin() + r * map.cols();
        out.weights.insert(out.weights.end(), first, first + cols);
    }
    if (std::ssize(out.right) > rows) out.right.resize(static_cast<std::size_t>(rows));
    for (auto& c : out.right)
        if (c >= cols) c = -1;
    return out;
}

std::optional<double> alignment_share(const AttentionMap& map, const std::vector<std::int64_t>& right) {
    check_map(map);
    double total = 0.0;
    std::int64_t counted = 0;
    for (std::size_t t = 0; t < right.size(); ++t) {
        const std::int64_t col = right[t];
        AG_CHECK(col >= -1, IndexError,
                 "alignment_share: right key {} of row {} must be -1 or a key index of map '{}'", col, t,
                 map.title());
        if (col < 0) continue;
        AG_CHECK(col < map.cols(), IndexError,
                 "alignment_share: right key {} of row {} is outside map '{}' with {} keys", col, t,
                 map.title(), map.cols());
        ++counted;
        const auto row = static_cast<std::int64_t>(t);
        if (row < map.rows()) total += map.at(row, col);
    }
    if (counted == 0) return std::nullopt;
    return total / static_cast<double>(counted);
}

}  // namespace attograd::inspect
