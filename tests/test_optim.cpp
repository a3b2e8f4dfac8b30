// Optimizers: 10-step trajectories against PyTorch (SGD, Adam, AdamW, with clip_grad_norm and
// lr schedules), state_dict resume, option and state checks.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <memory>

using namespace attograd;
using namespace attograd::optim;
using nlohmann::json;
using testing::fixture_tensor;
using testing::load_fixture;
using testing::max_abs_diff;

namespace {

// The fixture's problem: loss(W [3, 4], b [3]) = mean((X W^T + b - Y)^2) + sum(tanh(W) * C).
struct Problem {
    Tensor x, y, c;
    Tensor loss(const Tensor& w, const Tensor& b) const {
        return mean(pow(matmul(x, transpose(w, 0, 1)) + b - y, 2.0)) + sum(tanh(w) * c);
    }
};

struct Params {
    Tensor w, b, u;  // u never enters the loss: it never has a gradient
    std::vector<Tensor> all() const { return {w, b, u}; }
};

Problem problem_of(const json& init, DType dtype = DType::Float64) {
    return {fixture_tensor(init.at("x"), dtype), fixture_tensor(init.at("y"), dtype),
            fixture_tensor(init.at("c"), dtype)};
}

Params params_of(const json& init, DType dtype = DType::Float64) {
    Params p{fixture_tensor(init.at("w"), dtype), fixture_tensor(init.at("b"), dtype),
             fixture_tensor(init.at("u"), dtype)};
    for (Tensor* t : {&p.w, &p.b, &p.u}) t->requires_grad_();
    return p;
}

std::array<double, 2> betas_of(const json& o) {
    const auto betas = o.value("betas", std::vector<double>{0.9, 0.999});
    return {betas.at(0), betas.at(1)};
}

std::unique_ptr<Optimizer> make_optimizer(const json& c, std::vector<Tensor> params) {
    const json& o = c.at("options");
    const std::string kind = c.at("optimizer");
    if (kind == "sgd")
        return std::make_unique<SGD>(std::move(params),
                                     SGDOptions{.lr = o.at("lr"),
                                                .momentum = o.value("momentum", 0.0),
                                                .dampening = o.value("dampening", 0.0),
                                                .weight_decay = o.value("weight_decay", 0.0),
                                                .nesterov = o.value("nesterov", false)});
    if (kind == "adam")
        return std::make_unique<Adam>(std::move(params),
                                      AdamOptions{.lr = o.at("lr"),
                                                  .betas = betas_of(o),
                                                  .eps = o.value("eps", 1e-8),
                                                  .weight_decay = o.value("weight_decay", 0.0),
                                                  .amsgrad = o.value("amsgrad", false)});
    REQUIRE(kind == "adamw");
    return std::make_unique<AdamW>(std::move(params),
                                   AdamWOptions{.lr = o.at("lr"),
                                                .betas = betas_of(o),
                                                .eps = o.value("eps", 1e-8),
                                                .weight_decay = o.value("weight_decay", 1e-2),
                                                .amsgrad = o.value("amsgrad", false)});
}

std::shared_ptr<LRScheduler> make_scheduler(const json& s, Optimizer& opt) {
    const std::string kind = s.at("type");
    if (kind == "step")
        return std::make_shared<StepLR>(
            opt, StepLROptions{.step_size = s.at("step_size"), .gamma = s.at("gamma")});
    if (kind == "cosine")
        return std::make_shared<CosineAnnealingLR>(
            opt, CosineAnnealingLROptions{.T_max = s.at("T_max"), .eta_min = s.at("eta_min")});
    if (kind == "linear")
        return std::make_shared<LinearWarmup>(opt, LinearWarmupOptions{.start_factor = s.at("start_factor"),
                                                                       .end_factor = s.at("end_factor"),
                                                                       .warmup_steps = s.at("warmup_steps")});
    REQUIRE(kind == "sequential");
    std::vector<std::shared_ptr<LRScheduler>> children;
    for (const json& child : s.at("schedulers")) children.push_back(make_scheduler(child, opt));
    return std::make_shared<SequentialLR>(opt, std::move(children),
                                          s.at("milestones").get<std::vector<std::int64_t>>());
}

double norm_type_of(const json& clip) {
    const json& p = clip.at("norm_type");
    return p.is_string() ? std::numeric_limits<double>::infinity() : p.get<double>();
}

// Replays one fixture case in `dtype`; every step's loss, lr, clip norm and parameters must
// agree with PyTorch to `tol`. Returns the worst parameter difference seen.
double replay(const json& c, DType dtype, double tol) {
    INFO("case " << c.at("name").get<std::string>() << " in " << dtype_name(dtype));
    const Problem pb = problem_of(c.at("init"), dtype);
    const Params p = params_of(c.at("init"), dtype);
    const Tensor u0 = clone(p.u.detach());
    auto opt = make_optimizer(c, p.all());
    const auto sched = c.at("scheduler").is_null() ? nullptr : make_scheduler(c.at("scheduler"), *opt);
    double worst = 0.0;
    const json& steps = c.at("steps");
    for (std::size_t s = 0; s < steps.size(); ++s) {
        INFO("step " << s + 1);
        const json& want = steps[s];
        opt->zero_grad();
        const Tensor loss = pb.loss(p.w, p.b);
        CHECK(std::abs(loss.item() - want.at("loss").get<double>()) <= tol);
        CHECK(std::abs(opt->lr() - want.at("lr").get<double>()) <= 1e-15);
        loss.backward();
        if (!c.at("clip").is_null()) {
            const json& clip = c.at("clip");
            const double total = clip_grad_norm(p.all(), clip.at("max_norm"), norm_type_of(clip));
            CHECK(std::abs(total - want.at("total_norm").get<double>()) <= tol);
        }
        opt->step();
        if (sched) {
            sched->step();
            CHECK(std::abs(sched->get_last_lr() - want.at("last_lr").get<double>()) <= 1e-15);
        }
        const double diff = std::max(max_abs_diff(p.w, fixture_tensor(want.at("w"))),
                                     max_abs_diff(p.b, fixture_tensor(want.at("b"))));
        worst = std::max(worst, diff);
        CHECK(diff <= tol);
    }
    // u had no gradient: untouched, and no state was made for it
    CHECK(max_abs_diff(p.u, u0) == 0.0);
    CHECK_FALSE(p.u.grad().defined());
    for (const auto& [key, t] : opt->state_dict()) CHECK_FALSE(key.starts_with("state.2."));
    return worst;
}

// Replays the fixture cases whose name starts with `prefix` (and, if set, has `field`).
void replay_cases(const std::string& prefix, const char* field = nullptr) {
    const json fx = load_fixture("optim");
    int count = 0;
    double worst = 0.0;
    for (const json& c : fx.at("cases")) {
        if (!c.at("name").get<std::string>().starts_with(prefix)) continue;
        if (field && c.at(field).is_null()) continue;
        worst = std::max(worst, replay(c, DType::Float64, 1e-10));
        ++count;
    }
    MESSAGE(count << " cases named " << prefix << "* " << (field ? field : "")
                  << ", worst parameter difference " << worst);
    CHECK(count >= 3);
}

}  // namespace

