// The HTML report's faithfulness section: the head table, the verdicts' rules, one head's evidence.
#include "inspect/faithfulness_html.hpp"

#include "core/error.hpp"
#include "inspect/attention_map.hpp"
#include "inspect/chart_svg.hpp"
#include "inspect/render_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attograd::inspect {

namespace {

std::string head_label(const HeadId& head) {
    return fmt::format("{} head {}", head.layer.empty() ? "(root)" : head.layer, head.head);
}

// "decisive", "not an explanation" or "partial": the verdict's kind, for the row's class.
std::string verdict_kind(const std::string& verdict) {
    if (verdict.rfind("decisive", 0) == 0) return "decisive";
    if (verdict.rfind("not an explanation", 0) == 0) return "not-explanation";
    return "partial";
}

std::string heads_html(const FaithfulnessTable& table) {
    // in a box that scrolls sideways on a window too narrow for even the wrapped table
    std::string out = "<div class=\"faith-scroll\">\n<table class=\"faith\" id=\"faith-heads\">\n<thead><tr>";
    for (const auto& c : faithfulness_columns()) out += "<th>" + xml_escape(c) + "</th>";
    out += "<th>verdict</th></tr></thead>\n<tbody>\n";
    for (const auto& h : table.heads) {
        out += fmt::format("<tr class=\"{}\">", verdict_kind(h.verdict));
        for (const auto& c : faithfulness_cells(h)) out += "<td>" + xml_escape(c) + "</td>";
        out += "<td class=\"verdict\">" + xml_escape(h.verdict) + "</td></tr>\n";
    }
    return out + "</tbody></table>\n</div>\n";
}

std::string rules_html(double epsilon) {
    std::string out =
        "<details id=\"faith-rules\" open>\n<summary>How a verdict is decided (the first rule that "
        "applies)</summary>\n<ol>\n";
    for (const auto& rule : verdict_rules(epsilon)) out += "<li>" + xml_escape(rule) + "</li>\n";
    return out +
           "</ol>\n<p class=\"hint\">align: mean weight on the right key; acc / acc_ko: accuracy with the "
           "head "
           "and with it knocked out; tau_grad / tau_loo: Kendall tau between the weights and gradient / "
           "leave-one-out importance; perm_tvd / perm_iqr: median and spread of the output's TVD under "
           "permuted weights; adv_jsd: the largest JSD of weights that keep the output within the TVD bound; "
           "flip_top / flip_rand: decisions flipped by erasing the top-weighted / a random key; frac_*: "
           "fraction of keys erased before the decision flips, ranked by attention, gradient, their "
           "product, at random.</p>\n</details>\n";
}

// One measure's cell: a bar of value / largest and the value ("-" when undefined).
std::string bar_cell(const std::vector<double>& values, std::size_t i) {
    if (i >= values.size() || !std::isfinite(values[i])) return "<td class=\"measure\">-</td>";
    double largest = 0.0;
    for (const double v : values)
        if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
    const double share = largest > 0 ? std::abs(values[i]) / largest : 0.0;
    return fmt::format(
        "<td class=\"measure\"><span class=\"bar\" style=\"width: {:.1f}px\"></span> <span "
        "class=\"value\">{:.3f}</span></td>",
        100.0 * share, values[i]);
}

std::string evidence_html(const FaithfulnessEvidence& e, double epsilon) {
    std::string out = fmt::format("<h3 id=\"faith-head\">{}</h3>\n", xml_escape(head_label(e.head)));
    out += fmt::format(
        "<p class=\"hint\">Example {}: each key's weight, its importance by gradient (attention held "
        "fixed) and by leave-one-out (the output's TVD when the key is removed from the head); each "
        "bar is scaled to its column's largest value.</p>\n",
        e.example + 1);
    out +=
        "<table class=\"faith\" id=\"faith-importance\">\n<thead><tr><th>key</th><th>attention</th>"
        "<th>gradient</th><th>leave-one-out</th></tr></thead>\n<tbody>\n";
    for (std::size_t i = 0; i < e.keys.size(); ++i)
        out += "<tr><td><span class=\"tok\">" + xml_escape(display_label(e.keys[i])) + "</span></td>" +
               bar_cell(e.attention, i) + bar_cell(e.gradient, i) + bar_cell(e.leave_one_out, i) + "</tr>\n";
    out += "</tbody></table>\n<div class=\"charts\" id=\"faith-charts\">\n";
    out += chart_svg(histogram_chart(
        fmt::format("permutation: output TVD ({} permuted weightings)", e.permutation_tvd.size()),
        "TVD of the output from the original", e.permutation_tvd));
    if (!e.adversarial_jsd.empty())
        out += chart_svg(
            histogram_chart(fmt::format("adversarial: JSD of weights with the output within TVD {}", epsilon),
                            "JSD from the head's weights", e.adversarial_jsd));
    out += chart_svg(erasure_chart(e.erasure));
    return out + "</div>\n";
}

}  // namespace

