// `attograd inspect --format html`: the report (renderers.hpp).
#include "renderers.hpp"

#include "console.hpp"
#include "report_builder.hpp"
#include "snapshot_probes.hpp"

#include "data/text.hpp"
#include "inspect/head_score_curves.hpp"
#include "inspect/render_html.hpp"
#include "inspect/snapshot.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace attograd::cli {

std::vector<RenderedFile> render_report(const Inspection& in) {
    inspect::Report report = build_report(in.run, in.examples, in.notes);
    if (in.faithfulness != nullptr) report.faithfulness = *in.faithfulness;
    report.decoding = in.decoding;
    report.example_maps = in.example_maps;
    const std::filesystem::path snapshots = in.run.dir / snapshot_file;
    if (std::filesystem::exists(snapshots)) {
        try {
            auto loaded = inspect::load_snapshots(snapshots);
            try {
                const Vocabularies vocab = vocabularies(in.run.config);
                check_run_snapshots(loaded, vocab.target, in.run.counters.steps_done,
                                    snapshot_layout(*in.run.model, in.run.config.model, *in.run.task, vocab),
                                    probe_outputs(*in.run.model, in.run.config.model, *in.run.task, vocab));
            } catch (const ValueError& e) {
                throw IoError(fmt::format("load_snapshots: '{}': {}", snapshots.string(), e.what()));
            }
            report.snapshots = std::move(loaded);
            // A language model's heads over training: when its previous-token and induction heads
            // form (Olsson et al. 2022), beside the loss curve's plateau and drop.
            if (in.run.config.model.kind == "lm")
                for (auto& chart : inspect::head_score_charts(report.snapshots))
                    report.charts.push_back(std::move(chart));
        } catch (const Error& e) {                // the report is still worth having without them
            check_still_read(in.run, "inspect");  // a newer save's file, not a bad one
            output(stderr, "attograd: warning: {}; the report has no training replay\n",
                   data::escape_control(e.what()));
            report.notes.push_back(fmt::format("attention snapshots could not be read: {}", e.what()));
        }
    }
    return {{"", inspect::render_html(report)}};
}

}  // namespace attograd::cli