TEST_CASE("SGD trajectories match PyTorch (plain, momentum, dampening, nesterov, weight decay)") {
    replay_cases("sgd");
}

TEST_CASE("Adam trajectories match PyTorch (betas, eps, L2 weight decay, amsgrad)") { replay_cases("adam_"); }

TEST_CASE("AdamW trajectories match PyTorch (decoupled weight decay, amsgrad)") { replay_cases("adamw"); }

TEST_CASE("trajectories with clip_grad_norm (L2, L1, L3, infinity) match PyTorch") {
    replay_cases("", "clip");
}

TEST_CASE("trajectories under StepLR, CosineAnnealingLR, LinearWarmup and SequentialLR match PyTorch") {
    replay_cases("", "scheduler");
}

TEST_CASE("float32 parameters follow the float64 trajectory to float32 precision") {
    const json fx = load_fixture("optim");
    int count = 0;
    for (const json& c : fx.at("cases")) {
        const std::string name = c.at("name");
        if (name != "sgd_all" && name != "adam_amsgrad_weight_decay" && name != "adamw_warmup_cosine")
            continue;
        // 10 steps of O(1) values in float32 (eps 1.2e-7): a few hundred ulps at most
        MESSAGE(name << " in float32: worst parameter difference " << replay(c, DType::Float32, 1e-5));
        ++count;
    }
    CHECK(count == 3);
}

