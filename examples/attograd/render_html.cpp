// The self-contained HTML report of an inspected run: config, training curve, every head.
#include "render_html.hpp"

#include "text.hpp"

#include "inspect/render_svg.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace attograd::cli {

namespace {

using inspect::xml_escape;

/// One series of a line chart.
struct Series {
    std::string name;
    std::string colour;  ///< CSS colour
    std::vector<double> x, y;
};

std::string render_line_chart(const std::string& title, const std::vector<Series>& series) {
    constexpr int width = 640, height = 260, left = 60, right = 20, top = 30, bottom = 40;
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
        "fill=\"white\"/>\n"
        "<text x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
        width, height, width, height, left, xml_escape(title), left, top, width - left - right,
        height - top - bottom);
    double x_min = 0.0, x_max = 1.0;
    bool any = false;
    for (const auto& s : series) {
        for (const double x : s.x) {
            x_min = any ? std::min(x_min, x) : x;
            x_max = any ? std::max(x_max, x) : x;
            any = true;
        }
    }
    if (x_max <= x_min) x_max = x_min + 1.0;
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\">{:g}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:g}</text>\n", left,
        height - bottom + 16, x_min, width - right, height - bottom + 16, x_max);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n",
                       (left + width - right) / 2, height - 8);
    for (std::size_t k = 0; k < series.size(); ++k) {
        const auto& s = series[k];
        double y_min = 0.0, y_max = 1.0;
        for (std::size_t i = 0; i < s.y.size(); ++i) {
            y_min = i == 0 ? s.y[i] : std::min(y_min, s.y[i]);
            y_max = i == 0 ? s.y[i] : std::max(y_max, s.y[i]);
        }
        if (y_max <= y_min) y_max = y_min + 1.0;
        std::string points;
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (!std::isfinite(s.y[i])) continue;
            const double px = left + (s.x[i] - x_min) / (x_max - x_min) * (width - left - right);
            const double py = top + (1.0 - (s.y[i] - y_min) / (y_max - y_min)) * (height - top - bottom);
            points += fmt::format("{:.1f},{:.1f} ", px, py);
        }
        out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                           xml_escape(s.colour), points);
        out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{} ({:.3g} \u2013 {:.3g})</text>\n",
                           left + 8 + 200 * static_cast<int>(k), top + 14, xml_escape(s.colour),
                           xml_escape(s.name), y_min, y_max);
    }
    out += "</svg>\n";
    return out;
}



std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> fields(1);
    for (const char c : line) {
        if (c == ',') {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    return fields;
}

const std::vector<double>* column(const std::vector<std::pair<std::string, std::vector<double>>>& columns,
                                  const std::string& name) {
    for (const auto& [header, values] : columns) {
        if (header == name) return &values;
    }
    return nullptr;
}

std::string tokens_html(const std::vector<std::string>& tokens) {
    std::string out;
    for (const auto& token : tokens) out += "<span class=\"tok\">" + xml_escape(printable(token)) + "</span>";
    return out.empty() ? "<em>(none)</em>" : out;
}

std::string config_rows(const nlohmann::json& json, const std::string& prefix) {
    std::string out;
    for (auto it = json.begin(); it != json.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object()) {
            out += config_rows(*it, key);
        } else {
            std::string value = it->dump();
            if (value.size() > 300) value = value.substr(0, 300) + " \u2026";
            out += fmt::format("<tr><td>{}</td><td><code>{}</code></td></tr>\n", xml_escape(key),
                               xml_escape(value));
        }
    }
    return out;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<double>>> parse_metrics_csv(const std::string& csv) {
    std::vector<std::pair<std::string, std::vector<double>>> columns;
    std::istringstream lines(csv);
    std::string line;
    if (!std::getline(lines, line)) return columns;
    for (auto& header : split_csv_line(line)) columns.emplace_back(header, std::vector<double>{});
    while (std::getline(lines, line)) {
        const auto fields = split_csv_line(line);
        if (fields.size() != columns.size()) continue;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            double value = std::numeric_limits<double>::quiet_NaN();
            try {
                std::size_t used = 0;
                value = std::stod(fields[i], &used);
                if (used != fields[i].size()) value = std::numeric_limits<double>::quiet_NaN();
            } catch (const std::exception&) {
            }
            columns[i].second.push_back(value);
        }
    }
    return columns;
}

std::string render_html(const Report& report) {
    std::string out = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<style>\n"
        "body {{ font-family: sans-serif; margin: 2em; color: #222; }}\n"
        "h2 {{ border-bottom: 1px solid #ccc; }}\n"
        "table {{ border-collapse: collapse; }} td {{ padding: 2px 10px; border-bottom: 1px solid #eee; }}\n"
        ".tok {{ font-family: monospace; background: #eef; margin: 1px; padding: 1px 4px; border-radius: "
        "3px; }}\n"
        ".heads {{ display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }}\n"
        "</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
        xml_escape(report.title));
    for (const auto& note : report.notes) out += "<p>" + xml_escape(note) + "</p>\n";

    out += "<h2>Training curve</h2>\n";
    const auto columns = parse_metrics_csv(report.metrics_csv);
    const auto* steps = column(columns, "step");
    if (steps == nullptr || steps->empty()) {
        out += "<p><em>no metrics.csv in this run</em></p>\n";
    } else {
        std::vector<Series> loss;
        std::vector<Series> accuracy;
        if (const auto* values = column(columns, "loss"))
            loss.push_back({"training loss", "#c0392b", *steps, *values});
        for (const auto& [name, colour] : {std::pair{"heldout_sequence_accuracy", "#2471a3"},
                                           std::pair{"heldout_token_accuracy", "#229954"}}) {
            const auto* values = column(columns, name);
            if (values == nullptr) continue;
            Series series{name, colour, {}, {}};  // keep only the evaluated steps
            for (std::size_t i = 0; i < values->size() && i < steps->size(); ++i) {
                if (std::isfinite((*values)[i])) {
                    series.x.push_back((*steps)[i]);
                    series.y.push_back((*values)[i]);
                }
            }
            accuracy.push_back(std::move(series));
        }
        out += "<div class=\"heads\">\n" + render_line_chart("training loss", loss) +
               render_line_chart("held-out accuracy", accuracy) + "</div>\n";
    }

    out += "<h2>Run configuration</h2>\n<table>\n" + config_rows(report.config, "") + "</table>\n";

    for (std::size_t e = 0; e < report.examples.size(); ++e) {
        const auto& example = report.examples[e];
        out += fmt::format("<h2>Example {}</h2>\n<p>source: {}</p>\n<p>prediction: {}</p>\n", e + 1,
                           tokens_html(example.source), tokens_html(example.prediction));
        if (!example.target.empty()) out += "<p>expected: " + tokens_html(example.target) + "</p>\n";
        out += "<div class=\"heads\">\n";
        for (const auto& map : example.maps) {
            out += "<figure>" + inspect::render_svg(map);
            if (map.saliency_correlation) {
                out += fmt::format("<figcaption>Spearman correlation with saliency: {:.3f}</figcaption>",
                                   *map.saliency_correlation);
            }
            out += "</figure>\n";
        }
        if (example.saliency) {
            out += "<figure>" + inspect::render_svg(*example.saliency) +
                   "<figcaption>gradient \u00d7 input saliency</figcaption></figure>\n";
        }
        out += "</div>\n";
    }
    out += "</body>\n</html>\n";
    return out;
}

}  // namespace attograd::cli
