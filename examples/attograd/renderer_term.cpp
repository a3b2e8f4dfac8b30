// `attograd inspect --format term`: the heat maps in the terminal (renderers.hpp).
#include "renderers.hpp"

#include "console.hpp"
#include "evaluation.hpp"

#include "inspect/render_term.hpp"
#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::cli {

std::vector<RenderedFile> render_term(const Inspection& in) {
    const Task& task = *in.run.task;
    // Under mpirun stdout is the launcher's forwarding: a terminal even when mpirun's own output
    // goes to a file, so colour codes would end up there.
    const inspect::TermOptions term{
        .colour = optim::under_launcher() ? inspect::TermColour::Plain : inspect::detect_term_colour(stdout),
        .width = std::max<std::int64_t>(20, inspect::terminal_width(stdout))};
    std::string text;
    for (const auto& note : in.notes) text += note + "\n";
    if (!in.notes.empty()) text += "\n";
    for (std::size_t e = 0; e < in.examples.size(); ++e) {
        const auto& ex = in.examples[e];
        text += fmt::format("example {}: {}\n\n", e + 1,
                            prediction_line(task, ex.source, ex.prediction, ex.target));
        for (const auto& map : ex.maps) {
            text += fmt::format("layer {}: {}", map.layer, inspect::render_heatmap(map, term));
            if (map.saliency_correlation)
                text +=
                    fmt::format("Spearman correlation with saliency: {:+.3f}\n", *map.saliency_correlation);
            text += "\n";
        }
        for (const auto* extra : {&ex.saliency, &ex.rollout, &ex.flow})
            if (*extra) text += inspect::render_heatmap(**extra, term) + "\n";
    }
    if (!task.info().alignment.empty()) text += fmt::format("right alignment: {}\n", task.info().alignment);
    return {{"", std::move(text)}};
}

}  // namespace attograd::cli
