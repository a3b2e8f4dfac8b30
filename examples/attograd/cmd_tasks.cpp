// `attograd tasks`: the bundled tasks with their default model, target and right alignment.
#include "commands.hpp"
#include "config.hpp"

#include "data/task.hpp"

#include <fmt/format.h>

namespace attograd::cli {

int cmd_tasks() {
    for (const auto& name : data::task_names()) {
        const auto task = data::make_task(name);
        const TaskInfo& info = task->info();
        const RunConfig config = default_config(*task);
        const ModelConfig& m = config.model;
        fmt::print("{}\n", info.name);
        fmt::print("  {}\n", info.description);
        fmt::print("  example:   {}\n", info.example);
        fmt::print(
            "  model:     {} (embed {}, {} encoder self-attention layer(s), {} decoder layer(s), {} head(s), "
            "{} score), {} steps\n",
            m.kind, m.embed_dim, m.layers, m.decoder_layers, m.heads, m.score, config.train.steps);
        fmt::print("  target:    {:.0f}% held-out {} accuracy\n", 100 * target_accuracy(info.name),
                   info.metric == Metric::Sequence ? "sequence (exact match)" : "token");
        fmt::print("  alignment: {}\n\n", info.alignment.empty() ? "none defined" : info.alignment);
    }
    fmt::print(
        "data\n  your own TSV file: attograd train --data FILE.tsv [--chars]; one source<TAB>target per "
        "line\n");
    return 0;
}

}  // namespace attograd::cli
