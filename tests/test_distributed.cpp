// DistributedDataParallel and ProcessGroup: ctest runs this suite in one process and under
// `mpirun -np 2` and `-np 3` (tests/CMakeLists.txt); every case holds on any number of ranks.
#include "helpers.hpp"

#include "optim/distributed.hpp"

#include <cstdlib>
#include <cstring>

namespace {

using namespace attograd;
using optim::DistributedDataParallel;
using optim::world;

// A two-layer classifier [n, 4] -> [n, 3] with a third layer that no loss uses.
struct Mlp {
    Generator gen;
    nn::Linear hidden, out, unused;
    Mlp(std::uint64_t seed, DType dtype)
        : gen(seed),
          hidden({.in_features = 4, .out_features = 8, .dtype = dtype}, gen),
          out({.in_features = 8, .out_features = 3, .dtype = dtype}, gen),
          unused({.in_features = 2, .out_features = 2, .dtype = dtype}, gen) {}
    std::vector<Tensor> parameters() const {
        std::vector<Tensor> p = hidden.parameters();
        for (const nn::Linear* m : {&out, &unused})
            for (const Tensor& t : m->parameters()) p.push_back(t);
        return p;
    }
    Tensor loss(const Tensor& x, const Tensor& y) {
        return cross_entropy(out.forward(tanh(hidden.forward(x))), y);
    }
};

// The batch of step `step`: x [batch, 4], labels [batch] in [0, 3).
std::pair<Tensor, Tensor> batch_of(std::int64_t step, std::int64_t batch, DType dtype) {
    Generator gen(1000 + static_cast<std::uint64_t>(step));
    return {randn({batch, 4}, gen, {.dtype = dtype}), randint(0, 3, {batch}, gen)};
}

// This rank's share [start, start + length) of `batch` examples: the first batch % size ranks
// take one more, so splits are uneven and a rank may get none.
std::pair<std::int64_t, std::int64_t> share(std::int64_t batch) {
    const std::int64_t n = world().size(), r = world().rank();
    const std::int64_t base = batch / n, extra = batch % n;
    return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

std::vector<std::vector<double>> values(const std::vector<Tensor>& tensors) {
    std::vector<std::vector<double>> out;
    for (const Tensor& t : tensors) out.push_back(t.to_vector<double>());
    return out;
}

double max_difference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i].size() == b[i].size());
        for (std::size_t k = 0; k < a[i].size(); ++k) worst = std::max(worst, std::abs(a[i][k] - b[i][k]));
    }
    return worst;
}

// Adam steps on batches of the given sizes, each split across the ranks; every rank starts
// from its own initialisation (DistributedDataParallel must replace it by rank 0's).
std::vector<std::vector<double>> train_split(DType dtype, const std::vector<std::int64_t>& batches,
                                             optim::DistributedDataParallelOptions options = {}) {
    Mlp model(100 + static_cast<std::uint64_t>(world().rank()), dtype);
    DistributedDataParallel ddp(model.parameters(), options);
    optim::Adam adam(model.parameters(), {.lr = 1e-2});
    for (std::size_t step = 0; step < batches.size(); ++step) {
        const auto [x, y] = batch_of(static_cast<std::int64_t>(step), batches[step], dtype);
        const auto [start, length] = share(batches[step]);
        adam.zero_grad();
        if (length > 0) model.loss(narrow(x, 0, start, length), narrow(y, 0, start, length)).backward();
        ddp.average_gradients(static_cast<double>(length));
        adam.step();
    }
    CHECK_FALSE(model.unused.weight().grad().defined());  // no rank had a gradient: none made up
    return values(model.parameters());
}

