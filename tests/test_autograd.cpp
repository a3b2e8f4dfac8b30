// The tape: accumulation, release after backward, retain_graph, NoGradGuard, anomaly mode.
#include "helpers.hpp"

#include <latch>
#include <thread>

using namespace attograd;
using testing::rand64;

TEST_CASE("a tensor used twice gets the sum of both gradients") {
    Tensor x = tensor({1.0, 2.0, 3.0}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    Tensor y = sum(x * x + x);
    y.backward();
    CHECK(x.grad().at({0}) == doctest::Approx(3.0));
    CHECK(x.grad().at({2}) == doctest::Approx(7.0));
}

TEST_CASE("leaf gradients accumulate across backward calls until zero_grad") {
    Tensor x = tensor({2.0}, {1}, {.dtype = DType::Float64, .requires_grad = true});
    sum(x * 3.0).backward();
    sum(x * 3.0).backward();
    CHECK(x.grad().at({0}) == doctest::Approx(6.0));
    x.zero_grad();
    CHECK_FALSE(x.grad().defined());
}

TEST_CASE("the tape is empty after backward and a second backward throws unless retained") {
    autograd::clear_tape();
    Tensor x = rand64({4, 3}, 1);
    Tensor loss = sum(tanh(matmul(x, transpose(x, 0, 1))));
    CHECK(autograd::tape_size() > 0);
    loss.backward();
    CHECK(autograd::tape_size() == 0);
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("already released"), AutogradError);

    Tensor loss2 = sum(exp(x));
    loss2.backward(true);
    const double once = x.grad().at({0, 0});
    loss2.backward();
    CHECK(x.grad().at({0, 0}) == doctest::Approx(once + std::exp(x.at({0, 0}))));
}

TEST_CASE("entries no live tensor can reach are swept, so eval loops do not grow the tape") {
    autograd::clear_tape();
    Tensor w = rand64({8, 8}, 2);
    for (int i = 0; i < 5000; ++i) {
        Tensor unused = tanh(matmul(w, w));
    }
    CHECK(autograd::tape_size() < 2100);
}

TEST_CASE("an output destroyed without backward releases what its entry saved at once, not at a sweep") {
    // The eval-loop case with gradients on: each forward's saved tensors used to live until the
    // tape reached 1024 entries (gigabytes for kept attention weights).
    autograd::clear_tape();
    Tensor x = rand64({4}, 5);
    std::weak_ptr<detail::TensorImpl> saved_seen;
    for (int i = 0; i < 3000; ++i) {
        Tensor saved = exp(x.detach());  // what a backward keeps, e.g. attention weights
        saved_seen = saved.impl();
        Tensor out = x.detach() * 2.0;  // no entry of its own until the record below
        autograd::record("keeps_saved", {x}, out,
                         [saved](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy * saved); });
        CHECK_FALSE(saved_seen.expired());  // held by the entry while `out` lives
        // `out` dies here
    }
    CHECK(autograd::tape_size() == 0);
    CHECK(saved_seen.expired());
    // an output still alive keeps its entry, and its backward still works
    Tensor kept = sum(x * 3.0);
    for (int i = 0; i < 100; ++i) Tensor dropped = exp(x);
    CHECK(autograd::tape_size() == 2);
    kept.backward();
    CHECK(x.grad().at({1}) == doctest::Approx(3.0));
}

TEST_CASE("an output destroyed on another thread is released by the tape that recorded it") {
    // A pipeline handing outputs to a consumer thread: the producer's tape used to keep every
    // entry (and what it saved) until its next sweep, 1024 entries later.
    autograd::clear_tape();
    Tensor x = rand64({4}, 6);
    std::weak_ptr<detail::TensorImpl> saved_seen;
    for (int i = 0; i < 50; ++i) {
        Tensor out = x.detach() * 2.0;
        {
            Tensor saved = exp(x.detach());
            saved_seen = saved.impl();
            autograd::record("keeps_saved", {x}, out,
                             [saved](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy * saved); });
        }
        std::thread([handed = std::move(out)]() mutable { handed = Tensor(); }).join();
    }
    CHECK(autograd::tape_size() == 0);
    CHECK(saved_seen.expired());
}

