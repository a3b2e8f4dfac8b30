// The data an HTML report's script draws: every map of every example and snapshot, quantised
// and base64-encoded, serialised as JSON.
#include "inspect/report_data.hpp"

#include "inspect/snapshot.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace attograd::inspect {

namespace {

using nlohmann::json;

// Up to this many cells a map keeps 16 bits per weight (exact to ~1e-5); beyond, 8 bits keep
// T = 512 with 16 heads near 5.6 MB of base64.
constexpr std::size_t max_cells_16bit = 16384;

// check_map, and IndexError when a right column is neither -1 nor a key index.
void check_report_map(const AttentionMap& map) {
    check_map(map);
    for (std::size_t r = 0; r < map.right.size(); ++r) {
        const std::int64_t c = map.right[r];
        AG_CHECK(c >= -1 && c < map.cols(), IndexError,
                 "inspect: map '{}' [{}, {}] has right column {} at row {} (-1 or 0..{} expected)",
                 map.title(), map.rows(), map.cols(), c, r, map.cols() - 1);
    }
}

// RFC 4648 base64 with '=' padding.
std::string base64_encode(const std::vector<std::uint8_t>& bytes) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
        std::uint32_t v = static_cast<std::uint32_t>(bytes[i]) << 16;
        if (n > 1) v |= static_cast<std::uint32_t>(bytes[i + 1]) << 8;
        if (n > 2) v |= bytes[i + 2];
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += n > 1 ? alphabet[(v >> 6) & 63] : '=';
        out += n > 2 ? alphabet[v & 63] : '=';
    }
    return out;
}

json labels(const std::vector<std::string>& tokens) {
    json out = json::array();
    for (const auto& t : tokens) out.push_back(display_label(t));
    return out;
}

json map_json(const AttentionMap& map, const char* kind) {
    check_report_map(map);
    const QuantisedWeights q = quantise_weights(map);
    json out = {{"title", map.title()},
                {"module", map.module},
                {"layer", map.layer},
                {"head", map.head},
                {"kind", kind},
                {"queries", labels(map.queries)},
                {"keys", labels(map.keys)},
                {"bits", q.bits},
                {"lo", q.lo},
                {"hi", q.hi},
                {"max_error", q.max_error},
                {"data", q.base64},
                {"right", map.right},
                {"symbols", symbol_legend(map)}};
    if (map.alignment_share) out["alignment_share"] = *map.alignment_share;
    if (map.saliency_correlation) out["saliency_correlation"] = *map.saliency_correlation;
    return out;
}

std::string joined(const std::vector<std::string>& tokens) {
    std::string out;
    for (const auto& t : tokens) {
        if (!out.empty()) out += ' ';
        out += display_label(t);
    }
    return out;
}

/// The mean of the heads maps[first, first + heads).
struct HeadMean {
    std::size_t first = 0, heads = 0;
    AttentionMap map{};
};

/// The mean over heads of each run of consecutive heads of one layer (module and layer equal,
/// no head twice, one shape) that has at least two heads, keyed by the index of its first head.
/// A mean map keeps the heads' right columns when they agree, and then its alignment share:
/// the mean of the heads' shares (the share is linear in the weights; recomputing it from the
/// outlined cells would drop the target tokens a prediction did not reach).
std::vector<HeadMean> head_means(const std::vector<AttentionMap>& maps) {
    std::vector<HeadMean> out;
    std::size_t begin = 0;
    while (begin < maps.size()) {
        const AttentionMap& first = maps[begin];
        std::size_t end = begin + 1;
        const auto same_layer = [&](const AttentionMap& m) {
            return m.module == first.module && m.layer == first.layer && m.head >= 0 &&
                   m.queries == first.queries && m.keys == first.keys &&
                   std::none_of(maps.begin() + static_cast<std::ptrdiff_t>(begin),
                                maps.begin() + static_cast<std::ptrdiff_t>(end),
                                [&](const AttentionMap& h) { return h.head == m.head; });
        };
        if (first.head >= 0) {
            while (end < maps.size() && same_layer(maps[end])) ++end;
        }
        const std::size_t heads = end - begin;
        if (first.head >= 0 && heads >= 2) {
            AttentionMap mean{.module = first.module,
                              .layer = first.layer,
                              .head = -1,
                              .queries = first.queries,
                              .keys = first.keys,
                              .weights = std::vector<double>(first.weights.size(), 0.0),
                              .right = {},
                              .alignment_share = std::nullopt,
                              .saliency_correlation = std::nullopt};
            bool same_right = true;
            double share = 0.0;
            for (std::size_t h = begin; h < end; ++h) {
                check_report_map(maps[h]);
                for (std::size_t i = 0; i < mean.weights.size(); ++i)
                    mean.weights[i] += maps[h].weights[i] / static_cast<double>(heads);
                same_right = same_right && maps[h].right == first.right &&
                             maps[h].alignment_share.has_value() == first.alignment_share.has_value();
                share += maps[h].alignment_share.value_or(0.0) / static_cast<double>(heads);
            }
            if (same_right && first.alignment_share) {
                mean.right = first.right;
                mean.alignment_share = share;
            }
            out.push_back({.first = begin, .heads = heads, .map = std::move(mean)});
        }
        begin = end;
    }
    return out;
}

