// gru_cell (the fused GRU step over pre-activations): gradcheck, the formula, bad arguments.
#include "helpers.hpp"

using namespace attograd;
using testing::rand64;
using Inputs = std::vector<Tensor>;

namespace {

// torch.nn.GRUCell's formula composed from elementwise ops, gates r, z, n.
Tensor composed(const Tensor& gi, const Tensor& gh, const Tensor& h) {
    const std::int64_t H = h.size(1);
    auto gate = [H](const Tensor& g, std::int64_t k) { return narrow(g, 1, k * H, H); };
    const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));
    const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));
    const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));
    return (1.0 - z) * n + z * h;
}

}  // namespace

TEST_CASE("gru_cell passes gradcheck for gi, gh and h") {
    for (std::int64_t batch : {1, 3, 40}) {  // 40 rows: split over threads when there are two
        INFO("batch " << batch);
        const std::int64_t H = 4;
        const Inputs in{rand64({batch, 3 * H}, 1), rand64({batch, 3 * H}, 2), rand64({batch, H}, 3)};
        CHECK_GRADCHECK([](const Inputs& x) { return gru_cell(x[0], x[1], x[2]); }, in);
    }
}

TEST_CASE("gru_cell equals GRUCell's formula, in value and in every gradient") {
    const std::int64_t B = 5, H = 6;
    Tensor gi = rand64({B, 3 * H}, 4), gh = rand64({B, 3 * H}, 5), h = rand64({B, H}, 6);
    const Tensor r = rand64({B, H}, 7).detach();
    const Tensor fused = gru_cell(gi, gh, h);
    sum(fused * r).backward();
    const Tensor dgi = gi.grad(), dgh = gh.grad(), dh = h.grad();
    gi.zero_grad();
    gh.zero_grad();
    h.zero_grad();
    const Tensor reference = composed(gi, gh, h);
    sum(reference * r).backward();
    CHECK(max(abs(fused - reference)).item() < 1e-14);
    CHECK(max(abs(dgi - gi.grad())).item() < 1e-14);
    CHECK(max(abs(dgh - gh.grad())).item() < 1e-14);
    CHECK(max(abs(dh - h.grad())).item() < 1e-14);
}

// A decoder steps the cell over however many rows its search keeps; a row's bits must not depend
// on the batch around it. float32 (Eigen's packet and scalar sigmoid and tanh round differently),
// widths that leave a partial SIMD packet and rows at every alignment.
TEST_CASE("gru_cell gives a row alone the bits it gets in a batch") {
    for (const std::int64_t H : {5, 37, 128}) {
        INFO("H " << H);
        const std::int64_t B = 7;
        const auto f32 = [](const Tensor& t) { return to_dtype(t, DType::Float32); };
        const Tensor gi = f32(rand64({B, 3 * H}, 21)), gh = f32(rand64({B, 3 * H}, 22)),
                     h = f32(rand64({B, H}, 23));
        const Tensor all = gru_cell(gi, gh, h);
        for (std::int64_t b = 0; b < B; ++b) {
            const auto row = [b](const Tensor& t) { return narrow(t, 0, b, 1); };
            CHECK(gru_cell(row(gi), row(gh), row(h)).to_vector<float>() == row(all).to_vector<float>());
        }
    }
}

TEST_CASE("gru_cell refuses bad arguments with the op's name and the shapes") {
    const Tensor gi = rand64({2, 9}, 8), gh = rand64({2, 9}, 9), h = rand64({2, 3}, 10);
    CHECK_THROWS_WITH_AS(gru_cell(gi, gh, rand64({2, 4}, 11)),
                         doctest::Contains("gru_cell: expected gi [B, 3H]"), ShapeError);
    CHECK_THROWS_WITH_AS(gru_cell(gi, rand64({3, 9}, 12), h), doctest::Contains("[3, 9]"), ShapeError);
    CHECK_THROWS_WITH_AS(gru_cell(gi, to_dtype(gh, DType::Float32), h),
                         doctest::Contains("gru_cell: gi, gh and h"), DTypeError);
    CHECK_THROWS_WITH_AS(gru_cell(gi, gh, Tensor()), doctest::Contains("gru_cell: undefined"), ValueError);
}
