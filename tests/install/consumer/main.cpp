// A user's program: both include forms of an installed attograd, a tiny forward and backward.
#include <attograd/attograd.hpp>
#include <attograd/core/tensor.hpp>

#include <iostream>

int main() {
    using namespace attograd;
    const Tensor x = tensor({3, 4}, {2}, {.requires_grad = true});
    const Tensor n = norm(x);
    n.backward();
    std::cout << "norm " << n.item() << " grad " << x.grad() << "\n";
    return n.item() == 5.0 ? 0 : 1;
}
