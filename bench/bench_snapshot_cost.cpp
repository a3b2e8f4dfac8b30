// What one attention snapshot costs next to one training step of the `attograd` program's
// default models (reverse, sort, dates): the snapshot `train` takes (3 held-out probes,
// inspect::AttentionSnapshotter), the probes' forwards alone, and one training step (batch of
// the task's default size, forward, cross-entropy, backward, clipping, Adam), timed in
// alternation on the thread's CPU clock (the machine is shared). Prints the cost of snapshots
// every N steps as a share of the training steps alone (held-out evaluation and start-up, which
// a real run also spends, are left out, so the share of a whole run is smaller), and the
// smallest N under 2 %, and the wall time (fsync included) and size of saving the 32 snapshots
// taken (the most `train` keeps). bench/snapshot_cost.sh measures whole `attograd train` runs.
//
//   bench_snapshot_cost
#include "config.hpp"
#include "data/task.hpp"
#include "models.hpp"
#include "snapshot_probes.hpp"

#include "attograd.hpp"
#include "timing.hpp"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace attograd;
using namespace attograd::cli;

int main() {
    omp_set_num_threads(1);  // one thread: the CPU clock is then the work done
    const auto file = std::filesystem::temp_directory_path() / "bench_snapshot_cost.safetensors";
    std::printf(
        "| task | ms / training step | ms / snapshot | of which forwards | cost at N = 20 (default) | smallest N "
        "under 2 %% | save 32 snapshots | file |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const std::string name : {"reverse", "sort", "dates"}) {
        const auto task = attograd::data::make_task(name);
        const RunConfig config = default_config(*task);
        Generator generator(config.train.seed);
        const auto model = make_model(config.model, config.vocab, generator);
        optim::Adam optimizer(model->parameters(), {.lr = config.train.lr});
        auto probes = snapshot_probes(*model, config.model, *task, config.vocab, 3);
        std::vector<std::function<std::vector<std::string>()>> forwards;
        for (const auto& p : probes) forwards.push_back(p.forward);
        inspect::AttentionSnapshotter snapshotter(*model, std::move(probes), {.every = 1});
        model->train();

        Generator data(1);
        const std::function<void()> step = [&] {
            std::vector<std::vector<std::int64_t>> sources, targets;
            for (std::int64_t i = 0; i < config.train.batch; ++i) {
                const Example example = task->train_example(data);
                sources.push_back(config.vocab.encode(example.source));
                targets.push_back(config.vocab.encode(example.target));
            }
            const Batch batch = model->make_batch(sources, &targets);
            optimizer.zero_grad();
            const Tensor logits = model->forward(batch).logits;
            Tensor loss = cross_entropy(reshape(logits, {-1, logits.size(-1)}), reshape(batch.target, {-1}),
                                        {.ignore_index = Vocabulary::pad_id});
            loss.backward();
            optim::clip_grad_norm(model->parameters(), config.train.clip);
            optimizer.step();
        };
        std::int64_t taken = 0;
        const std::function<void()> snapshot = [&] { snapshotter.snapshot(taken++); };
        const std::function<void()> forwards_only = [&] {
            NoGradGuard no_grad;
            model->eval();
            for (const auto& f : forwards) (void)f();
            model->train();
        };
        const auto s = bench::interleaved_median_seconds(std::vector{step, snapshot, forwards_only},
                                                         std::vector{10, 2, 2}, 15, bench::Clock::ThreadCpu);
        const double cost20 = s[1] / (20 * s[0]);
        const auto smallest = static_cast<long>(std::ceil(s[1] / (0.02 * s[0])));
        const auto& taken_snapshots = snapshotter.snapshots();  // 2 per round, warm-up included
        const double save = bench::median_seconds([&] { inspect::save_snapshots(file, taken_snapshots); }, 1,
                                                  5, 1, bench::Clock::Wall);
        std::printf("| %s | %.2f | %.2f | %.2f | %.1f %% | %ld | %.1f ms | %.0f KiB |\n", name.c_str(),
                    1e3 * s[0], 1e3 * s[1], 1e3 * s[2], 100 * cost20, smallest, 1e3 * save,
                    static_cast<double>(std::filesystem::file_size(file)) / 1024);
        std::filesystem::remove(file);
    }
    return 0;
}
