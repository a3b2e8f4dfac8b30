// `attograd tasks`: the bundled tasks with their default model, target and right alignment.
#include "commands.hpp"
#include "config.hpp"
#include "console.hpp"

#include "data/task.hpp"

#include <fmt/format.h>

namespace attograd::cli {

int cmd_tasks() {
    for (const auto& name : data::task_names()) {
        const auto task = data::make_task(name);
        const TaskInfo& info = task->info();
        const RunConfig config = default_config(*task);
        const ModelConfig& m = config.model;
        output(stdout, "{}\n", info.name);
        output(stdout, "  {}\n", info.description);
        output(stdout, "  example:   {}\n", info.example);
        if (m.kind == "lm") {
            output(stdout,
                   "  model:     lm (embed {}, {} causal self-attention layer(s), {} head(s), feed-forward "
                   "{}), {} "
                   "steps\n",
                   m.embed_dim, m.layers, m.heads, m.ffn_dim == 0 ? "none" : std::to_string(m.ffn_dim),
                   config.train.steps);
        } else {
            output(stdout,
                   "  model:     {} (embed {}, {} encoder self-attention layer(s), {} decoder layer(s), {} "
                   "head(s), {} score), {} steps\n",
                   m.kind, m.embed_dim, m.layers, m.decoder_layers, m.heads, m.score, config.train.steps);
        }
        output(stdout, "  target:    {:.0f}% held-out {} accuracy\n", 100 * target_accuracy(info.name),
               info.metric == Metric::Sequence ? "sequence (exact match)" : "token");
        output(stdout, "  alignment: {}\n\n", info.alignment.empty() ? "none defined" : info.alignment);
    }
    output(stdout,
           "translate\n  English -> --lang LANG (fr, de, es, ...) short messages from this machine's gettext "
           "catalogs (/usr/share/locale/LANG/LC_MESSAGES/*.mo), read at run time, word level\n  judged by "
           "exact match and corpus BLEU against every translation of a source: attograd train --task "
           "translate [--lang fr] [--min-freq 2] [--max-vocab N] [--vocab separate|shared]\n\n");
    output(
        stdout,
        "data\n  your own TSV file: attograd train --data FILE.tsv [--chars] [--vocab shared|separate]; one "
        "source<TAB>target per line\n");
    return 0;
}

}  // namespace attograd::cli
