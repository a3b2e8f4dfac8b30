// A data-parallel run in which one rank fails at step 3 (throws, or is killed): the other ranks,
// waiting in the gradient allreduce, must end too. `rank_failure RANK throw|kill`.
#include "attograd.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <string_view>

int main(int argc, char** argv) {
    using namespace attograd;
    if (argc != 3) {
        fmt::print(stderr, "usage: rank_failure RANK throw|kill\n");
        return 2;
    }
    const int failing = std::atoi(argv[1]);
    const std::string_view mode = argv[2];
    optim::ProcessGroup& group = optim::world();
    try {
        Generator gen(0);
        nn::Linear layer({.in_features = 4, .out_features = 2}, gen);
        optim::DistributedDataParallel ddp(layer.parameters());
        optim::SGD sgd(layer.parameters(), {.lr = 0.1});
        for (int step = 0; step < 1000; ++step) {
            if (step == 3 && group.rank() == failing) {
                if (mode == "kill") std::raise(SIGKILL);
                AG_CHECK(false, ValueError, "rank_failure: rank {} fails at step {}", group.rank(), step);
            }
            sgd.zero_grad();
            sum(layer.forward(randn({2, 4}, gen))).backward();
            ddp.average_gradients();
            sgd.step();
        }
    } catch (const Error& e) {
        group.abort(2, e.what());  // never returns: MPI_Abort ends every rank
    }
    fmt::print("rank {}: finished without the failure\n", group.rank());
    return 0;
}
