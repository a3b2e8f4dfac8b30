// Data-parallel training in your own program: each rank trains on its share of the batch and
// the ranks average their gradients, so each step is the step of one process on the whole batch.
// Run it as `mpirun -np 2 ./distributed`; alone it is rank 0 of 1 and makes no MPI call.
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    optim::ProcessGroup& world = optim::world();  // MPI_Init under mpirun
    try {
        Generator init(
            0);  // the same seed on every rank; the constructor below copies rank 0's values anyway
        nn::Linear model({.in_features = 4, .out_features = 3}, init);
        optim::DistributedDataParallel ddp(model.parameters());
        optim::SGD sgd(model.parameters(), {.lr = 0.1});
        Generator data(42);  // every rank draws the same batch and keeps its share
        for (int step = 0; step < 20; ++step) {
            const std::int64_t batch = 32;
            const Tensor x = randn({batch, 4}, data), y = randint(0, 3, {batch}, data);
            const std::int64_t begin = batch * world.rank() / world.size(),
                               end = batch * (world.rank() + 1) / world.size();
            const Tensor loss =
                cross_entropy(model.forward(slice(x, 0, begin, end)), slice(y, 0, begin, end));
            sgd.zero_grad();
            loss.backward();
            ddp.average_gradients(static_cast<double>(end - begin));  // weighted: the whole batch's gradient
            sgd.step();
            if (world.rank() == 0 && step % 5 == 0)
                fmt::print("step {} loss on rank 0's share {:.4f}\n", step, loss.item());
        }
    } catch (const std::exception& e) {
        world.abort(2, e.what());  // ends every rank instead of leaving them waiting in a collective
    }
}
