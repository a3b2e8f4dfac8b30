// The data an HTML report's script draws: every map of every example and snapshot, quantised
// and base64-encoded, serialised as JSON.
#include "inspect/report_data.hpp"

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
                {"right", map.right}};
    if (map.alignment_share) out["alignment_share"] = *map.alignment_share;
    if (map.saliency_correlation) out["saliency_correlation"] = *map.saliency_correlation;
    return out;
}

json frame_json(const InspectedExample& example, std::optional<std::int64_t> step) {
    json maps = json::array();
    for (const auto& map : example.maps) maps.push_back(map_json(map, "head"));
    for (const auto& [derived, kind] :
         {std::pair{&example.saliency, "saliency"}, std::pair{&example.rollout, "rollout"},
          std::pair{&example.flow, "flow"}}) {
        if (*derived) maps.push_back(map_json(**derived, kind));
    }
    json frame = {{"maps", std::move(maps)}};
    frame["step"] = step ? json(*step) : json(nullptr);
    return frame;
}

std::string joined(const std::vector<std::string>& tokens) {
    std::string out;
    for (const auto& t : tokens) {
        if (!out.empty()) out += ' ';
        out += display_label(t);
    }
    return out;
}

json source_json(const InspectedExample& example, std::string label, const char* kind) {
    return {{"label", std::move(label)},
            {"kind", kind},
            {"source", labels(example.source)},
            {"target", labels(example.target)},
            {"prediction", labels(example.prediction)},
            {"frames", json::array()}};
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
    json sources = json::array();
    for (std::size_t e = 0; e < report.examples.size(); ++e) {
        const auto& example = report.examples[e];
        std::string label = fmt::format("example {}: {}", e + 1, joined(example.source));
        if (!example.prediction.empty()) label += " \u2192 " + joined(example.prediction);
        json source = source_json(example, std::move(label), "example");
        source["frames"].push_back(frame_json(example, std::nullopt));
        sources.push_back(std::move(source));
    }
    std::size_t probes = 0;
    for (const auto& snapshot : report.snapshots) probes = std::max(probes, snapshot.probes.size());
    for (std::size_t p = 0; p < probes; ++p) {
        json source;
        for (const auto& snapshot : report.snapshots) {
            if (snapshot.probes.size() <= p) continue;
            const auto& probe = snapshot.probes[p];
            if (source.is_null()) {
                source = source_json(
                    probe, fmt::format("probe {} over training: {}", p + 1, joined(probe.source)), "probe");
                source["probe"] = p;
            }
            source["frames"].push_back(frame_json(probe, snapshot.step));
        }
        sources.push_back(std::move(source));
    }
    const json data = {{"legend", report.alignment_legend}, {"sources", std::move(sources)}};
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
