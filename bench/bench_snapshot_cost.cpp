// What one attention snapshot costs next to one training step of models of the `attograd`
// program's default sizes (reverse, sort, dates), built from the library alone: an
// nn::Seq2SeqTransformer (pre-norm, width 64, feed-forward 128, the task's layers and heads),
// the snapshot of 3 held-out probes (inspect::AttentionSnapshotter, teacher-forced forwards as
// `train` takes them), the probes' forwards alone, and one training step (batch of 32, forward,
// cross-entropy, backward, clipping, Adam), timed in alternation on the thread's CPU clock (the
// machine is shared). Prints the cost of snapshots every N steps as a share of the training
// steps alone (held-out evaluation and start-up, which a real run also spends, are left out, so
// the share of a whole run is smaller), and the smallest N under 2 %, and the wall time (fsync
// included) and size of saving the 32 snapshots taken (the most `train` keeps).
// bench/snapshot_cost.sh measures whole `attograd train` runs.
//
//   bench_snapshot_cost
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace attograd;

namespace {

/// A task and the layers and heads of the program's default model for it (`attograd tasks`).
struct TaskModel {
    const char* task;
    std::int64_t encoder_layers, decoder_layers, heads;
};

/// The program's other defaults, the same for the three tasks (a run's config.json).
constexpr std::int64_t width = 64, feed_forward = 128, batch_size = 32;
constexpr double lr = 3e-3, clip = 1.0;

/// A probe of held-out `example` as `train` takes it: the teacher-forced forward (the argmax
/// output tokens), each layer's labels, and the task's right source position per output row
/// on the cross-attention layers.
inspect::SnapshotProbe probe_of(nn::Seq2SeqTransformer& model, std::int64_t decoder_layers,
                                const data::Example& example, const data::Vocabulary& vocab,
                                const data::Task& task) {
    const data::Batch batch = data::collate({example}, vocab);
    const data::TeacherForcing tf = data::teacher_forcing(batch.target);
    inspect::SnapshotProbe probe;
    probe.source = example.source;
    probe.target = example.target;
    probe.crop = true;
    std::vector<std::string> inputs = vocab.lookup_tokens(tf.decoder_input.ids.to_vector<std::int64_t>());
    std::vector<std::string> outputs = example.target;
    outputs.emplace_back(data::Vocabulary::eos);
    probe.labels = [source = example.source, inputs, outputs](const std::string& layer) {
        if (layer.find("encoder.") != std::string::npos) return inspect::TokenLabels{source, source};
        if (layer.ends_with("self_attn")) return inspect::TokenLabels{inputs, inputs};
        return inspect::TokenLabels{outputs, source};
    };
    probe.forward = [&model, &vocab, source = batch.source.ids, input = tf.decoder_input.ids] {
        const Tensor logits = model.forward(source, input);  // [1, T, V]
        return vocab.lookup_tokens(argmax(logits, -1).to_vector<std::int64_t>());
    };
    if (const auto right = task.alignment(example))
        for (std::int64_t layer = 0; layer < decoder_layers; ++layer)
            probe.right[fmt::format("transformer.decoder.layers.{}.multihead_attn", layer)] = *right;
    return probe;
}

}  // namespace

int main() {
    omp_set_num_threads(1);  // one thread: the CPU clock is then the work done
    const auto file = std::filesystem::temp_directory_path() / "bench_snapshot_cost.safetensors";
    std::printf(
        "| task | ms / training step | ms / snapshot | of which forwards | cost at N = 20 (default) | "
        "smallest N "
        "under 2 %% | save 32 snapshots | file |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const TaskModel& sizes :
         {TaskModel{"reverse", 0, 1, 1}, TaskModel{"sort", 0, 1, 1}, TaskModel{"dates", 2, 2, 4}}) {
        const auto task = data::make_task(sizes.task);
        const data::Vocabulary vocab(task->symbols());
        Generator generator(0);
        nn::TransformerOptions arch{.d_model = width,
                                    .nhead = sizes.heads,
                                    .num_encoder_layers = sizes.encoder_layers,
                                    .num_decoder_layers = sizes.decoder_layers,
                                    .dim_feedforward = feed_forward,
                                    .dropout = 0.0,
                                    .norm_first = true};
        nn::Seq2SeqTransformer model(
            {.vocab_size = vocab.size(), .pad_id = vocab.pad_id, .transformer = arch}, generator);
        optim::Adam optimizer(model.parameters(), {.lr = lr});
        std::vector<inspect::SnapshotProbe> probes;
        for (std::size_t i = 0; i < 3; ++i)
            probes.push_back(probe_of(model, sizes.decoder_layers, task->held_out()[i], vocab, *task));
        std::vector<std::function<std::vector<std::string>()>> forwards;
        for (const auto& p : probes) forwards.push_back(p.forward);
        inspect::AttentionSnapshotter snapshotter(model, std::move(probes), {.every = 1});
        model.train();

        Generator data(1);
        const std::function<void()> step = [&] {
            std::vector<data::Example> examples;
            for (std::int64_t i = 0; i < batch_size; ++i) examples.push_back(task->train_example(data));
            const data::Batch batch = data::collate(examples, vocab);
            const data::TeacherForcing tf = data::teacher_forcing(batch.target);
            optimizer.zero_grad();
            const Tensor logits = model.forward(batch.source.ids, tf.decoder_input.ids);  // [B, T, V]
            Tensor loss = cross_entropy(transpose(logits, 1, 2), tf.labels, {.ignore_index = vocab.pad_id});
            loss.backward();
            optim::clip_grad_norm(model.parameters(), clip);
            optimizer.step();
        };
        std::int64_t taken = 0;
        const std::function<void()> snapshot = [&] { snapshotter.snapshot(taken++); };
        const std::function<void()> forwards_only = [&] {
            NoGradGuard no_grad;
            model.eval();
            for (const auto& f : forwards) (void)f();
            model.train();
        };
        const auto s = bench::interleaved_median_seconds(std::vector{step, snapshot, forwards_only},
                                                         std::vector{10, 2, 2}, 15, bench::Clock::ThreadCpu);
        const double cost20 = s[1] / (20 * s[0]);
        const auto smallest = static_cast<long>(std::ceil(s[1] / (0.02 * s[0])));
        const auto& taken_snapshots = snapshotter.snapshots();  // 2 per round, warm-up included
        const double save = bench::median_seconds([&] { inspect::save_snapshots(file, taken_snapshots); }, 1,
                                                  5, 1, bench::Clock::Wall);
        std::printf("| %s | %.2f | %.2f | %.2f | %.1f %% | %ld | %.1f ms | %.0f KiB |\n", sizes.task,
                    1e3 * s[0], 1e3 * s[1], 1e3 * s[2], 100 * cost20, smallest, 1e3 * save,
                    static_cast<double>(std::filesystem::file_size(file)) / 1024);
        std::filesystem::remove(file);
    }
    return 0;
}
