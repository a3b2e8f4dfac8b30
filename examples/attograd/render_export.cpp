// Raw exports of inspected attention: CSV (one row per weight) and JSON.
#include "render_export.hpp"

#include <fmt/format.h>

namespace attograd::cli {

namespace {

/// A CSV field, quoted when it holds a comma, quote, or line break (RFC 4180).
std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos && !text.empty()) return text;
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

void append_rows(std::string& out, std::size_t example, const AttentionMap& map) {
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            out += fmt::format("{},{},{},{},{},{},{},{},{:.6g}\n", example, csv_field(map.module), map.layer,
                               map.head, r, csv_field(map.queries[static_cast<std::size_t>(r)]), c,
                               csv_field(map.keys[static_cast<std::size_t>(c)]), map.at(r, c));
        }
    }
}

nlohmann::json optional_number(const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::string to_csv(const std::vector<InspectedExample>& examples) {
    std::string out = "example,module,layer,head,query_index,query_token,key_index,key_token,weight\n";
    for (std::size_t e = 0; e < examples.size(); ++e) {
        for (const auto& map : examples[e].maps) append_rows(out, e, map);
        if (examples[e].saliency) append_rows(out, e, *examples[e].saliency);
    }
    return out;
}

nlohmann::json to_json(const AttentionMap& map) {
    nlohmann::json weights = nlohmann::json::array();
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        nlohmann::json row = nlohmann::json::array();
        for (std::int64_t c = 0; c < map.cols(); ++c) row.push_back(map.at(r, c));
        weights.push_back(std::move(row));
    }
    return {{"module", map.module},
            {"layer", map.layer},
            {"head", map.head},
            {"queries", map.queries},
            {"keys", map.keys},
            {"weights", std::move(weights)},
            {"alignment_share", optional_number(map.alignment_share)},
            {"saliency_correlation", optional_number(map.saliency_correlation)}};
}

nlohmann::json to_json(const std::vector<InspectedExample>& examples) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& example : examples) {
        nlohmann::json heads = nlohmann::json::array();
        for (const auto& map : example.maps) heads.push_back(to_json(map));
        out.push_back(
            {{"source", example.source},
             {"target", example.target},
             {"prediction", example.prediction},
             {"heads", std::move(heads)},
             {"saliency", example.saliency ? to_json(*example.saliency) : nlohmann::json(nullptr)}});
    }
    return {{"examples", std::move(out)}};
}

}  // namespace attograd::cli