namespace {

struct Run {
    Params p;
    std::unique_ptr<Optimizer> opt;
    std::shared_ptr<LRScheduler> sched;
};

const json resume_schedule = {
    {"type", "sequential"},
    {"milestones", {3}},
    {"schedulers",
     {{{"type", "linear"}, {"start_factor", 0.1}, {"end_factor", 1.0}, {"warmup_steps", 3}},
      {{"type", "cosine"}, {"T_max", 7}, {"eta_min", 0.001}}}}};

Run start(const json& c, const Params& p) {
    Run r{p, make_optimizer(c, p.all()), nullptr};
    r.sched = make_scheduler(resume_schedule, *r.opt);
    return r;
}

void run_steps(Run& r, const Problem& pb, int steps) {
    for (int s = 0; s < steps; ++s) {
        r.opt->zero_grad();
        pb.loss(r.p.w, r.p.b).backward();
        clip_grad_norm(r.p.all(), 3.0);
        r.opt->step();
        r.sched->step();
    }
}

Params copy_of(const Params& p) {
    Params q{clone(p.w.detach()), clone(p.b.detach()), clone(p.u.detach())};
    for (Tensor* t : {&q.w, &q.b, &q.u}) t->requires_grad_();
    return q;
}

}  // namespace

TEST_CASE("state_dict after 5 steps resumes the run: 5 more steps equal 10 uninterrupted, bit for bit") {
    const json fx = load_fixture("optim");
    for (const json& c : fx.at("cases")) {
        const std::string name = c.at("name");
        if (name != "sgd_all" && name != "sgd_nesterov_weight_decay" && name != "adam_amsgrad_weight_decay" &&
            name != "adamw_amsgrad")
            continue;
        INFO("case " << name);
        const Problem pb = problem_of(c.at("init"));
        Run whole = start(c, params_of(c.at("init")));
        run_steps(whole, pb, 5);
        const StateDict opt_state = whole.opt->state_dict();
        const StateDict sched_state = whole.sched->state_dict();
        const Params halfway = copy_of(whole.p);
        const Tensor w5 = clone(halfway.w.detach());
        run_steps(whole, pb, 5);  // later steps must not change the saved state (it is a copy)

        Run resumed = start(c, halfway);
        resumed.opt->load_state_dict(opt_state);
        resumed.sched->load_state_dict(sched_state);
        CHECK(resumed.opt->lr() == opt_state.at("lr").item());
        run_steps(resumed, pb, 5);
        CHECK(max_abs_diff(resumed.p.w, whole.p.w) == 0.0);
        CHECK(max_abs_diff(resumed.p.b, whole.p.b) == 0.0);
        CHECK(resumed.opt->lr() == whole.opt->lr());
        CHECK(max_abs_diff(resumed.p.w, w5) > 0.0);  // it did train
    }
}

