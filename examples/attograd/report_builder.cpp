// What `inspect --format html` puts in the report: the run's configuration rows that apply to
// it, its training charts from metrics.csv, and the examples.
#include "report_builder.hpp"
#include "quoting.hpp"

#include "train/file_io.hpp"
#include "train/metrics_csv.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

namespace attograd::cli {

namespace {

/// Whether "section.field" applies to a run configured as `c`.
bool applies(const RunConfig& c, const std::string& key) {
    const bool hard = c.model.attention == "hard";
    const bool local = c.model.window >= 0;
    if (key == "model.estimator") return hard;
    if (key == "model.local") return local;
    if (key == "model.window") return local;
    if (key == "model.decoder_layers" || key == "model.attention") return c.model.kind == "seq2seq";
    if (key == "model.max_target_len") return !writes_per_input(c.model);
    if (key == "model.score" || key == "model.next_token") return c.model.kind != "lm";
    const bool rnn = c.model.kind == "rnn";
    if (key == "model.cell" || key == "model.decoder" || key == "model.bidirectional" ||
        key == "model.rnn_layers")
        return rnn;
    if (key == "model.layers" || key == "model.ffn_dim" || key == "model.next_token" || key == "model.heads")
        return !rnn;
    if (key == "train.momentum") return c.train.optim == "sgd";
    if (key == "task.data" || key == "task.chars") return c.task.name == "data";
    if (key == "task.lang" || key == "task.min_freq" || key == "task.max_vocab")
        return c.task.name == "translate";
    return true;
}

void flatten(const nlohmann::json& json, const std::string& prefix, const RunConfig& config,
             std::vector<std::pair<std::string, std::string>>& rows) {
    for (auto it = json.begin(); it != json.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object()) {
            flatten(*it, key, config, rows);
        } else if (applies(config, key)) {
            std::string value = it->is_string() ? it->get<std::string>() : it->dump();
            if (value.size() > 300) value = value.substr(0, 300) + " \u2026";
            rows.emplace_back(key, value);
        }
    }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> config_rows(const RunConfig& config,
                                                             const nlohmann::json& progress) {
    nlohmann::json json = to_json(config);
    json.erase("vocab");
    json.erase("target_vocab");
    json.erase("format");
    json.erase("format_version");
    std::vector<std::pair<std::string, std::string>> rows;
    flatten(json, "", config, rows);
    rows.emplace_back("model.attention_span",
                      config.model.window >= 0
                          ? fmt::format("local-{} (window D = {})", config.model.local, config.model.window)
                          : std::string("global"));
    rows.emplace_back("vocab_size", std::to_string(config.vocab.size()));
    if (config.target_vocab)
        rows.emplace_back("target_vocab_size", std::to_string(config.target_vocab->size()));
    flatten(nlohmann::json{{"progress", progress}}, "", config, rows);
    return rows;
}

std::vector<inspect::Chart> training_charts(const std::string& metrics_csv, std::int64_t steps_done,
                                            double seconds_done) {
    train::check_metrics_header(metrics_csv, train::CSVLogger(metrics_csv_options()).header(), "metrics.csv");
    const train::MetricsTable table =
        train::read_metrics_csv(metrics_csv, steps_done, "metrics.csv", seconds_done);
    const auto column = [&](const std::string& name) { return table.column(name); };
    const auto* steps = column("step");
    AG_CHECK(!steps->empty(), IoError, "metrics.csv has a header but no rows");
    const auto series = [&](const std::string& name, const std::string& label, const std::string& colour) {
        inspect::Series s{.name = label, .colour = colour, .x = {}, .y = {}};
        if (const auto* values = column(name)) {
            for (std::size_t i = 0; i < values->size(); ++i) {
                if (!std::isfinite((*values)[i])) continue;  // evaluated only every few steps
                s.x.push_back((*steps)[i]);
                s.y.push_back((*values)[i]);
            }
        }
        return s;
    };
    std::vector<inspect::Chart> charts;
    inspect::Chart loss{.title = "training loss",
                        .x_label = "step",
                        .y_label = "cross-entropy (nats)",
                        .series = {},
                        .y_min = 0.0,
                        .y_max = std::nullopt};
    if (column("loss") != nullptr) loss.series.push_back(series("loss", "training loss", "#c0392b"));
    charts.push_back(std::move(loss));
    inspect::Chart accuracy{.title = "accuracy",
                            .x_label = "step",
                            .y_label = "accuracy",
                            .series = {},
                            .y_min = 0.0,
                            .y_max = 1.0};
    for (const auto& [name, label, colour] :
         {std::tuple{"train_token_accuracy", "training token accuracy", "#7d3c98"},
          std::tuple{"heldout_token_accuracy", "held-out token accuracy", "#229954"},
          std::tuple{"heldout_sequence_accuracy", "held-out sequence accuracy", "#2471a3"}}) {
        if (column(name) != nullptr) accuracy.series.push_back(series(name, label, colour));
    }
    charts.push_back(std::move(accuracy));
    return charts;
}

std::string answer_layer(const std::vector<AttentionLayerInfo>& layers) {
    const auto cross = std::find_if(layers.rbegin(), layers.rend(), [](const auto& l) { return l.cross; });
    if (cross != layers.rend()) return cross->name;
    return layers.empty() ? "" : layers.back().name;
}

inspect::Report build_report(const LoadedRun& run, std::vector<inspect::InspectedExample> examples,
                             std::vector<std::string> notes) {
    inspect::Report report;
    report.title = fmt::format("attograd run: {} ({})", run.config.task.name, shown_path(run.dir));
    report.config = config_rows(run.config, run.progress);
    const std::filesystem::path metrics = run.dir / "metrics.csv";
    try {
        report.charts =
            training_charts(train::read_file(metrics), run.counters.steps_done, run.counters.seconds);
    } catch (const Error& e) {
        check_still_read(run, "inspect");  // a newer save's file, not a bad one
        report.charts_error = e.what();    // the page says the curves could not be drawn, and why
    }
    if (!run.task->info().alignment.empty())
        report.alignment_legend = "right alignment: " + run.task->info().alignment;
    report.open_module = answer_layer(run.model->attention_layers());
    report.notes = std::move(notes);
    report.examples = std::move(examples);
    return report;
}

}  // namespace attograd::cli
