// What `inspect --format html` puts in the report: the run's configuration rows that apply to
// it, its training charts from metrics.csv, and the examples.
#pragma once

#include "run_dir.hpp"

#include "inspect/report.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attograd::cli {

/// The configuration as "section.field" -> value rows, without the fields that do not apply to
/// this run (the estimator of a soft model, the local mode of a global one, momentum of Adam,
/// the decoder of an encoder model, the data path of a bundled task), plus progress.
std::vector<std::pair<std::string, std::string>> config_rows(const RunConfig& config,
                                                             const nlohmann::json& progress);

/// The training curves of a metrics.csv (`step,loss,...`) of a run that has done `steps_done`
/// steps: the loss, and the accuracies on one shared [0, 1] axis. Empty fields are gaps. Throws
/// IoError naming the line and the field when the text is not such a file of that run
/// (train::read_metrics_csv: a row of the wrong length, a field that is not a number or out of
/// its range, a step the run has not reached, seconds past the run's `seconds_done`) or has no rows.
std::vector<inspect::Chart> training_charts(const std::string& metrics_csv, std::int64_t steps_done,
                                            double seconds_done);

/// The layer the report opens on, where the answer is read: the last cross-attention layer
/// (a seq2seq decoder's attention over the source), else the last layer; "" when `layers` is
/// empty.
std::string answer_layer(const std::vector<AttentionLayerInfo>& layers);

/// The whole report of a run: title, config rows, charts (or why metrics.csv could not be
/// read), the right alignment's legend, the layer it opens on (answer_layer), notes and
/// examples.
inspect::Report build_report(const LoadedRun& run, std::vector<inspect::InspectedExample> examples,
                             std::vector<std::string> notes);

}  // namespace attograd::cli