TEST_CASE("Adam's state_dict holds the options, the lr and each updated parameter's state") {
    Tensor w = testing::rand64({2, 3}, 1), b = testing::rand64({3}, 2);
    Adam opt({w, b}, {.lr = 0.01, .amsgrad = true});
    StateDict before = opt.state_dict();
    CHECK(before.size() == 7);  // lr, betas.0, betas.1, eps, weight_decay, amsgrad, decoupled_weight_decay
    CHECK(before.at("lr").item() == 0.01);
    CHECK(before.at("amsgrad").item() == 1.0);
    CHECK(before.at("decoupled_weight_decay").item() == 0.0);
    CHECK(before.at("betas.1").dtype() == DType::Float64);

    sum(w * w).backward();  // b gets no gradient
    opt.step();
    const StateDict after = opt.state_dict();
    CHECK(after.size() == 11);
    const Tensor step = after.at("state.0.step");
    CHECK(step.dtype() == DType::Int64);
    CHECK(step.shape().empty());
    CHECK(step.item() == 1.0);
    for (const char* key : {"state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq"}) {
        CHECK(after.at(key).shape() == Shape{2, 3});
        CHECK(after.at(key).dtype() == DType::Float64);
    }
    CHECK_FALSE(after.contains("state.1.step"));
    // exp_avg = (1 - beta1) g after one step, g = 2 w
    CHECK(max_abs_diff(after.at("state.0.exp_avg"), w.grad() * 0.1) < 1e-15);
    opt.step();
    CHECK(after.at("state.0.step").item() == 1.0);  // a copy: later steps leave it alone
}

TEST_CASE("load_state_dict rejects missing, unexpected, misshapen and mistyped entries, changing nothing") {
    Tensor w = testing::rand64({2, 3}, 3);
    Adam opt({w}, {.lr = 0.01});
    sum(w * w).backward();
    opt.step();
    const StateDict good = opt.state_dict();

    Tensor w2 = testing::rand64({2, 3}, 4);
    Adam other({w2}, {.lr = 0.5});
    const StateDict untouched = other.state_dict();
    auto with = [&good](const std::string& key, Tensor value) {
        StateDict s = good;
        s[key] = value;
        return s;
    };
    StateDict missing = good;
    missing.erase("state.0.exp_avg_sq");
    CHECK_THROWS_WITH_AS(other.load_state_dict(missing),
                         doctest::Contains("missing keys [state.0.exp_avg_sq]"), ValueError);
    missing = good;
    missing.erase("eps");
    CHECK_THROWS_WITH_AS(other.load_state_dict(missing), doctest::Contains("missing keys [eps]"), ValueError);
    CHECK_THROWS_WITH_AS(
        other.load_state_dict(with("state.1.exp_avg", zeros({2, 3}, {.dtype = DType::Float64}))),
        doctest::Contains("unexpected keys [state.1.exp_avg]"), ValueError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("state.0.momentum_buffer", zeros({2, 3}))),
                         doctest::Contains("unexpected keys [state.0.momentum_buffer]"), ValueError);
    CHECK_THROWS_WITH_AS(
        other.load_state_dict(with("state.0.exp_avg", zeros({3, 2}, {.dtype = DType::Float64}))),
        doctest::Contains("'state.0.exp_avg' has shape [3, 2] in the saved state but parameter 0 "
                          "has shape [2, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("state.0.exp_avg", zeros({2, 3}))),
                         doctest::Contains("'state.0.exp_avg' has dtype float32"), DTypeError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("state.0.step", scalar(1.0, {.dtype = DType::Float64}))),
                         doctest::Contains("'state.0.step' has dtype float64 but must be int64"), DTypeError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("state.0.step", index_tensor({-1}, {}))),
                         doctest::Contains("'state.0.step' is negative"), ValueError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("lr", scalar(0.1))),
                         doctest::Contains("'lr' has dtype float32"), DTypeError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("lr", full({1}, 0.1, {.dtype = DType::Float64}))),
                         doctest::Contains("'lr' has shape [1] but must be a 0-d tensor"), ShapeError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(with("lr", scalar(-1.0, {.dtype = DType::Float64}))),
                         doctest::Contains("lr must be a finite number >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        other.load_state_dict(with("eps", scalar(1e-6, {.dtype = DType::Float64}))),
        doctest::Contains("option 'eps' is 1e-06 in the saved state but 1e-08 in this optimizer"),
        ValueError);

    SGD sgd({testing::rand64({2, 3}, 5)}, {.lr = 0.1, .momentum = 0.9});
    CHECK_THROWS_WITH_AS(sgd.load_state_dict(good),
                         doctest::Contains("SGD.load_state_dict: missing keys [momentum"), ValueError);

    // nothing changed by the failed loads
    const StateDict now = other.state_dict();
    CHECK(now.size() == untouched.size());
    CHECK(other.lr() == 0.5);
    other.load_state_dict(good);
    CHECK(other.lr() == 0.01);
    CHECK(max_abs_diff(other.state_dict().at("state.0.exp_avg"), good.at("state.0.exp_avg")) == 0.0);
}

