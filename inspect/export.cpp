// Raw exports of inspected attention: CSV (one row per weight) and JSON, and reading JSON back.
#include "inspect/export.hpp"

#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attograd::inspect {

namespace {

using nlohmann::json;

/// A CSV field, quoted when it holds a comma, quote or line break, or is empty (RFC 4180).
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
    check_map(map);
    for (std::int64_t r = 0; r < map.rows(); ++r)
        for (std::int64_t c = 0; c < map.cols(); ++c)
            out += fmt::format("{},{},{},{},{},{},{},{},{:.17g}\n", example, csv_field(map.module), map.layer,
                               map.head, r, csv_field(map.queries[static_cast<std::size_t>(r)]), c,
                               csv_field(map.keys[static_cast<std::size_t>(c)]), map.at(r, c));
}

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

json map_json(const AttentionMap& map) {
    check_map(map);
    json weights = json::array();
    for (std::int64_t r = 0; r < map.rows(); ++r) {
        json row = json::array();
        for (std::int64_t c = 0; c < map.cols(); ++c) row.push_back(map.at(r, c));
        weights.push_back(std::move(row));
    }
    return {{"module", map.module},
            {"layer", map.layer},
            {"head", map.head},
            {"queries", map.queries},
            {"keys", map.keys},
            {"weights", std::move(weights)},
            {"right", map.right},
            {"alignment_share", optional_number(map.alignment_share)},
            {"saliency_correlation", optional_number(map.saliency_correlation)}};
}

json optional_map(const std::optional<AttentionMap>& map) { return map ? map_json(*map) : json(nullptr); }

// Reading: every access names the field it wanted.
const json& field(const json& object, const char* key, const std::string& where) {
    if (!object.is_object() || !object.contains(key))
        throw IoError(fmt::format("examples_from_json: {} has no field \"{}\"", where, key));
    return object.at(key);
}

template <typename T>
T get(const json& object, const char* key, const std::string& where) {
    const json& value = field(object, key, where);
    // get<T>() would wrap an integer outside T's range and truncate 1.5 to 1.
    const auto integer = [&](const json& j) {
        const std::optional<std::int64_t> i = attograd::detail::json_integer<std::int64_t>(j);
        if (!i)
            throw IoError(fmt::format("examples_from_json: {}.{} must hold integers in {}, got {}", where,
                                      key, attograd::detail::json_integer_range<std::int64_t>(),
                                      excerpt(j.dump(), 40)));
        return *i;
    };
    if constexpr (std::is_same_v<T, std::int64_t>) {
        return integer(value);
    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
        if (!value.is_array())
            throw IoError(fmt::format("examples_from_json: {}.{} must be an array of integers", where, key));
        T out;
        for (const json& j : value) out.push_back(integer(j));
        return out;
    }
    try {
        return value.get<T>();
    } catch (const json::exception&) {
        throw IoError(
            fmt::format("examples_from_json: {}.{} has the wrong type ({})", where, key, value.type_name()));
    }
}

std::optional<double> get_optional(const json& object, const char* key, const std::string& where) {
    const json& value = field(object, key, where);
    if (value.is_null()) return std::nullopt;
    if (!value.is_number())
        throw IoError(fmt::format("examples_from_json: {}.{} must be a number or null", where, key));
    return value.get<double>();
}

AttentionMap read_map(const json& j, const std::string& where) {
    AttentionMap map;
    map.module = get<std::string>(j, "module", where);
    map.layer = get<std::int64_t>(j, "layer", where);
    map.head = get<std::int64_t>(j, "head", where);
    map.queries = get<std::vector<std::string>>(j, "queries", where);
    map.keys = get<std::vector<std::string>>(j, "keys", where);
    const auto rows = get<std::vector<std::vector<double>>>(j, "weights", where);
    if (std::ssize(rows) != map.rows())
        throw IoError(fmt::format("examples_from_json: {} has {} weight rows for {} queries", where,
                                  rows.size(), map.rows()));
    for (const auto& row : rows) {
        if (std::ssize(row) != map.cols())
            throw IoError(fmt::format("examples_from_json: {} has a weight row of {} for {} keys", where,
                                      row.size(), map.cols()));
        map.weights.insert(map.weights.end(), row.begin(), row.end());
    }
    map.right = get<std::vector<std::int64_t>>(j, "right", where);
    map.alignment_share = get_optional(j, "alignment_share", where);
    map.saliency_correlation = get_optional(j, "saliency_correlation", where);
    return map;
}

std::optional<AttentionMap> read_optional_map(const json& j, const char* key, const std::string& where) {
    const json& value = field(j, key, where);
    if (value.is_null()) return std::nullopt;
    return read_map(value, where + "." + key);
}

}  // namespace

std::string to_csv(const std::vector<InspectedExample>& examples) {
    std::string out = "example,module,layer,head,query_index,query_token,key_index,key_token,weight\n";
    for (std::size_t e = 0; e < examples.size(); ++e) {
        for (const auto& map : examples[e].maps) append_rows(out, e, map);
        for (const auto* extra : {&examples[e].saliency, &examples[e].rollout, &examples[e].flow})
            if (*extra) append_rows(out, e, **extra);
    }
    return out;
}

std::string to_json(const std::vector<InspectedExample>& examples) {
    json out = json::array();
    for (const auto& example : examples) {
        json heads = json::array();
        for (const auto& map : example.maps) heads.push_back(map_json(map));
        out.push_back({{"source", example.source},
                       {"target", example.target},
                       {"prediction", example.prediction},
                       {"heads", std::move(heads)},
                       {"saliency", optional_map(example.saliency)},
                       {"rollout", optional_map(example.rollout)},
                       {"flow", optional_map(example.flow)}});
    }
    return json{{"examples", std::move(out)}}.dump(1) + "\n";
}

std::vector<InspectedExample> examples_from_json(const std::string& text) {
    static constexpr int max_depth = 64;
    json document;
    try {
        // The callback sees every nesting level before it is built: refuse deep documents
        // before recursion can exhaust the stack.
        document = json::parse(text, [](int depth, json::parse_event_t, json&) {
            if (depth > max_depth)
                throw IoError(
                    fmt::format("examples_from_json: JSON nested deeper than {} levels", max_depth));
            return true;
        });
    } catch (const json::parse_error& e) {
        throw IoError(fmt::format("examples_from_json: not JSON: {}", e.what()));
    }
    const json& list = field(document, "examples", "the document");
    if (!list.is_array()) throw IoError("examples_from_json: \"examples\" must be an array");
    std::vector<InspectedExample> out;
    for (std::size_t e = 0; e < list.size(); ++e) {
        const std::string where = fmt::format("examples[{}]", e);
        const json& j = list[e];
        InspectedExample example;
        example.source = get<std::vector<std::string>>(j, "source", where);
        example.target = get<std::vector<std::string>>(j, "target", where);
        example.prediction = get<std::vector<std::string>>(j, "prediction", where);
        const json& heads = field(j, "heads", where);
        if (!heads.is_array())
            throw IoError(fmt::format("examples_from_json: {}.heads must be an array", where));
        for (std::size_t m = 0; m < heads.size(); ++m)
            example.maps.push_back(read_map(heads[m], fmt::format("{}.heads[{}]", where, m)));
        example.saliency = read_optional_map(j, "saliency", where);
        example.rollout = read_optional_map(j, "rollout", where);
        example.flow = read_optional_map(j, "flow", where);
        out.push_back(std::move(example));
    }
    return out;
}

}  // namespace attograd::inspect
