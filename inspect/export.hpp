// Raw exports of inspected attention: CSV (one row per weight) and JSON, and reading JSON back.
#pragma once

#include "inspect/attention_map.hpp"

#include <string>
#include <vector>

namespace attograd::inspect {

/// One CSV row per weight (RFC 4180, header line first):
/// `example,module,layer,head,query_index,query_token,key_index,key_token,weight`; every map
/// of every example, then its saliency, rollout and flow maps (head -1). Weights are written
/// with 17 significant digits, so they read back exactly. Throws as check_map.
std::string to_csv(const std::vector<InspectedExample>& examples);

/// `{"examples": [{"source", "target", "prediction", "heads": [map...], "saliency", "rollout",
/// "flow"}]}` where a map is `{"module", "layer", "head", "queries", "keys", "weights" (rows of
/// numbers), "right", "alignment_share", "saliency_correlation"}` and absent maps and values
/// are null. Doubles round-trip exactly. Throws as check_map.
std::string to_json(const std::vector<InspectedExample>& examples);

/// The examples of a document written by to_json. Throws IoError naming the first field that
/// is missing or of the wrong type, and the map, when the text is not such a document
/// (malformed JSON, nesting deeper than 64 levels, weights that do not fill [queries, keys]).
std::vector<InspectedExample> examples_from_json(const std::string& text);

}  // namespace attograd::inspect