/// One input at one step: its tokens and maps (each layer's head mean before its heads).
json frame_json(const InspectedExample& example, std::optional<std::int64_t> step) {
    const auto means = head_means(example.maps);
    json maps = json::array();
    auto mean = means.begin();
    for (std::size_t i = 0; i < example.maps.size(); ++i) {
        if (mean != means.end() && mean->first == i) {
            json j = map_json(mean->map, "mean");
            j["title"] = fmt::format("{} mean of {} heads", mean->map.module, mean->heads);
            maps.push_back(std::move(j));
            ++mean;
        }
        maps.push_back(map_json(example.maps[i], "head"));
    }
    for (const auto& [derived, kind] :
         {std::pair{&example.saliency, "saliency"}, std::pair{&example.rollout, "rollout"},
          std::pair{&example.flow, "flow"}}) {
        if (*derived) maps.push_back(map_json(**derived, kind));
    }
    return {{"step", step ? json(*step) : json(nullptr)},
            {"source", labels(example.source)},
            {"target", labels(example.target)},
            {"prediction", labels(example.prediction)},
            {"maps", std::move(maps)}};
}

}  // namespace

QuantisedWeights quantise_weights(const AttentionMap& map) {
    check_map(map);
    QuantisedWeights q;
    q.bits = map.weights.size() > max_cells_16bit ? 8 : 16;
    if (!map.weights.empty()) {
        const auto [lo, hi] = std::minmax_element(map.weights.begin(), map.weights.end());
        q.lo = *lo;
        q.hi = *hi;
    }
    const double levels = q.bits == 8 ? 255.0 : 65535.0;
    const double range = q.hi - q.lo;
    q.max_error = range / (2.0 * levels);
    std::vector<std::uint8_t> bytes;
    bytes.reserve(map.weights.size() * static_cast<std::size_t>(q.bits / 8));
    for (const double w : map.weights) {
        const auto code =
            static_cast<std::uint32_t>(range > 0.0 ? std::lround((w - q.lo) / range * levels) : 0);
        bytes.push_back(static_cast<std::uint8_t>(code & 0xFF));
        if (q.bits == 16) bytes.push_back(static_cast<std::uint8_t>(code >> 8));
    }
    q.base64 = base64_encode(bytes);
    return q;
}

std::string report_data_json(const Report& report) {
    check_probe_inputs(report.snapshots);  // probe p's frames are one input's
    json sources = json::array();
    for (std::size_t e = 0; e < report.examples.size(); ++e) {
        const auto& example = report.examples[e];
        std::string label = fmt::format("example {}: {}", e + 1, joined(example.source));
        if (!example.prediction.empty() || !example.target.empty()) {
            // The arrow's right side is what the model wrote, marked against the target.
            label += fmt::format(" \u2192 {}: {}", report.decoding.empty() ? "predicted" : report.decoding,
                                 example.prediction.empty() ? "(empty)" : joined(example.prediction));
            if (example.prediction == example.target) {
                label += " \u2713";
            } else if (!example.target.empty()) {
                label += fmt::format(" \u2717 (expected {})", joined(example.target));
            }
        }
        sources.push_back({{"label", std::move(label)},
                           {"kind", "example"},
                           {"frames", json::array({frame_json(example, std::nullopt)})}});
    }
    std::size_t probes = 0;
    for (const auto& snapshot : report.snapshots) probes = std::max(probes, snapshot.probes.size());
    for (std::size_t p = 0; p < probes; ++p) {
        json source;
        for (const auto& snapshot : report.snapshots) {
            if (snapshot.probes.size() <= p) continue;
            const auto& probe = snapshot.probes[p];
            if (source.is_null()) {
                source = {{"label", fmt::format("probe {} over training: {}", p + 1, joined(probe.source))},
                          {"kind", "probe"},
                          {"probe", p},
                          {"frames", json::array()}};
            }
            source["frames"].push_back(frame_json(probe, snapshot.step));
        }
        sources.push_back(std::move(source));
    }
    const json data = {{"legend", report.alignment_legend},
                       {"open", report.open_module},
                       {"decoding", report.decoding},
                       {"example_maps", report.example_maps},
                       {"sources", std::move(sources)}};
    // Invalid UTF-8 in a token becomes U+FFFD rather than an exception from the serialiser.
    const std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '<') {
            out += "\\u003c";  // '<' only occurs inside JSON strings, where the escape means the same
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace attograd::inspect