Chart histogram_chart(std::string title, std::string x_label, const std::vector<double>& values,
                      std::int64_t bins) {
    AG_CHECK(bins >= 1, ValueError, "histogram_chart: bins must be >= 1, got {}", bins);
    double hi = 0.0;
    for (const double v : values)
        if (std::isfinite(v)) hi = std::max(hi, v);
    if (hi <= 0.0) {
        hi = 1.0;
        bins = 1;
    }
    const double width = hi / static_cast<double>(bins);
    std::vector<double> counts(static_cast<std::size_t>(bins), 0.0);
    for (const double v : values) {
        if (!std::isfinite(v)) continue;
        const auto bin =
            std::clamp<std::int64_t>(static_cast<std::int64_t>(std::max(v, 0.0) / width), 0, bins - 1);
        counts[static_cast<std::size_t>(bin)] += 1.0;
    }
    Series outline{.name = "count", .colour = "#2471a3", .x = {0.0}, .y = {0.0}};
    for (std::int64_t b = 0; b < bins; ++b) {  // up the bin's left edge, along its top, on to the next
        const double count = counts[static_cast<std::size_t>(b)];
        outline.x.insert(outline.x.end(),
                         {static_cast<double>(b) * width, static_cast<double>(b + 1) * width});
        outline.y.insert(outline.y.end(), {count, count});
    }
    outline.x.push_back(hi);
    outline.y.push_back(0.0);
    return {.title = std::move(title),
            .x_label = std::move(x_label),
            .y_label = "count",
            .series = {outline},
            .y_min = 0.0,
            .y_max = std::max(1.0, *std::max_element(counts.begin(), counts.end()))};
}

Chart erasure_chart(const std::vector<ErasureResult>& erasure) {
    Chart chart{.title = "erasure: decisions flipped against keys removed, top first",
                .x_label = "fraction of keys removed",
                .y_label = "share of decisions flipped",
                .series = {},
                .y_min = 0.0,
                .y_max = 1.0};
    const std::pair<const char*, std::optional<double> ErasureResult::*> rankings[] = {
        {"by attention", &ErasureResult::fraction_attention},
        {"by gradient", &ErasureResult::fraction_gradient},
        {"by attention x gradient", &ErasureResult::fraction_product},
        {"at random", &ErasureResult::fraction_random}};
    for (const auto& [name, field] : rankings) {
        Series s{.name = name, .colour = "", .x = {}, .y = {}};
        for (int k = 0; k <= 20; ++k) {
            const double x = k / 20.0;
            double flipped = 0.0;
            for (const auto& r : erasure)
                if (const auto& f = r.*field; f && *f <= x + 1e-12) flipped += 1.0;
            s.x.push_back(x);
            s.y.push_back(erasure.empty() ? 0.0 : flipped / static_cast<double>(erasure.size()));
        }
        chart.series.push_back(std::move(s));
    }
    return chart;
}

std::string faithfulness_html(const FaithfulnessSection& section) {
    std::string out =
        "<section id=\"faithfulness\">\n<h2>Faithfulness</h2>\n<p class=\"hint\">Does a head's attention "
        "explain the output? Each head is tested by knockout, permutation, adversarial weights, "
        "leave-one-out and erasure (Jain &amp; Wallace 2019; Serrano &amp; Smith 2019; Wiegreffe &amp; "
        "Pinter 2019).</p>\n";
    if (section.table.heads.empty())
        out += "<p class=\"empty\" id=\"faith-none\">no head was tested</p>\n";
    else
        out += heads_html(section.table);
    out += rules_html(section.table.epsilon);
    if (section.evidence) out += evidence_html(*section.evidence, section.table.epsilon);
    return out + "</section>\n";
}

}  // namespace attograd::inspect
