// A user's program: both include forms of an installed attograd, a tiny forward and backward,
// and a padded batch of a bundled task.
#include <attograd/attograd.hpp>
#include <attograd/core/tensor.hpp>

#include <iostream>

int main() {
    using namespace attograd;
    const Tensor x = tensor({3, 4}, {2}, {.requires_grad = true});
    const Tensor n = norm(x);
    n.backward();
    std::cout << "norm " << n.item() << " grad " << x.grad() << "\n";
    // data/: a task, its vocabulary and one padded batch.
    const auto task = data::make_task("reverse");
    const data::Vocabulary vocab(task->symbols());
    const data::Batcher batcher(task->held_out(), vocab, {.batch_size = 4, .shuffle = true});
    Generator gen(0);
    const auto batches = batcher.epoch(gen);
    std::cout << "batches " << batches.size() << " mask rows " << batches[0].source.key_padding_mask.size(0)
              << "\n";
    return n.item() == 5.0 && batches.size() == 125 ? 0 : 1;
}