TEST_CASE("load_state_dict refuses SGD momentum buffers and Adam moments that no run could have written") {
    // SGD: the momentum buffer must be finite and shaped as its parameter.
    Tensor w = testing::rand64({2, 3}, 11);
    SGD sgd({w}, {.lr = 0.1, .momentum = 0.9});
    sum(w * w).backward();
    sgd.step();
    const StateDict good = sgd.state_dict();
    const auto with = [](StateDict s, const std::string& key, Tensor value) {
        s[key] = value;
        return s;
    };
    Tensor buffer = clone(good.at("state.0.momentum_buffer"));
    buffer.data<double>()[4] = std::numeric_limits<double>::infinity();
    SGD other({testing::rand64({2, 3}, 12)}, {.lr = 0.1, .momentum = 0.9});
    CHECK_THROWS_WITH_AS(other.load_state_dict(with(good, "state.0.momentum_buffer", buffer)),
                         doctest::Contains("'state.0.momentum_buffer' holds inf at index 4"), ValueError);
    CHECK_THROWS_WITH_AS(other.load_state_dict(
                             with(good, "state.0.momentum_buffer", zeros({3, 2}, {.dtype = DType::Float64}))),
                         doctest::Contains("'state.0.momentum_buffer' has shape [3, 2]"), ShapeError);
    other.load_state_dict(good);

    // Adam after real steps passes its own checks; each broken invariant is refused.
    Tensor v = testing::rand64({4}, 13);
    Adam adam({v}, {.lr = 0.01, .amsgrad = true});
    for (int i = 0; i < 30; ++i) {
        adam.zero_grad();
        sum(v * v * v).backward();
        adam.step();
    }
    const StateDict saved = adam.state_dict();
    Adam fresh({testing::rand64({4}, 14)}, {.lr = 0.01, .amsgrad = true});
    fresh.load_state_dict(saved);
    const auto changed = [&](const std::string& key, std::int64_t index, double value) {
        Tensor t = clone(saved.at(key));
        t.data<double>()[index] = value;
        return with(saved, key, t);
    };
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(changed("state.0.exp_avg_sq", 1, -1e-3)),
                         doctest::Contains("'state.0.exp_avg_sq' holds -0.001 at index 1"), ValueError);
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(changed("state.0.exp_avg", 2, std::nan(""))),
                         doctest::Contains("'state.0.exp_avg' holds nan at index 2"), ValueError);
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(changed("state.0.max_exp_avg_sq", 3, 0.0)),
                         doctest::Contains("'state.0.max_exp_avg_sq' is 0 at index 3, below exp_avg_sq"),
                         ValueError);
    // |m| beyond sqrt(bound * v): (1 - b1)^2 / ((1 - b2) (1 - b1^2 / b2)) = 52.9 for PyTorch's betas.
    const double v0 = saved.at("state.0.exp_avg_sq").to_vector<double>()[0];
    const double bound = 0.01 / (0.001 * (1.0 - 0.81 / 0.999));
    CHECK_THROWS_WITH_AS(
        fresh.load_state_dict(changed("state.0.exp_avg", 0, 1.05 * std::sqrt(bound * v0) + 1e-9)),
        doctest::Contains("'state.0.exp_avg' is"), ValueError);
    fresh.load_state_dict(changed("state.0.exp_avg", 0, 0.99 * std::sqrt(bound * v0)));  // inside the bound
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(with(saved, "state.0.step", index_tensor({0}, {}))),
                         doctest::Contains("'state.0.step' is 0"), ValueError);

    // Cauchy-Schwarz is tight for gradients g_i proportional to (b2 / b1)^i: such a genuine run
    // comes within a few percent of the bound, and its state still loads.
    Tensor u = testing::rand64({1}, 15);
    Adam worst({u}, {.lr = 1e-9});
    for (int i = 0; i < 200; ++i) {
        u.set_grad(full({1}, std::pow(0.999 / 0.9, i), {.dtype = DType::Float64}));
        worst.step();
    }
    const StateDict tight = worst.state_dict();
    const double m = tight.at("state.0.exp_avg").item(), sq = tight.at("state.0.exp_avg_sq").item();
    CHECK(m * m / (bound * sq) > 0.95);
    CHECK(m * m / (bound * sq) <= 1.0 + 1e-12);
    Adam again({testing::rand64({1}, 16)}, {.lr = 1e-9});
    again.load_state_dict(worst.state_dict());
}