// The same steps in this one process on whole batches, from rank 0's initialisation.
std::vector<std::vector<double>> train_whole(DType dtype, const std::vector<std::int64_t>& batches) {
    Mlp model(100, dtype);
    optim::Adam adam(model.parameters(), {.lr = 1e-2});
    for (std::size_t step = 0; step < batches.size(); ++step) {
        const auto [x, y] = batch_of(static_cast<std::int64_t>(step), batches[step], dtype);
        adam.zero_grad();
        model.loss(x, y).backward();
        adam.step();
    }
    return values(model.parameters());
}

// Whether every rank holds the same bits as rank 0 in `tensors`.
bool same_on_every_rank(const std::vector<Tensor>& tensors) {
    std::vector<Tensor> copies;
    for (const Tensor& t : tensors) copies.push_back(clone(t.detach()));
    world().broadcast(copies);
    bool same = true;
    for (std::size_t i = 0; i < tensors.size(); ++i)
        same = same && std::memcmp(tensors[i].raw_data(), copies[i].raw_data(),
                                   static_cast<std::size_t>(tensors[i].numel()) *
                                       dtype_size(tensors[i].dtype())) == 0;
    return !world().any(!same);
}

// Batches of 7, 5 and 2 examples: 7 and 5 split unevenly over 2 or 3 ranks, and with 3 ranks
// the batch of 2 leaves one rank with no example (weight 0).
const std::vector<std::int64_t> kBatches = {7, 5, 2, 7};

}  // namespace

TEST_CASE("DistributedDataParallel broadcasts rank 0's initial parameters") {
    Mlp model(100 + static_cast<std::uint64_t>(world().rank()), DType::Float32);
    const Mlp rank0(100, DType::Float32);
    if (world().size() > 1 && world().rank() > 0)
        CHECK(max_difference(values(model.parameters()), values(rank0.parameters())) >
              0.0);  // they did differ
    DistributedDataParallel ddp(model.parameters());
    CHECK(max_difference(values(model.parameters()), values(rank0.parameters())) == 0.0);
    CHECK(ddp.parameters().size() == 6);
}

TEST_CASE("DistributedDataParallel on N ranks equals one process with the whole batch in float64") {
    const auto split = train_split(DType::Float64, kBatches);
    const auto whole = train_whole(DType::Float64, kBatches);
    CHECK(max_difference(split, whole) < 1e-12);
}

TEST_CASE("DistributedDataParallel on N ranks equals one process to float32 rounding") {
    const auto split = train_split(DType::Float32, kBatches);
    const auto whole = train_whole(DType::Float32, kBatches);
    CHECK(max_difference(split, whole) < 2e-5);
    const auto deterministic = train_split(DType::Float32, kBatches, {.deterministic = true});
    CHECK(max_difference(deterministic, whole) < 2e-5);
}

TEST_CASE(
    "DistributedDataParallel deterministic reduction is bit for bit the same on every run and bucket size") {
    const auto first = train_split(DType::Float32, kBatches, {.deterministic = true});
    const auto again = train_split(DType::Float32, kBatches, {.deterministic = true});
    CHECK(max_difference(first, again) == 0.0);
    // Buckets of 4 floats: the same per-element sums, so the same bits.
    const auto small =
        train_split(DType::Float32, kBatches, {.bucket_cap_mb = 16.0 / (1024 * 1024), .deterministic = true});
    CHECK(max_difference(first, small) == 0.0);
}

TEST_CASE("DistributedDataParallel leaves every rank with the same gradients") {
    for (const bool deterministic : {false, true}) {
        Mlp model(7, DType::Float32);
        DistributedDataParallel ddp(model.parameters(),
                                    {.bucket_cap_mb = 40.0 / (1024 * 1024), .deterministic = deterministic});
        const auto [x, y] = batch_of(world().rank(), 3, DType::Float32);  // different data per rank
        model.loss(x, y).backward();
        ddp.average_gradients(1.0 + world().rank());
        const std::vector<Tensor> grads = {model.hidden.weight().grad(), model.out.bias().grad()};
        CHECK(same_on_every_rank(grads));
        CHECK_FALSE(model.unused.bias().grad().defined());
        if (world().size() > 1) CHECK(ddp.bucket_count() == (73 + 9) / 10);  // 73 floats in 10-float buckets
    }
}

