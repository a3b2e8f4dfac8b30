// Raw exports of inspected attention: CSV (one row per weight) and JSON.
#pragma once

#include "attention_map.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attograd::cli {

/// One CSV row per weight: example, module, layer, head, query index and token, key index and
/// token, weight (saliency rows use the module name "saliency"). Tokens are quoted per RFC 4180.
std::string to_csv(const std::vector<InspectedExample>& examples);

/// {"examples": [{"source", "target", "prediction", "heads": [{"module", "layer", "head",
/// "queries", "keys", "weights" (rows of numbers), "alignment_share" (number or null),
/// "saliency_correlation"}], "saliency" (a map or null)}]}.
nlohmann::json to_json(const std::vector<InspectedExample>& examples);

/// One map as JSON (see to_json).
nlohmann::json to_json(const AttentionMap& map);

}  // namespace attograd::cli
