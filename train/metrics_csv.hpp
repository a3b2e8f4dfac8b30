// Reading a metrics CSV back (CSVLogger's file): parsed and checked against the run.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace attograd::train {

/// A metrics CSV as CSVLogger writes it: the header's column names and each column's values,
/// row by row (NaN where a row leaves the field empty).
struct MetricsTable {
    std::vector<std::string> header;           ///< the column names, `step` first
    std::vector<std::vector<double>> columns;  ///< one per header name, each with one value per row
    /// The column named `name`, or nullptr.
    const std::vector<double>* column(const std::string& name) const;
};

/// Parses the metrics CSV `text` of a run that has done `steps_done` steps and checks what every
/// such file of the run satisfies: lines ending in \n alone (no \r); a header whose first column
/// is `step`; rows of as many fields
/// (none at all before the first log); each step an integer in [1, steps_done], rising from row
/// to row; every other field empty or a decimal number (no hex, inf or nan); a column named
/// `loss`, `lr` or `seconds` (or ending in `_loss`) never negative, one whose name ends in
/// `accuracy` within [0, 1]; `seconds` never falling from row to row, and at most `seconds_done`
/// (the run's seconds of training, to the millisecond the rows are rounded to). Rows that satisfy
/// all this but that the run did not write (another logging cadence, other values) are not
/// detected. Throws IoError starting with `where` (e.g. the file's path) and naming the line and
/// field.
MetricsTable read_metrics_csv(const std::string& text, std::int64_t steps_done, const std::string& where,
                              double seconds_done = std::numeric_limits<double>::infinity());

/// What is wrong with the first line of `text` against `header` (as check_metrics_header says
/// it, without `where`), or "" when `text` starts with it.
std::string metrics_header_problem(const std::string& text, const std::string& header);

/// Throws IoError starting with `where` when `text` does not start with `header` (the header line
/// the CSVLogger writes, with its newline): its columns are read by name, so renamed, added or
/// reordered ones would be drawn as others. The message shows both first lines (control and
/// invisible characters escaped).
void check_metrics_header(const std::string& text, const std::string& header, const std::string& where);

}  // namespace attograd::train
