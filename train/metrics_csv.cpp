// Reading a metrics CSV back (CSVLogger's file): parsed and checked against the run.
#include "train/metrics_csv.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace attograd::train {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> fields(1);
    for (const char c : line) {
        if (c == ',')
            fields.emplace_back();
        else
            fields.back() += c;
    }
    return fields;
}

/// A field or name of the file as a message shows it: its first 40 bytes (then "... (N bytes)"),
/// control bytes escaped.
std::string shown(const std::string& text) { return data::escape_control(excerpt(text, 40)); }

bool ends_with(const std::string& text, const std::string& end) {
    return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// The range a column's values must lie in, by its name: [low, high].
std::pair<double, double> column_range(const std::string& name) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    if (ends_with(name, "accuracy")) return {0.0, 1.0};
    if (name == "loss" || ends_with(name, "_loss") || name == "lr" || name == "seconds") return {0.0, inf};
    return {-inf, inf};
}

}  // namespace

const std::vector<double>* MetricsTable::column(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) return &columns[i];
    return nullptr;
}

MetricsTable read_metrics_csv(const std::string& text, std::int64_t steps_done, const std::string& where,
                              double seconds_done) {
    // CSVLogger ends lines with \n alone: a \r is an edit, which the reader and a resume (whose
    // logger carries the text on) must both refuse.
    if (const auto cr = text.find('\r'); cr != std::string::npos)
        throw IoError(
            fmt::format("{} line {}: holds a carriage return (\\r\\n line ends?); the file is "
                        "written with \\n line ends",
                        where, 1 + std::count(text.begin(), text.begin() + cr, '\n')));
    // Every line whole: a resume appends rows, so a cut last line would join the next row.
    AG_CHECK(text.empty() || text.back() == '\n', IoError,
             "{}: its last line does not end with a newline (the file was cut or edited)", where);
    std::istringstream lines(text);
    std::string line;
    AG_CHECK(std::getline(lines, line), IoError, "{}: is empty", where);
    MetricsTable table;
    table.header = split_csv_line(line);
    AG_CHECK(table.header.front() == "step", IoError, "{}: the header's first column is '{}', not 'step'",
             where, shown(table.header.front()));
    table.columns.resize(table.header.size());
    std::int64_t number = 1, last_step = 0;
    while (std::getline(lines, line)) {
        ++number;
        AG_CHECK(!line.empty(), IoError, "{} line {}: is empty (each row is one logged step)", where, number);
        const auto fields = split_csv_line(line);
        AG_CHECK(fields.size() == table.header.size(), IoError,
                 "{} line {}: holds {} comma-separated field{}, the header {}", where, number, fields.size(),
                 fields.size() == 1 ? "" : "s", table.header.size());
        for (std::size_t i = 0; i < fields.size(); ++i) {
            double value = std::numeric_limits<double>::quiet_NaN();
            if (!fields[i].empty()) {
                // As CSVLogger writes numbers: decimal, never hex floats, inf or nan.
                const bool decimal = fields[i].find_first_not_of("0123456789.eE+-") == std::string::npos;
                std::size_t used = 0;
                try {
                    value = std::stod(fields[i], &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                AG_CHECK(decimal && used == fields[i].size() && std::isfinite(value), IoError,
                         "{} line {}: field '{}' is not a decimal number: '{}' (train writes each in "
                         "decimal, within a "
                         "double's range)",
                         where, number, shown(table.header[i]), shown(fields[i]));
                const auto [low, high] = column_range(table.header[i]);
                AG_CHECK(value >= low && value <= high, IoError,
                         "{} line {}: field '{}' is {}, outside [{}, {}]", where, number,
                         shown(table.header[i]), value, low, high);
            }
            table.columns[i].push_back(value);
        }
        const double step = table.columns[0].back();
        AG_CHECK(
            !fields[0].empty() && fields[0].find_first_not_of("0123456789") == std::string::npos &&
                fields[0].front() != '0' && std::isfinite(step) && step == std::floor(step) && step >= 1.0 &&
                step <= static_cast<double>(steps_done) && step > static_cast<double>(last_step),
            IoError,
            "{} line {}: step '{}' is not a step of this run (whole, in digits without a leading 0, {}, at "
            "most the {} steps done)",
            where, number, shown(fields[0]),
            last_step == 0 ? std::string("from 1") : fmt::format("after the previous row's {}", last_step),
            steps_done);
        last_step = static_cast<std::int64_t>(step);
        // The run's clock: each row's seconds at least the previous row's, and none past the run's
        // (rows round to 1 ms).
        const std::vector<double>* seconds = table.column("seconds");
        if (seconds != nullptr && !seconds->empty())
            AG_CHECK(!(seconds->back() > seconds_done + 5e-4), IoError,
                     "{} line {}: seconds {} is past the run's {} seconds of training (its record of them, "
                     "or this file, was changed after it was written)",
                     where, number, seconds->back(), seconds_done);
        if (seconds != nullptr && seconds->size() >= 2) {
            const double now = seconds->back(), before = (*seconds)[seconds->size() - 2];
            AG_CHECK(!(now < before), IoError, "{} line {}: seconds {} is less than the previous row's {}",
                     where, number, now, before);
        }
    }
    return table;
}

std::string metrics_header_problem(const std::string& text, const std::string& header) {
    if (text.starts_with(header)) return {};
    return fmt::format("does not start with the header train writes ('{}'): its first line is '{}'",
                       header.substr(0, header.size() - 1),
                       data::escape_control(excerpt(std::string_view(text).substr(0, text.find('\n')), 120)));
}

void check_metrics_header(const std::string& text, const std::string& header, const std::string& where) {
    const std::string problem = metrics_header_problem(text, header);
    AG_CHECK(problem.empty(), IoError, "{}: {}", where, problem);
}

}  // namespace attograd::train