TEST_CASE("backward on another thread than the forward throws instead of doing nothing") {
    Tensor x = rand64({2}, 7);
    Tensor loss;
    std::latch recorded(1), tried(1);
    std::thread producer([&] {  // stays alive (its tape too) while the main thread tries
        loss = sum(x * x);
        recorded.count_down();
        tried.wait();
    });
    recorded.wait();
    Tensor mine = sum(x * 3.0);  // the main thread's own tape is not empty
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("recorded on another thread"), AutogradError);
    CHECK_FALSE(x.grad().defined());
    tried.count_down();
    producer.join();
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("recorded on another thread"), AutogradError);
    mine.backward();  // unaffected
    CHECK(x.grad().at({0}) == doctest::Approx(3.0));
}

TEST_CASE("NoGradGuard records nothing and detach cuts the graph") {
    Tensor x = rand64({3}, 3);
    {
        NoGradGuard guard;
        CHECK_FALSE((x * 2.0).requires_grad());
    }
    Tensor d = x.detach();
    CHECK_FALSE(d.requires_grad());
    CHECK(d.is_leaf());
    CHECK((x * 2.0).requires_grad());
}

TEST_CASE("backward from a non-scalar needs an explicit gradient") {
    Tensor x = rand64({3}, 4);
    Tensor y = x * 2.0;
    CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("one-element"), AutogradError);
    y.backward(ones({3}, {.dtype = DType::Float64}));
    CHECK(x.grad().at({1}) == doctest::Approx(2.0));
    Tensor z = x * 2.0;
    CHECK_THROWS_WITH_AS(z.backward(ones({4}, {.dtype = DType::Float64})), doctest::Contains("[4]"),
                         ShapeError);
}

TEST_CASE("anomaly mode names the op that produced the first NaN") {
    Tensor x = tensor({-1.0, 4.0}, {2}, {.dtype = DType::Float64, .requires_grad = true});
    AnomalyModeGuard anomaly;
    CHECK_THROWS_WITH_AS(sqrt(x), doctest::Contains("'sqrt'"), AutogradError);
    Tensor z = tensor({0.0}, {1}, {.dtype = DType::Float64, .requires_grad = true});
    Tensor s = sum(sqrt(z));  // forward is finite (0); backward divides by 0
    CHECK_THROWS_WITH_AS(s.backward(), doctest::Contains("backward of 'sqrt'"), AutogradError);
    autograd::clear_tape();
}

TEST_CASE("a narrow's gradient is added in place, never into a buffer another tensor's gradient shares") {
    // add's backward hands x and b one shared gradient buffer; the narrow's backward, run after
    // it, adds x's slice: written into the shared buffer, b's (and so c's) gradient would change
    Tensor a = rand64({3, 4}, 11), c = rand64({3, 4}, 12);
    const Tensor r1 = rand64({3, 2}, 13).detach(), r2 = rand64({3, 4}, 14).detach();
    auto fn = [&](const std::vector<Tensor>& in) {
        const Tensor x = in[0] * 2.0, b = in[1] * 3.0;
        const Tensor first =
            sum(narrow(x, 1, 1, 2) * r1);  // recorded before the add: its backward runs after
        return first + sum((x + b) * r2);
    };
    CHECK_GRADCHECK(fn, (std::vector<Tensor>{a, c}));
    // and the values: dc = 3 r2 exactly, da = 2 (r2 + r1 in columns 1..2)
    a.zero_grad();  // gradcheck's backward left its sums
    c.zero_grad();
    fn({a, c}).backward();
    for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 4; ++j) {
            CHECK(c.grad().at({i, j}) == 3.0 * r2.at({i, j}));
            const double slice = j >= 1 && j < 3 ? r1.at({i, j - 1}) : 0.0;
            CHECK(a.grad().at({i, j}) == doctest::Approx(2.0 * (r2.at({i, j}) + slice)));
        }
}

TEST_CASE("anomaly mode checks gradients a backward added in place") {
    Tensor x = tensor({1.0, 2.0, 3.0}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    AnomalyModeGuard anomaly;
    // narrow's backward adds the (NaN) upstream gradient into x's gradient buffer in place
    Tensor y = narrow(x * 2.0, 0, 1, 2);
    CHECK_THROWS_WITH_AS(y.backward(tensor({1.0, std::nan("")}, {2}, {.dtype = DType::Float64})),
                         doctest::Contains("backward of 'narrow'"), AutogradError);
    autograd::clear_tape();
}

TEST_CASE("requires_grad_ is refused on non-leaves and on integer tensors") {
    Tensor x = rand64({2}, 5);
    Tensor y = x * 2.0;
    CHECK_THROWS_AS(y.requires_grad_(), AutogradError);
    Tensor ids = index_tensor({1, 2}, {2});
    CHECK_THROWS_WITH_AS(ids.requires_grad_(), doctest::Contains("int64"), DTypeError);
}