TEST_CASE("optimizer options are validated with the option's name") {
    auto params = [] { return std::vector<Tensor>{testing::rand64({2}, 6)}; };
    CHECK_THROWS_WITH_AS(SGD(params(), {.lr = -0.1}),
                         doctest::Contains("SGD: lr must be a finite number >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(SGD(params(), {.lr = std::nan("")}), doctest::Contains("SGD: lr must be"),
                         ValueError);
    CHECK_THROWS_WITH_AS(SGD(params(), {.momentum = -0.5}), doctest::Contains("SGD: momentum must be"),
                         ValueError);
    CHECK_THROWS_WITH_AS(SGD(params(), {.weight_decay = -1.0}),
                         doctest::Contains("SGD: weight_decay must be"), ValueError);
    CHECK_THROWS_WITH_AS(SGD(params(), {.nesterov = true}),
                         doctest::Contains("nesterov requires momentum > 0 and dampening == 0"), ValueError);
    CHECK_THROWS_WITH_AS(SGD(params(), {.momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                         doctest::Contains("nesterov requires momentum > 0 and dampening == 0"), ValueError);
    CHECK_THROWS_WITH_AS(Adam(params(), {.lr = -1.0}), doctest::Contains("Adam: lr must be"), ValueError);
    CHECK_THROWS_WITH_AS(Adam(params(), {.betas = {1.0, 0.999}}),
                         doctest::Contains("Adam: betas[0] must be in [0, 1)"), ValueError);
    CHECK_THROWS_WITH_AS(Adam(params(), {.betas = {0.9, -0.1}}),
                         doctest::Contains("Adam: betas[1] must be in [0, 1)"), ValueError);
    CHECK_THROWS_WITH_AS(Adam(params(), {.eps = -1e-8}), doctest::Contains("Adam: eps must be"), ValueError);
    CHECK_THROWS_WITH_AS(Adam(params(), {.weight_decay = -1.0}),
                         doctest::Contains("Adam: weight_decay must be"), ValueError);
    CHECK_THROWS_WITH_AS(AdamW(params(), {.weight_decay = -1.0}),
                         doctest::Contains("AdamW: weight_decay must be"), ValueError);
    CHECK_THROWS_WITH_AS(AdamW(params(), {.betas = {0.9, 1.0}}), doctest::Contains("AdamW: betas[1]"),
                         ValueError);
    CHECK(AdamW(params(), {}).options().weight_decay == 1e-2);
    CHECK(Adam(params(), {}).options().weight_decay == 0.0);

    SGD sgd(params(), {.lr = 0.1});
    CHECK_THROWS_WITH_AS(sgd.set_lr(-0.1), doctest::Contains("SGD: lr must be a finite number >= 0"),
                         ValueError);
    CHECK(sgd.lr() == 0.1);
}

TEST_CASE("optimizer parameters are checked: none, undefined, not float, not a leaf, repeated") {
    Tensor w = testing::rand64({2}, 7);
    CHECK_THROWS_WITH_AS(SGD({}, {}), doctest::Contains("SGD: got an empty parameter list"), ValueError);
    CHECK_THROWS_WITH_AS(SGD({w, Tensor()}, {}), doctest::Contains("parameter 1 is an undefined tensor"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Adam({index_tensor({1, 2}, {2})}, {}),
                         doctest::Contains("Adam: parameter 0 is int64"), DTypeError);
    CHECK_THROWS_WITH_AS(Adam({w * 2.0}, {}), doctest::Contains("only leaf tensors can be optimized"),
                         ValueError);
    CHECK_THROWS_WITH_AS(AdamW({w, w}, {}),
                         doctest::Contains("parameter 1 is the same tensor as parameter 0"), ValueError);
}

TEST_CASE("step skips parameters without a gradient, records nothing, and zero_grad drops gradients") {
    Tensor w = testing::rand64({3}, 8), v = testing::rand64({3}, 9);
    const Tensor v0 = clone(v.detach()), w0 = clone(w.detach());
    SGD opt({w, v}, {.lr = 0.5, .momentum = 0.9, .weight_decay = 0.1});
    sum(w * w).backward();
    autograd::clear_tape();
    opt.step();
    CHECK(autograd::tape_size() == 0);
    CHECK(w.is_leaf());
    CHECK(max_abs_diff(v, v0) == 0.0);  // no gradient: not even decayed
    // first step: buffer = g + lambda w, w = w - lr * buffer, with g = 2 w
    CHECK(max_abs_diff(w, w0 - 0.5 * (w0 * 2.0 + w0 * 0.1)) < 1e-15);
    opt.zero_grad();
    CHECK_FALSE(w.grad().defined());
    CHECK_FALSE(opt.state_dict().contains("state.1.momentum_buffer"));
}

namespace {

struct Tiny : nn::Module {
    Tensor w;
    Tiny() { w = register_parameter("w", zeros({2})); }
    std::string type_name() const override { return "Tiny"; }
};

}  // namespace

TEST_CASE("a parameter whose dtype changed after its state was made is refused") {
    Tiny model;
    SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
    model.w.set_grad(ones({2}));
    opt.step();
    model.to(DType::Float64);
    model.w.set_grad(ones({2}, {.dtype = DType::Float64}));
    CHECK_THROWS_WITH_AS(
        opt.step(), doctest::Contains("parameter 0 is float64 but its state 'momentum_buffer' is float32"),
        DTypeError);
}

TEST_CASE("Adam and AdamW leave a parameter unchanged where g^2 overflows, in every element, as PyTorch") {
    // m / (sqrt(v) + eps) with v = inf is 0 (PyTorch's addcdiv gives the same); Eigen's fast-math
    // packet sqrt once made it NaN in the vectorised body and left the scalar tail finite.
    for (const DType dtype : {DType::Float32, DType::Float64}) {
        const double huge = dtype == DType::Float32 ? 1e25 : 1e160;
        for (const bool decoupled : {false, true}) {
            Tensor p = ones({37}, {.dtype = dtype, .requires_grad = true});
            std::unique_ptr<Optimizer> opt;
            if (decoupled)
                opt = std::make_unique<AdamW>(std::vector<Tensor>{p},
                                              AdamWOptions{.lr = 1e-3, .weight_decay = 0});
            else
                opt = std::make_unique<Adam>(std::vector<Tensor>{p}, AdamOptions{.lr = 1e-3});
            p.set_grad(full({37}, huge, {.dtype = dtype}));
            opt->step();
            for (const double x : p.to_vector<double>()) CHECK(x == 1.0);
        }
    }
}

TEST_CASE("a learning rate beyond float32 is refused for float32 parameters, not written as inf") {
    Tensor p = ones({4}, {.requires_grad = true});
    SGD opt({p}, {.lr = 1e300});
    p.set_grad(ones({4}));
    CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("lr 1e+300 is beyond the float32 range"), ValueError);
    for (const double x : p.to_vector<double>()) CHECK(x == 1.0);
    Tensor d = ones({4}, {.dtype = DType::Float64, .requires_grad = true});
    Adam adam({d}, {.lr = 1e300});
    d.set_grad(ones({4}, {.dtype = DType::Float64}));
    CHECK_NOTHROW(adam.step());  // representable in float64
}

TEST_CASE("SGD gives every element of a parameter the same update for the same gradient") {
    // The loop's vectorised body and scalar tail once rounded nesterov's multiply-adds apart.
    for (const DType dtype : {DType::Float32, DType::Float64})
        for (const bool nesterov : {false, true}) {
            Tensor p = ones({37}, {.dtype = dtype, .requires_grad = true});
            SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = nesterov});
            for (const double g : {1.7, -0.3, 2.9}) {
                p.set_grad(full({37}, g, {.dtype = dtype}));
                opt.step();
            }
            const auto v = p.to_vector<double>();
            for (const double x : v) CHECK(x == v[0]);
        }
}

TEST_CASE("Adam's and AdamW's states tell their weight decay apart, as PyTorch's decoupled_weight_decay") {
    // The same moments either way: only the recorded option tells L2 from decoupled decay.
    Tensor w = testing::rand64({3}, 5);
    AdamW adamw({w}, {.lr = 0.01, .weight_decay = 0.1});
    Adam adam({w}, {.lr = 0.01, .weight_decay = 0.1});
    sum(w * w).backward();
    adamw.step();
    CHECK(adamw.state_dict().at("decoupled_weight_decay").item() == 1.0);
    CHECK_THROWS_WITH_AS(adam.load_state_dict(adamw.state_dict()),
                         doctest::Contains("decoupled_weight_decay"), ValueError);
    CHECK_THROWS_WITH_AS(adamw.load_state_dict(adam.state_dict()),
                         doctest::Contains("decoupled_weight_decay"), ValueError);
}

TEST_CASE("Adam and AdamW give every element of a parameter the same update for the same gradient") {
    // 37 elements: a vectorised body and a scalar tail, which must round alike (std::fma, exact
    // sqrt); a fast-math packet sqrt would differ from the tail's std::sqrt in the last bits.
    for (const DType dtype : {DType::Float32, DType::Float64})
        for (const bool decoupled : {false, true})
            for (const bool amsgrad : {false, true}) {
                Tensor p = full({37}, 0.7, {.dtype = dtype, .requires_grad = true});
                std::unique_ptr<Optimizer> opt;
                if (decoupled)
                    opt = std::make_unique<AdamW>(
                        std::vector<Tensor>{p},
                        AdamWOptions{.lr = 0.1, .weight_decay = 0.03, .amsgrad = amsgrad});
                else
                    opt = std::make_unique<Adam>(
                        std::vector<Tensor>{p},
                        AdamOptions{.lr = 0.1, .weight_decay = 0.03, .amsgrad = amsgrad});
                for (const double g : {1.7, -0.3, 2.9, 0.011}) {
                    p.set_grad(full({37}, g, {.dtype = dtype}));
                    opt->step();
                }
                const auto v = p.to_vector<double>();
                CHECK(v[0] != 0.7);
                for (const double x : v) CHECK(x == v[0]);
            }
}
