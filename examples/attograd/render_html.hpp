// The self-contained HTML report of an inspected run: config, training curve, every head.
#pragma once

#include "inspect/attention_map.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attograd::cli {

/// What the report shows.
struct Report {
    std::string title;               ///< e.g. "attograd run: reverse"
    nlohmann::json config;           ///< the run's config.json
    std::string metrics_csv;         ///< the run's metrics.csv ("" when missing)
    std::vector<std::string> notes;  ///< extra lines (knockout, warnings)
    std::vector<inspect::InspectedExample> examples;
};

/// Columns of a metrics CSV by header name: header -> values (non-numbers become NaN). Rows
/// with the wrong number of fields are skipped.
std::vector<std::pair<std::string, std::vector<double>>> parse_metrics_csv(const std::string& csv);

/// One HTML document with inline CSS and SVG only (no scripts, no network): the title and
/// notes, the training curve (loss and held-out accuracy against step) drawn from
/// `metrics_csv`, the config as a table, and for each example its tokens and every head's
/// heatmap with its alignment share.
std::string render_html(const Report& report);

}  // namespace attograd::cli