TEST_CASE("DistributedDataParallel weights a gradient present on one rank only") {
    Mlp model(7, DType::Float64);
    DistributedDataParallel ddp(model.parameters());
    // Only rank 0 touches `unused`: d/dW sum(W) = 1 there, 0 elsewhere; weights rank + 1.
    if (world().rank() == 0) sum(model.unused.weight()).backward();
    ddp.average_gradients(1.0 + world().rank());
    const double n = world().size();
    const double expected = 1.0 / (n * (n + 1) / 2);
    for (const double g : model.unused.weight().grad().to_vector<double>())
        CHECK(g == doctest::Approx(expected).epsilon(1e-14));
    CHECK_FALSE(model.hidden.weight().grad().defined());
}

TEST_CASE("ProcessGroup sums and any over the ranks") {
    const double r = world().rank(), n = world().size();
    const std::vector<double> sums = world().sum({r, 1.0});
    CHECK(sums[0] == n * (n - 1) / 2);
    CHECK(sums[1] == n);
    CHECK(world().any(world().rank() == world().size() - 1));
    CHECK_FALSE(world().any(false));
    world().barrier();
    CHECK((world().native_handle() != nullptr) == (world().size() > 1));
}

TEST_CASE("DistributedDataParallel refuses bad options, parameters and weights") {
    Mlp model(7, DType::Float32);
    CHECK_THROWS_WITH_AS(DistributedDataParallel(model.parameters(), {.bucket_cap_mb = 0.0}),
                         doctest::Contains("bucket_cap_mb"), ValueError);
    CHECK_THROWS_WITH_AS(DistributedDataParallel({arange(3)}), doctest::Contains("int64"), ValueError);
    CHECK_THROWS_WITH_AS(DistributedDataParallel({Tensor()}), doctest::Contains("parameter 0 is undefined"),
                         ValueError);
    DistributedDataParallel ddp(model.parameters());
    CHECK_THROWS_WITH_AS(ddp.average_gradients(-1.0), doctest::Contains("weight must be finite"), ValueError);
    CHECK_THROWS_WITH_AS(ddp.average_gradients(std::nan("")), doctest::Contains("weight must be finite"),
                         ValueError);
    // Every rank passes 0: all of them throw together (no rank is left waiting).
    CHECK_THROWS_WITH_AS(ddp.average_gradients(0.0), doctest::Contains("sum to 0"), ValueError);
    CHECK_THROWS_WITH_AS(world().broadcast({}, world().size()), doctest::Contains("root"), ValueError);
}

TEST_CASE("DistributedDataParallel refuses ranks whose parameters differ, on every rank") {
    if (world().size() == 1) {
        CHECK_NOTHROW(world().broadcast({zeros({2, 3})}));
        return;
    }
    // The last rank's second tensor is [3, 3]: the shapes differ.
    const std::int64_t rows = world().rank() == world().size() - 1 ? 3 : 2;
    CHECK_THROWS_WITH_AS(DistributedDataParallel({zeros({4}), zeros({rows, 3})}),
                         doctest::Contains("tensor 1 differs"), optim::DistributedError);
    // The last rank passes one tensor more.
    std::vector<Tensor> tensors = {zeros({4})};
    if (world().rank() == world().size() - 1) tensors.push_back(zeros({2}));
    CHECK_THROWS_WITH_AS(world().broadcast(tensors), doctest::Contains("different numbers of tensors"),
                         optim::DistributedError);
}

TEST_CASE("world is one process of one without an MPI launcher") {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
        CHECK(world().size() >= 1);
        CHECK(world().rank() < world().size());
        return;
    }
    CHECK(world().size() == 1);
    CHECK(world().rank() == 0);
    CHECK(world().is_main());
}
