// Learning-rate schedules: closed forms, chaining, state_dict, bad options.
// (Their lr sequences against PyTorch are checked by the trajectories in test_optim.cpp.)
#include "helpers.hpp"

#include <cmath>
#include <numbers>

using namespace attograd;
using namespace attograd::optim;

namespace {

SGD make_sgd(double lr) { return SGD({testing::rand64({2}, 1)}, {.lr = lr}); }

std::vector<double> lrs(LRScheduler& s, int steps) {
    std::vector<double> out{s.get_last_lr()};
    for (int i = 0; i < steps; ++i) {
        s.step();
        out.push_back(s.get_last_lr());
        CHECK(s.optimizer().lr() == s.get_last_lr());
    }
    return out;
}

}  // namespace

TEST_CASE("StepLR multiplies by gamma every step_size steps") {
    SGD opt = make_sgd(0.8);
    StepLR s(opt, {.step_size = 2, .gamma = 0.5});
    CHECK(lrs(s, 5) == std::vector<double>{0.8, 0.8, 0.4, 0.4, 0.2, 0.2});
    CHECK(s.last_epoch() == 5);
}

TEST_CASE("CosineAnnealingLR follows the closed form and goes on past T_max") {
    SGD opt = make_sgd(1.0);
    CosineAnnealingLR s(opt, {.T_max = 4, .eta_min = 0.2});
    const auto got = lrs(s, 8);
    for (int e = 0; e <= 8; ++e)
        CHECK(got[e] ==
              doctest::Approx(0.2 + 0.8 * (1 + std::cos(std::numbers::pi * e / 4)) / 2).epsilon(1e-15));
    CHECK(got[4] == doctest::Approx(0.2).epsilon(1e-15));
    CHECK(got[8] == doctest::Approx(1.0).epsilon(1e-15));
}

TEST_CASE("LinearWarmup ramps from start_factor and then holds end_factor, construction sets the lr") {
    SGD opt = make_sgd(1.0);
    LinearWarmup s(opt, {.start_factor = 0.25, .warmup_steps = 3});
    CHECK(opt.lr() == 0.25);
    CHECK(opt.initial_lr() == 1.0);
    CHECK(lrs(s, 4) == std::vector<double>{0.25, 0.5, 0.75, 1.0, 1.0});
}

TEST_CASE("SequentialLR: warm-up then cosine, each from the optimizer's initial lr") {
    SGD opt = make_sgd(1.0);
    auto warmup =
        std::make_shared<LinearWarmup>(opt, LinearWarmupOptions{.start_factor = 0.5, .warmup_steps = 2});
    auto cosine = std::make_shared<CosineAnnealingLR>(opt, CosineAnnealingLROptions{.T_max = 2});
    SequentialLR s(opt, {warmup, cosine}, {2});
    CHECK(cosine->base_lr() == 1.0);  // not the warmed-down lr set by the warm-up's construction
    const auto got = lrs(s, 4);
    CHECK(got[0] == 0.5);
    CHECK(got[1] == 0.75);
    CHECK(got[2] == 1.0);  // the cosine's step 0
    CHECK(got[3] == doctest::Approx(0.5).epsilon(1e-15));
    CHECK(got[4] == 0.0);
}

TEST_CASE("a schedule's state_dict resumes it") {
    SGD opt = make_sgd(1.0);
    CosineAnnealingLR s(opt, {.T_max = 10});
    for (int i = 0; i < 3; ++i) s.step();
    const StateDict state = s.state_dict();
    CHECK(state.at("last_epoch").dtype() == DType::Int64);

    SGD opt2 = make_sgd(1.0);
    CosineAnnealingLR s2(opt2, {.T_max = 10});
    s2.load_state_dict(state);
    CHECK(s2.last_epoch() == 3);
    CHECK(opt2.lr() == opt.lr());
    s.step();
    s2.step();
    CHECK(opt2.lr() == opt.lr());

    CHECK_THROWS_WITH_AS(s2.load_state_dict({}), doctest::Contains("missing keys [last_epoch]"), ValueError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", index_tensor({1}, {})}, {"gamma", scalar(1.0)}}),
                         doctest::Contains("unexpected keys [gamma]"), ValueError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", index_tensor({1}, {})}, {"gamma", scalar(1.0)}}),
                         doctest::Contains("LRScheduler.load_state_dict: unexpected keys [gamma]"),
                         ValueError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", scalar(1.0)}}),
                         doctest::Contains("must be int64"), DTypeError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", index_tensor({1}, {1})}}),
                         doctest::Contains("must be a 0-d tensor"), ShapeError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", Tensor{}}}),
                         doctest::Contains("'last_epoch' is an undefined tensor"), ValueError);
    CHECK_THROWS_WITH_AS(s2.load_state_dict({{"last_epoch", index_tensor({-2}, {})}}),
                         doctest::Contains("negative"), ValueError);
    CHECK(s2.last_epoch() == 4);
}

TEST_CASE("schedule options are validated with the option's name") {
    SGD opt = make_sgd(1.0);
    CHECK_THROWS_WITH_AS(StepLR(opt, {}), doctest::Contains("StepLR: step_size must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(StepLR(opt, {.step_size = 2, .gamma = -0.5}), doctest::Contains("StepLR: gamma"),
                         ValueError);
    CHECK_THROWS_WITH_AS(CosineAnnealingLR(opt, {}),
                         doctest::Contains("CosineAnnealingLR: T_max must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(CosineAnnealingLR(opt, {.T_max = 3, .eta_min = -1.0}),
                         doctest::Contains("CosineAnnealingLR: eta_min"), ValueError);
    CHECK_THROWS_WITH_AS(LinearWarmup(opt, {.start_factor = 1.5}),
                         doctest::Contains("LinearWarmup: start_factor must be in [0, 1]"), ValueError);
    CHECK_THROWS_WITH_AS(LinearWarmup(opt, {.end_factor = -0.1}),
                         doctest::Contains("LinearWarmup: end_factor"), ValueError);
    CHECK_THROWS_WITH_AS(LinearWarmup(opt, {.warmup_steps = 0}),
                         doctest::Contains("LinearWarmup: warmup_steps must be >= 1"), ValueError);

    auto a = std::make_shared<StepLR>(opt, StepLROptions{.step_size = 1});
    auto b = std::make_shared<StepLR>(opt, StepLROptions{.step_size = 1});
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {a, b}, {}),
                         doctest::Contains("expected 1 milestones for 2 schedulers"), ValueError);
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {a, b, a}, {3, 3}), doctest::Contains("strictly increasing"),
                         ValueError);
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {a, b}, {0}), doctest::Contains("positive"), ValueError);
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {a, nullptr}, {2}), doctest::Contains("scheduler 1 is null"),
                         ValueError);
    SGD other = make_sgd(1.0);
    auto c = std::make_shared<StepLR>(other, StepLROptions{.step_size = 1});
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {a, c}, {2}),
                         doctest::Contains("scheduler 1 belongs to another optimizer"), ValueError);
    CHECK_THROWS_WITH_AS(SequentialLR(opt, {}, {}), doctest::Contains("got no schedulers"), ValueError);
}
