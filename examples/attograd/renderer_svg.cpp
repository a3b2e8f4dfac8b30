// `attograd inspect --format svg`: one SVG file per map (renderers.hpp).
#include "renderers.hpp"

#include "inspect/render_svg.hpp"

#include <fmt/format.h>

namespace attograd::cli {

std::vector<RenderedFile> render_svg_files(const Inspection& in) {
    const std::string& alignment = in.run.task->info().alignment;
    const inspect::SvgOptions options{
        .alignment_legend = alignment.empty() ? "right alignment" : "right alignment: " + alignment};
    std::vector<RenderedFile> files;
    const auto add = [&](const inspect::AttentionMap& map, std::string name) {
        files.push_back({std::move(name),
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + inspect::render_svg(map, options)});
    };
    for (std::size_t e = 0; e < in.examples.size(); ++e) {
        const auto& ex = in.examples[e];
        for (const auto& map : ex.maps)
            add(map, fmt::format("example{}_layer{}_head{}.svg", e + 1, map.layer, map.head));
        if (ex.saliency) add(*ex.saliency, fmt::format("example{}_saliency.svg", e + 1));
        if (ex.rollout) add(*ex.rollout, fmt::format("example{}_rollout.svg", e + 1));
        if (ex.flow) add(*ex.flow, fmt::format("example{}_flow.svg", e + 1));
    }
    return files;
}

}  // namespace attograd::cli
