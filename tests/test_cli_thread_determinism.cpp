// `attograd train` writes byte-identical checkpoints on 1, 2 and 4 threads (the
// --seed help text promises it), set by omp_set_num_threads and by OMP_NUM_THREADS.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <omp.h>

#include <string>
#include <vector>

namespace {

constexpr int kThreadCounts[] = {1, 2, 4};

}  // namespace

TEST_CASE("attograd train gives byte-identical checkpoints on 1, 2 and 4 threads") {
    // Widths and batches large enough that the projections, attention and scattered sums split
    // into blocks (the default model is small enough to stay mostly on one thread).
    const std::vector<std::vector<std::string>> configs = {
        {"--task", "reverse", "--score", "bilinear", "--heads", "4"},
        {"--task", "reverse", "--score", "additive", "--window", "3", "--local", "m"},
        {"--task", "copy", "--window", "4", "--local", "p", "--heads", "2", "--optim", "sgd", "--momentum",
         "0.9"},
        {"--task", "copy", "--model", "encoder", "--layers", "2", "--heads", "4", "--ffn-dim", "256",
         "--optim", "adamw", "--clip", "1"},
    };
    cli_test::TempDir tmp;
    for (std::size_t c = 0; c < configs.size(); ++c) {
        std::vector<std::string> args = configs[c];
        for (const char* extra : {"--embed-dim", "128", "--batch", "64", "--steps", "6", "--no-early-stop",
                                  "--eval-every", "3", "--snapshot-every", "0"})
            args.emplace_back(extra);
        std::string first_model, first_optimizer;
        for (const int threads : kThreadCounts) {
            omp_set_num_threads(threads);
            const std::string dir = (tmp.path() / fmt::format("run{}_{}", c, threads)).string();
            cli_test::train(dir, args);
            const std::string model = cli_test::read_text(fs::path(dir) / "model.safetensors");
            const std::string optimizer = cli_test::read_text(fs::path(dir) / "optimizer.safetensors");
            if (threads == 1) {
                first_model = model;
                first_optimizer = optimizer;
                continue;
            }
            INFO("config ", c, " on ", threads, " threads");
            CHECK(model == first_model);
            CHECK(optimizer == first_optimizer);
        }
        omp_set_num_threads(omp_get_num_procs());
    }
}

TEST_CASE("attograd train under OMP_NUM_THREADS=1 and =4 writes the same checkpoint") {
    // The environment variable (read when OpenMP starts) rather than omp_set_num_threads.
    cli_test::TempDir tmp;
    std::vector<std::string> models;
    for (const char* threads : {"1", "4"}) {
        const std::string dir = (tmp.path() / fmt::format("run{}", threads)).string();
        const auto end = cli_test::run_child(
            {"train", "--task", "reverse", "--heads", "2", "--embed-dim", "128", "--batch", "64", "--steps",
             "10", "--no-early-stop", "--quiet", "--out", dir},
            {fmt::format("OMP_NUM_THREADS={}", threads)});
        REQUIRE(end.code == 0);
        models.push_back(cli_test::read_text(fs::path(dir) / "model.safetensors"));
    }
    CHECK(!models[0].empty());
    CHECK(models[0] == models[1]);
}
