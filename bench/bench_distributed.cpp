// Data-parallel training steps over MPI (optim::DistributedDataParallel) for the large
// configuration of bench_train_step (B 8, T 256, E 256, h 8): steps per second, time in the
// gradient allreduce per step, and the gradient bytes each rank sends.
//
//   OMP_NUM_THREADS=1 mpirun -np N bench_distributed [--steps S] [--deterministic]
//
// Two scalings: strong (the global batch of 8 split across the N ranks, as `attograd train`
// does) and weak (8 examples on every rank). Every rank runs the same steps; the time of a step
// is rank 0's wall time between barriers (the slowest rank sets it). "allreduce" is the time
// average_gradients spends in MPI calls, waiting for a slower rank included; "rank 0 cpu ms" is
// rank 0's own CPU time per step (its share of the work, whatever the load). The load average
// comes first: this machine is shared, and other processes' load moves every figure.
#include "attograd.hpp"
#include "timing.hpp"
#include "train_step_model.hpp"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <string>

using namespace attograd;

namespace {

struct Figures {
    double ms_per_step = 0.0, cpu_ms_per_step = 0.0, allreduce_ms = 0.0;
    std::int64_t bytes = 0, buckets = 0;
};

Figures run(std::int64_t batch_per_rank, int steps, bool deterministic) {
    const bench::Config c{"large", batch_per_rank, 256, 256, 8, -1};
    Generator gen(0);
    bench::Model model(c, gen);
    optim::DistributedDataParallel ddp(model.parameters(), {.deterministic = deterministic});
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    Generator data(1 + static_cast<std::uint64_t>(optim::world().rank()));
    const Tensor tokens = randint(0, 16, {c.batch, c.time}, data);
    const Tensor targets = randint(0, 16, {c.batch * c.time}, data);
    const auto step = [&] {
        adam.zero_grad();
        const Tensor x = model.embedding->forward(tokens);                              // [B, T, E]
        const Tensor y = model.attention->forward(x, {.need_weights = false}).output;   // [B, T, E]
        const Tensor logits = reshape(model.head->forward(y), {c.batch * c.time, 16});  // [B T, 16]
        cross_entropy(logits, targets).backward();
        ddp.average_gradients(static_cast<double>(c.batch));
        adam.step();
    };
    for (int i = 0; i < 3; ++i) step();  // warm-up: buffers, JIT kernels
    optim::world().barrier();
    const double comm_before = ddp.communication_seconds();
    const double start = bench::now(bench::Clock::Wall), cpu_start = bench::now(bench::Clock::ThreadCpu);
    for (int i = 0; i < steps; ++i) step();
    const double cpu = bench::now(bench::Clock::ThreadCpu) - cpu_start;
    optim::world().barrier();
    const double seconds = bench::now(bench::Clock::Wall) - start;
    return {.ms_per_step = 1e3 * seconds / steps,
            .cpu_ms_per_step = 1e3 * cpu / steps,
            .allreduce_ms = 1e3 * (ddp.communication_seconds() - comm_before) / steps,
            .bytes = ddp.gradient_bytes(),
            .buckets = ddp.bucket_count()};
}

std::string load_average() {
    std::ifstream file("/proc/loadavg");
    std::string one, five, fifteen;
    file >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
    const int steps = bench::int_flag(argc, argv, "--steps", 20);
    bool deterministic = false;
    for (int i = 1; i < argc; ++i)
        deterministic = deterministic || std::strcmp(argv[i], "--deterministic") == 0;
    const optim::ProcessGroup& world = optim::world();
    const int n = world.size();
    if (world.is_main()) {
        fmt::print("ranks {}, OMP_NUM_THREADS {}, load average {}, {} reduction, {} timed steps\n", n,
                   std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "unset", load_average(),
                   deterministic ? "deterministic" : "allreduce", steps);
        fmt::print("{:<8} {:>6} {:>10} {:>9} {:>13} {:>14} {:>14}\n", "scaling", "B/rank", "ms/step",
                   "steps/s", "examples/s", "allreduce ms", "rank 0 cpu ms");
    }
    for (const bool strong : {true, false}) {
        if (strong && 8 % n != 0) continue;
        const std::int64_t per_rank = strong ? 8 / n : 8;
        const Figures f = run(per_rank, steps, deterministic);
        if (world.is_main()) {
            fmt::print("{:<8} {:>6} {:>10.1f} {:>9.2f} {:>13.1f} {:>14.2f} {:>14.1f}\n",
                       strong ? "strong" : "weak", per_rank, f.ms_per_step, 1e3 / f.ms_per_step,
                       1e3 * static_cast<double>(per_rank * n) / f.ms_per_step, f.allreduce_ms,
                       f.cpu_ms_per_step);
            if (!strong)
                fmt::print("gradients: {} bytes ({:.2f} MB) per rank per step in {} bucket(s)\n", f.bytes,
                           static_cast<double>(f.bytes) / 1e6, f.buckets);
        }
    }
    if (world.is_main()) fmt::print("load average after: {}\n", load_average());
    return 0;
}
