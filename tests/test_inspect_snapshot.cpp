// inspect::AttentionSnapshotter and the snapshot file: what a snapshot holds, when it is taken,
// that training is unchanged by it, and save / load (exact round trip, corrupt files refused).
#include "fixtures.hpp"
#include "helpers.hpp"
#include "temp_dir.hpp"

#include "core/serialization.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>

using namespace testing;
using namespace attograd::inspect;
namespace fs = std::filesystem;

namespace {

// Two self-attention layers with dropout on their weights: in training mode every forward
// draws from the generator, so a snapshot taken in training mode would change the run.
struct Block : nn::Module {
    std::shared_ptr<nn::MultiHeadAttention> self_attn;
    Block(std::int64_t e, Generator& gen) {
        self_attn = register_module(
            "self_attn",
            std::make_shared<nn::MultiHeadAttention>(
                nn::MultiHeadAttentionOptions{.embed_dim = e, .num_heads = 2, .dropout = 0.3}, gen));
    }
    std::string type_name() const override { return "Block"; }
};

struct TinyModel : nn::Module {
    std::shared_ptr<nn::Linear> embed, head;
    std::shared_ptr<Block> first, second;
    explicit TinyModel(Generator& gen) {
        embed = register_module("embed", std::make_shared<nn::Linear>(
                                             nn::LinearOptions{.in_features = 3, .out_features = 4}, gen));
        first = register_module("first", std::make_shared<Block>(4, gen));
        second = register_module("second", std::make_shared<Block>(4, gen));
        head = register_module("head", std::make_shared<nn::Linear>(
                                           nn::LinearOptions{.in_features = 4, .out_features = 2}, gen));
    }
    std::string type_name() const override { return "TinyModel"; }
    Tensor forward(const Tensor& x) const {
        Tensor h = embed->forward(x);
        h = h + first->self_attn->forward(h).output;
        h = h + second->self_attn->forward(h).output;
        return head->forward(h);
    }
};

TokenLabels labels_of(std::int64_t t, const std::string& prefix) {
    TokenLabels labels;
    for (std::int64_t i = 0; i < t; ++i) {
        labels.queries.push_back(prefix + std::to_string(i));
        labels.keys.push_back(prefix + std::to_string(i));
    }
    return labels;
}

/// A probe running `model` on `x` [1, T, 3], labelled t0 .. t{T-1}; the right alignment of
/// "second.self_attn" is the anti-diagonal.
SnapshotProbe probe_of(const TinyModel& model, const Tensor& x) {
    const std::int64_t t = x.size(1);
    SnapshotProbe probe;
    probe.forward = [&model, x] {
        (void)model.forward(x);
        return std::vector<std::string>{"out"};
    };
    probe.labels = [t](const std::string&) { return labels_of(t, "t"); };
    std::vector<std::int64_t> anti(static_cast<std::size_t>(t));
    for (std::int64_t i = 0; i < t; ++i) anti[static_cast<std::size_t>(i)] = t - 1 - i;
    probe.right["second.self_attn"] = anti;
    probe.source = labels_of(t, "t").queries;
    probe.target = {"y"};
    return probe;
}

void check_same_map(const AttentionMap& a, const AttentionMap& b) {
    CHECK(a.module == b.module);
    CHECK(a.layer == b.layer);
    CHECK(a.head == b.head);
    CHECK(a.queries == b.queries);
    CHECK(a.keys == b.keys);
    CHECK(a.weights == b.weights);
    CHECK(a.right == b.right);
    CHECK(a.alignment_share == b.alignment_share);
    CHECK(a.saliency_correlation == b.saliency_correlation);
}

void check_same(const std::vector<AttentionSnapshot>& a, const std::vector<AttentionSnapshot>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t s = 0; s < a.size(); ++s) {
        CHECK(a[s].step == b[s].step);
        REQUIRE(a[s].probes.size() == b[s].probes.size());
        for (std::size_t p = 0; p < a[s].probes.size(); ++p) {
            const InspectedExample &x = a[s].probes[p], &y = b[s].probes[p];
            CHECK(x.source == y.source);
            CHECK(x.target == y.target);
            CHECK(x.prediction == y.prediction);
            REQUIRE(x.maps.size() == y.maps.size());
            for (std::size_t m = 0; m < x.maps.size(); ++m) check_same_map(x.maps[m], y.maps[m]);
            for (const auto& [u, v] : {std::pair{&x.saliency, &y.saliency}, std::pair{&x.rollout, &y.rollout},
                                       std::pair{&x.flow, &y.flow}}) {
                REQUIRE(u->has_value() == v->has_value());
                if (u->has_value()) check_same_map(**u, **v);
            }
        }
    }
}

/// Two snapshots of two probes of a model after a few steps: every map kind a file can hold.
std::vector<AttentionSnapshot> sample_snapshots() {
    Generator gen(5);
    TinyModel model(gen);
    AttentionSnapshotter snapshotter(
        model, {probe_of(model, randn({1, 4, 3}, gen)), probe_of(model, randn({1, 3, 3}, gen))},
        {.every = 1});
    snapshotter.snapshot(0);
    for (Tensor p : model.parameters()) {  // handles share the parameters' storage
        for (std::int64_t i = 0; i < p.numel(); ++i) p.data<float>()[i] += 0.5f;
    }
    snapshotter.snapshot(7);
    auto out = snapshotter.snapshots();
    AttentionMap derived = out[1].probes[0].maps[0];
    derived.module = "rollout";
    derived.head = -1;
    derived.right.clear();
    derived.alignment_share.reset();
    out[1].probes[0].rollout = derived;
    derived.module = "saliency (gradient x input)";
    out[1].probes[0].saliency = derived;
    out[1].probes[0].maps[1].saliency_correlation = -0.123456789012345;
    return out;
}

/// The snapshot file's metadata "snapshots" parsed, so a test can break one field.
nlohmann::json snapshots_json(const fs::path& path) {
    return nlohmann::json::parse(read_safetensors(path).metadata.at("snapshots"));
}

/// Rewrites `path` with `snapshots` as its metadata and `weights` as its tensor.
void rewrite(const fs::path& path, const std::string& snapshots, const Tensor& weights,
             const std::string& format = "attograd-attention-snapshots", const std::string& version = "1") {
    save_safetensors(path, {{"weights", weights}},
                     {{"format", format}, {"format_version", version}, {"snapshots", snapshots}});
}

#define CHECK_LOAD_REFUSED(path, text)                                                                \
    CHECK_THROWS_WITH_AS(load_snapshots(path), doctest::Contains(text), attograd::IoError);           \
    CHECK_THROWS_WITH_AS(load_snapshots(path), doctest::Contains((path).filename().string().c_str()), \
                         attograd::IoError)

/// sample_snapshots() saved at a path, and rewritten there with one change at a time.
struct SampleFile {
    explicit SampleFile(fs::path file) : path(std::move(file)) {
        save_snapshots(path, sample_snapshots());
        good = snapshots_json(path);
        weights = read_safetensors(path).tensors.at("weights");
    }
    /// Rewrites the file with `change` made to the saved metadata and `w` (default: the saved
    /// weights) as its tensor.
    void with(const std::function<void(nlohmann::json&)>& change, const Tensor& w = Tensor()) const {
        nlohmann::json j = good;
        change(j);
        rewrite(path, j.dump(), w.defined() ? w : weights);
    }
    fs::path path;
    nlohmann::json good;
    Tensor weights;
};

/// The steps of a snapshotter's snapshots, in order.
std::vector<std::int64_t> steps(const AttentionSnapshotter& s) {
    std::vector<std::int64_t> out;
    for (const auto& snapshot : s.snapshots()) out.push_back(snapshot.step);
    return out;
}

}  // namespace

TEST_CASE("a snapshot holds what attention_maps gives for a direct recorder call in eval mode, with shares") {
    Generator gen(1);
    TinyModel model(gen);
    const Tensor x = randn({1, 5, 3}, gen);
    bool ran_in_eval = false, ran_without_grad = false;
    SnapshotProbe probe = probe_of(model, x);
    const auto forward = probe.forward;
    probe.forward = [&, forward] {
        ran_in_eval = !model.is_training() && !model.second->self_attn->is_training();
        ran_without_grad = !grad_enabled();
        return forward();
    };
    AttentionSnapshotter snapshotter(model, {probe}, {.every = 10});
    const AttentionSnapshot& snapshot = snapshotter.snapshot(3);
    CHECK(ran_in_eval);
    CHECK(ran_without_grad);
    CHECK(model.is_training());  // restored
    CHECK(snapshot.step == 3);
    REQUIRE(snapshot.probes.size() == 1);
    const InspectedExample& got = snapshot.probes[0];
    CHECK(got.source == probe.source);
    CHECK(got.target == probe.target);
    CHECK(got.prediction == std::vector<std::string>{"out"});

    model.eval();
    std::vector<AttentionMap> direct;
    {
        NoGradGuard no_grad;
        nn::AttentionRecorder recorder(model);
        (void)model.forward(x);
        direct = attention_maps(recorder.records(), labels_of(5, "t"));
    }
    REQUIRE(got.maps.size() == direct.size());
    REQUIRE(direct.size() == 4);  // 2 layers x 2 heads
    for (std::size_t i = 0; i < direct.size(); ++i) {
        INFO(direct[i].title());
        CHECK(got.maps[i].module == direct[i].module);
        CHECK(got.maps[i].head == direct[i].head);
        CHECK(got.maps[i].queries == direct[i].queries);
        CHECK(got.maps[i].weights == direct[i].weights);
        if (direct[i].module == "second.self_attn") {
            CHECK(got.maps[i].right == probe.right["second.self_attn"]);
            REQUIRE(got.maps[i].alignment_share);
            CHECK(*got.maps[i].alignment_share ==
                  alignment_share(direct[i], probe.right["second.self_attn"]));
        } else {
            CHECK(got.maps[i].right.empty());
            CHECK_FALSE(got.maps[i].alignment_share);
        }
    }
}

TEST_CASE("a probe with crop keeps the first rows and columns of each map, as many as its labels") {
    Generator gen(6);
    TinyModel model(gen);
    const Tensor x = randn({1, 5, 3}, gen);  // 5 positions, of which the last 2 play padding
    SnapshotProbe full = probe_of(model, x), cropped = probe_of(model, x);
    cropped.crop = true;
    cropped.labels = [](const std::string&) { return labels_of(3, "t"); };
    cropped.right["second.self_attn"] = {2, 1, 0};
    AttentionSnapshotter a(model, {full}, {.every = 1}), b(model, {cropped}, {.every = 1});
    const auto& whole = a.snapshot(0).probes[0].maps;
    const auto& part = b.snapshot(0).probes[0].maps;
    REQUIRE(whole.size() == part.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
        REQUIRE(part[i].rows() == 3);
        REQUIRE(part[i].cols() == 3);
        for (std::int64_t r = 0; r < 3; ++r) {
            for (std::int64_t c = 0; c < 3; ++c) CHECK(part[i].at(r, c) == whole[i].at(r, c));
        }
    }
    CHECK(part[2].alignment_share == alignment_share(part[2], {2, 1, 0}));
    cropped.labels = [](const std::string&) { return labels_of(6, "t"); };  // longer than the weights
    AttentionSnapshotter c(model, {cropped}, {.every = 1});
    CHECK_THROWS_WITH_AS(c.snapshot(0), doctest::Contains("first.self_attn"), attograd::ShapeError);
}

TEST_CASE("maybe_snapshot snapshots at step 0 and every N steps, once per step") {
    Generator gen(2);
    TinyModel model(gen);
    AttentionSnapshotter snapshotter(model, {probe_of(model, randn({1, 3, 3}, gen))}, {.every = 10});
    CHECK(snapshotter.every() == 10);
    std::vector<std::int64_t> taken;
    for (std::int64_t step = 0; step <= 25; ++step) {
        if (snapshotter.maybe_snapshot(step)) taken.push_back(step);
    }
    CHECK(taken == std::vector<std::int64_t>{0, 10, 20});
    CHECK_FALSE(snapshotter.maybe_snapshot(20));  // taken already
    REQUIRE(snapshotter.snapshots().size() == 3);
    CHECK(snapshotter.snapshots()[2].step == 20);
    snapshotter.snapshot(25);  // e.g. the last step of a run
    CHECK(snapshotter.snapshots().back().step == 25);
    CHECK_THROWS_WITH_AS(snapshotter.snapshot(25), doctest::Contains("not after the last snapshot's step 25"),
                         attograd::ValueError);
    CHECK_THROWS_WITH_AS(snapshotter.maybe_snapshot(-10), doctest::Contains("maybe_snapshot"),
                         attograd::ValueError);

    AttentionSnapshotter off(model, {probe_of(model, randn({1, 3, 3}, gen))}, {.every = 0});
    for (std::int64_t step = 0; step <= 5; ++step) CHECK_FALSE(off.maybe_snapshot(step));
    CHECK(off.snapshots().empty());
}

TEST_CASE(
    "max_snapshots doubles the period and keeps the first, the newest and the snapshots on the new grid") {
    Generator gen(7);
    TinyModel model(gen);
    const auto probe = probe_of(model, randn({1, 3, 3}, gen));
    AttentionSnapshotter capped(model, {probe}, {.every = 1, .max_snapshots = 4});
    for (std::int64_t step = 0; step <= 4; ++step) capped.maybe_snapshot(step);
    CHECK(steps(capped) == std::vector<std::int64_t>{0, 2, 4});  // 5 > 4: period 2
    CHECK(capped.every() == 2);
    for (std::int64_t step = 5; step <= 12; ++step) capped.maybe_snapshot(step);
    CHECK(steps(capped) == std::vector<std::int64_t>{0, 4, 8, 12});
    CHECK(capped.every() == 4);
    capped.snapshot(13);  // off the grid, e.g. a run's last step: kept as the newest
    CHECK(steps(capped) == std::vector<std::int64_t>{0, 8, 13});

    AttentionSnapshotter manual(model, {probe}, {.every = 0, .max_snapshots = 3});
    for (std::int64_t step = 0; step <= 3; ++step) manual.snapshot(step);
    CHECK(steps(manual) == std::vector<std::int64_t>{0, 2, 3});  // no period: every other, and the newest

    AttentionSnapshotter resumed(model, {probe}, {.every = 1, .max_snapshots = 2});
    resumed.resume(capped.snapshots());
    CHECK(steps(resumed) == std::vector<std::int64_t>{0, 13});
    CHECK_THROWS_WITH_AS(AttentionSnapshotter(model, {probe}, {.every = 1, .max_snapshots = 1}),
                         doctest::Contains("max_snapshots must be 0 (all) or >= 2"), attograd::ValueError);
}

TEST_CASE("resume keeps a run's earlier snapshots and does not take their steps again") {
    Generator gen(3);
    TinyModel model(gen);
    const auto probe = probe_of(model, randn({1, 3, 3}, gen));
    AttentionSnapshotter first(model, {probe}, {.every = 5});
    first.maybe_snapshot(0);
    first.maybe_snapshot(5);
    AttentionSnapshotter second(model, {probe}, {.every = 5});
    second.resume(first.snapshots());
    CHECK_FALSE(second.maybe_snapshot(5));
    CHECK(second.maybe_snapshot(10));
    REQUIRE(second.snapshots().size() == 3);
    CHECK(second.snapshots()[0].step == 0);
    CHECK(second.snapshots()[2].step == 10);
    CHECK_THROWS_WITH_AS(second.resume({}), doctest::Contains("taken already"), attograd::ValueError);
    AttentionSnapshotter third(model, {probe}, {.every = 5});
    auto unordered = first.snapshots();
    std::swap(unordered[0], unordered[1]);
    CHECK_THROWS_WITH_AS(third.resume(unordered), doctest::Contains("not after"), attograd::ValueError);
}

TEST_CASE("resume with the period the earlier run reached snapshots and thins as the uninterrupted run") {
    Generator gen(3);
    TinyModel model(gen);
    const auto probe = probe_of(model, randn({1, 3, 3}, gen));
    const SnapshotOptions options{.every = 1, .max_snapshots = 4};
    AttentionSnapshotter whole(model, {probe}, options), first(model, {probe}, options);
    for (std::int64_t step = 0; step <= 20; ++step) whole.maybe_snapshot(step);
    for (std::int64_t step = 0; step <= 6; ++step) first.maybe_snapshot(step);
    REQUIRE(first.every() == 2);
    AttentionSnapshotter second(model, {probe}, options);
    second.resume(first.snapshots(), first.every());
    CHECK(second.every() == 2);
    for (std::int64_t step = 7; step <= 20; ++step) second.maybe_snapshot(step);
    CHECK(steps(second) == steps(whole));
    CHECK(second.every() == whole.every());
    AttentionSnapshotter bad(model, {probe}, options);
    CHECK_THROWS_WITH_AS(
        bad.resume(first.snapshots(), 3),
        doctest::Contains("the saved run's snapshot period 3 is not this snapshotter's period 1 doubled"),
        attograd::ValueError);
}

TEST_CASE("the snapshotter restores every module's own training mode, also when a probe throws") {
    Generator gen(4);
    TinyModel model(gen);
    model.first->eval();  // a frozen part inside a training model
    SnapshotProbe probe = probe_of(model, randn({1, 3, 3}, gen));
    AttentionSnapshotter snapshotter(model, {probe}, {.every = 1});
    snapshotter.snapshot(0);
    CHECK(model.is_training());
    CHECK_FALSE(model.first->is_training());
    CHECK_FALSE(model.first->self_attn->is_training());
    CHECK(model.second->self_attn->is_training());

    probe.forward = []() -> std::vector<std::string> { throw std::runtime_error("probe failed"); };
    AttentionSnapshotter failing(model, {probe}, {.every = 1});
    CHECK_THROWS_WITH(failing.snapshot(0), "probe failed");
    CHECK(model.is_training());
    CHECK_FALSE(model.first->is_training());
    CHECK(model.second->is_training());
    CHECK(failing.snapshots().empty());
}

TEST_CASE(
    "the snapshotter refuses no probes, a probe without functions, a negative period, a forward without "
    "attention") {
    Generator gen(5);
    TinyModel model(gen);
    const SnapshotProbe probe = probe_of(model, randn({1, 3, 3}, gen));
    CHECK_THROWS_WITH_AS(AttentionSnapshotter(model, {}, {.every = 1}), doctest::Contains("no probes"),
                         attograd::ValueError);
    SnapshotProbe no_forward = probe;
    no_forward.forward = nullptr;
    CHECK_THROWS_WITH_AS(AttentionSnapshotter(model, {no_forward}, {.every = 1}),
                         doctest::Contains("probe 0 has no forward"), attograd::ValueError);
    SnapshotProbe no_labels = probe;
    no_labels.labels = nullptr;
    CHECK_THROWS_WITH_AS(AttentionSnapshotter(model, {probe, no_labels}, {.every = 1}),
                         doctest::Contains("probe 1 has no labels"), attograd::ValueError);
    CHECK_THROWS_WITH_AS(AttentionSnapshotter(model, {probe}, {.every = -1}),
                         doctest::Contains("every must be >= 0"), attograd::ValueError);
    SnapshotProbe idle = probe;
    idle.forward = [] { return std::vector<std::string>{}; };
    AttentionSnapshotter nothing(model, {idle}, {.every = 1});
    CHECK_THROWS_AS(nothing.snapshot(0), attograd::ValueError);  // no attention was recorded
    SnapshotProbe short_labels = probe;
    short_labels.labels = [](const std::string&) { return labels_of(2, "t"); };
    AttentionSnapshotter mislabelled(model, {short_labels}, {.every = 1});
    CHECK_THROWS_AS(mislabelled.snapshot(0), attograd::ShapeError);
    SnapshotProbe typo = probe;
    typo.right = {{"secnd.self_attn", {0, 1, 2}}};
    AttentionSnapshotter misnamed(model, {typo}, {.every = 1});
    CHECK_THROWS_WITH_AS(
        misnamed.snapshot(0),
        doctest::Contains("names layer 'secnd.self_attn', which its forward did not record; recorded "
                          "layers: 'first.self_attn', 'second.self_attn'"),
        attograd::ValueError);
}

TEST_CASE("training with snapshots every 3 steps gives the same parameters, bit for bit, as without") {
    const auto train = [](bool snapshots) {
        Generator gen(11);  // parameters, data and dropout all draw from it
        TinyModel model(gen);
        const Tensor probe_input = randn({1, 4, 3}, gen);
        AttentionSnapshotter snapshotter(model, {probe_of(model, probe_input)}, {.every = 3});
        optim::Adam optimizer(model.parameters(), {.lr = 0.05});
        std::vector<double> losses;
        for (std::int64_t step = 0; step < 20; ++step) {
            if (snapshots) snapshotter.maybe_snapshot(step);
            const Tensor x = randn({2, 4, 3}, gen), y = randn({2, 4, 2}, gen);
            optimizer.zero_grad();
            Tensor loss = mse_loss(model.forward(x), y);
            loss.backward();
            optimizer.step();
            losses.push_back(loss.item());
        }
        if (snapshots) CHECK(snapshotter.snapshots().size() == 7);
        return std::pair{losses, model.state_dict()};
    };
    const auto [plain_losses, plain] = train(false);
    const auto [watched_losses, watched] = train(true);
    CHECK(plain_losses == watched_losses);
    REQUIRE(plain.size() == watched.size());
    for (const auto& [name, tensor] : plain) {
        INFO(name);
        CHECK(tensor.to_vector<double>() == watched.at(name).to_vector<double>());
    }
    // The run did learn something (the comparison is not between two untouched models).
    CHECK(plain_losses.back() != plain_losses.front());
}

TEST_CASE("save_snapshots and load_snapshots round-trip every field exactly") {
    TempDir tmp;
    const auto snapshots = sample_snapshots();
    save_snapshots(tmp / "s.safetensors", snapshots);
    check_same(load_snapshots(tmp / "s.safetensors"), snapshots);
    // The file is the documented safetensors layout: one float32 tensor of every weight.
    const auto contents = read_safetensors(tmp / "s.safetensors");
    std::int64_t weights = 0;
    for (const auto& s : snapshots) {
        for (const auto& p : s.probes) {
            for (const auto& m : p.maps) weights += std::ssize(m.weights);
            for (const auto* extra : {&p.saliency, &p.rollout, &p.flow}) {
                if (extra->has_value()) weights += std::ssize((*extra)->weights);
            }
        }
    }
    REQUIRE(contents.tensors.size() == 1);
    CHECK(contents.tensors.at("weights").dtype() == DType::Float32);
    CHECK(contents.tensors.at("weights").shape() == Shape{weights});
    CHECK(contents.metadata.at("format") == "attograd-attention-snapshots");
    // Saving again over the file replaces it; no snapshots at all is a valid file too.
    save_snapshots(tmp / "s.safetensors", {});
    CHECK(load_snapshots(tmp / "s.safetensors").empty());
}

TEST_CASE("save_snapshots refuses snapshots out of step order and malformed maps, writing nothing") {
    TempDir tmp;
    auto snapshots = sample_snapshots();
    std::swap(snapshots[0], snapshots[1]);
    CHECK_THROWS_WITH_AS(save_snapshots(tmp / "s.safetensors", snapshots), doctest::Contains("not after"),
                         attograd::ValueError);
    snapshots = sample_snapshots();
    snapshots[0].probes[0].maps[0].weights.pop_back();
    CHECK_THROWS_AS(save_snapshots(tmp / "s.safetensors", snapshots), attograd::ShapeError);
    snapshots = sample_snapshots();
    snapshots[0].probes[0].maps[0].right = {99};
    CHECK_THROWS_AS(save_snapshots(tmp / "s.safetensors", snapshots), attograd::IndexError);
    CHECK_FALSE(fs::exists(tmp / "s.safetensors"));
}

TEST_CASE("load_snapshots refuses a missing, truncated or foreign file with an IoError naming it") {
    TempDir tmp;
    const fs::path path = tmp / "s.safetensors";
    CHECK_LOAD_REFUSED(path, "cannot open");
    save_snapshots(path, sample_snapshots());
    const auto size = fs::file_size(path);
    for (const auto cut : {std::uintmax_t{3}, std::uintmax_t{40}, size / 2, size - 1}) {
        save_snapshots(path, sample_snapshots());
        fs::resize_file(path, cut);
        INFO("cut at ", cut, " of ", size);
        CHECK_LOAD_REFUSED(path, "load_safetensors");
    }
    save_safetensors(path, {{"weights", zeros({2})}});  // a checkpoint, not snapshots
    CHECK_LOAD_REFUSED(path, "not an attention snapshot file");
    rewrite(path, "[]", zeros({0}), "something-else");
    CHECK_LOAD_REFUSED(path, "format 'something-else'");
    rewrite(path, "[]", zeros({0}), "attograd-attention-snapshots", "2");
    CHECK_LOAD_REFUSED(path, "version '2'");
    rewrite(path, "[]", zeros({0}, {.dtype = DType::Float64}));
    CHECK_LOAD_REFUSED(path, "must be float32 of rank 1");
    rewrite(path, "[]", zeros({0, 1}));
    CHECK_LOAD_REFUSED(path, "must be float32 of rank 1");
    save_safetensors(
        path, {{"weights", zeros({0})}, {"other", zeros({1})}},
        {{"format", "attograd-attention-snapshots"}, {"format_version", "1"}, {"snapshots", "[]"}});
    CHECK_LOAD_REFUSED(path, "exactly one tensor");
    fs::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);  // must not block waiting for a writer
    CHECK_LOAD_REFUSED(path, "not a regular file");
}

TEST_CASE(
    "load_snapshots refuses wrong types, mismatched lengths and bad values, naming the snapshot and map") {
    TempDir tmp;
    const fs::path path = tmp / "s.safetensors";
    const SampleFile file(path);
    const Tensor& weights = file.weights;
    // Sanity: the unchanged parts load.
    file.with([](nlohmann::json&) {});
    CHECK(load_snapshots(path).size() == 2);

    rewrite(path, "{not json", weights);
    CHECK_LOAD_REFUSED(path, "corrupt \"snapshots\" metadata");
    rewrite(path, std::string(100000, '[') + std::string(100000, ']'), weights);  // deep nesting
    CHECK_LOAD_REFUSED(path, "load_snapshots");
    file.with([](auto& j) { j = nlohmann::json::object(); });
    CHECK_LOAD_REFUSED(path, "\"snapshots\" is not an array");
    file.with([](auto& j) { j[0]["step"] = "zero"; });
    CHECK_LOAD_REFUSED(path, "snapshot 0: \"step\" is not an integer");
    file.with([](auto& j) { j[1]["step"] = 1.5; });
    CHECK_LOAD_REFUSED(path, "snapshot 1: \"step\" is not an integer");
    file.with([](auto& j) { j[1]["step"] = std::numeric_limits<std::uint64_t>::max(); });
    CHECK_LOAD_REFUSED(path, "out of range");
    file.with([](auto& j) { j[1]["step"] = 0; });
    CHECK_LOAD_REFUSED(path, "not after the previous snapshot's step");
    file.with([](auto& j) { j[0].erase("probes"); });
    CHECK_LOAD_REFUSED(path, "missing \"probes\"");
    file.with([](auto& j) { j[0]["probes"][0]["source"][0] = 7; });
    CHECK_LOAD_REFUSED(path, "snapshot 0 (step 0), probe 0");
    file.with([](auto& j) { j[0]["probes"][1]["maps"][2]["queries"] = "abc"; });
    CHECK_LOAD_REFUSED(path, "probe 1, map 2: \"queries\" is not an array");
    file.with([](auto& j) { j[1]["probes"][0]["source"].push_back("x"); });  // another input under probe 1
    CHECK_LOAD_REFUSED(path, "probe 1 has source");
    CHECK_LOAD_REFUSED(path, "at step 0 but");
    file.with([](auto& j) { j[0]["probes"][0]["maps"][1]["head"] = -2; });
    CHECK_LOAD_REFUSED(path, "negative");
    file.with([](auto& j) { j[0]["probes"][0]["maps"][1]["alignment_share"] = "high"; });
    CHECK_LOAD_REFUSED(path, "\"alignment_share\" is not a number");
    file.with([](auto& j) { j[0]["probes"][0]["maps"][3]["right"] = {0, 1, 2, 4}; });  // 4 keys: 4 is outside
    CHECK_LOAD_REFUSED(path, "has right key 4 at row 3");
    file.with([](auto& j) {
        j[0]["probes"][0]["maps"][3]["right"] = {0, 1, 2, 3, 0};
    });  // 5 rows for 4 queries
    CHECK_LOAD_REFUSED(path, "5 right columns for 4 rows");
    // Mismatched lengths: a label more than the weights hold, a label fewer, weights left over.
    file.with([](auto& j) { j[1]["probes"][1]["maps"].back()["keys"].push_back("extra"); });
    CHECK_LOAD_REFUSED(path, "needs");
    file.with([](auto& j) { j[1]["probes"][1]["maps"][0]["keys"].erase(0); });
    CHECK_LOAD_REFUSED(path, "mismatched lengths");
    file.with([](auto&) {}, zeros({weights.numel() + 1}));
    CHECK_LOAD_REFUSED(path, "mismatched lengths");
    Tensor nan_weights = tensor(weights.to_vector<double>(), weights.shape());
    nan_weights.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    file.with([](auto&) {}, nan_weights);
    CHECK_LOAD_REFUSED(path, "non-finite weight");
}

TEST_CASE("load_snapshots refuses weights and shares that no recorder writes, naming the map") {
    TempDir tmp;
    const fs::path path = tmp / "s.safetensors";
    const SampleFile file(path);
    const nlohmann::json& good = file.good;
    const Tensor& weights = file.weights;
    // Map 3 of probe 0 at step 0 (the second layer's second head) has the anti-diagonal share.
    const double share = good[0]["probes"][0]["maps"][3]["alignment_share"];
    REQUIRE(share > 0.0);
    REQUIRE(share < 1.0);
    for (const double bad : {5.0, -0.5, 1.0 + 1e-6}) {
        CAPTURE(bad);
        file.with([bad](auto& j) { j[0]["probes"][0]["maps"][3]["alignment_share"] = bad; });
        CHECK_LOAD_REFUSED(path, "snapshot 0 (step 0), probe 0, map 3");
        CHECK_LOAD_REFUSED(path, "outside [0, 1]");
    }
    // In range but not what the weights give: the share of another map, or nudged past rounding.
    file.with([&](auto& j) {
        j[0]["probes"][0]["maps"][3]["alignment_share"] = share > 0.5 ? share - 0.2 : share + 0.2;
    });
    CHECK_LOAD_REFUSED(path, "but its weights and right keys give");
    file.with([&](auto& j) { j[0]["probes"][0]["maps"][3]["alignment_share"] = share + 1e-6; });
    CHECK_LOAD_REFUSED(path, "but its weights and right keys give");
    file.with(
        [](auto& j) { j[0]["probes"][0]["maps"][0]["alignment_share"] = 0.5; });  // a map without right keys
    CHECK_LOAD_REFUSED(path, "none (no right key)");

    // Weights: negative, or a row summing to more than 1 (softmax rows sum to 1 within float32
    // rounding; local-p attention scales them down).
    const auto changed = [&](std::int64_t index, float value) {
        Tensor w = clone(weights);
        w.data<float>()[index] = value;
        return w;
    };
    file.with([](auto&) {}, changed(1, -3.0f));
    CHECK_LOAD_REFUSED(path, "negative weight -3 at row 0, column 1");
    file.with([](auto&) {}, changed(0, weights.data<float>()[0] + 0.01f));
    CHECK_LOAD_REFUSED(path, "row 0 sums to");
    CHECK_LOAD_REFUSED(path, "more than 1");
    file.with([](auto&) {}, changed(0, weights.data<float>()[0] * 0.5f));  // scaled down: a local-p row
    CHECK(load_snapshots(path).size() == 2);
    // Step 7's first probe holds a saliency map after its maps (rows need not sum to 1, but
    // are never negative): its first weight follows every map before it in the file.
    const std::int64_t saliency = [&] {
        std::int64_t at = 0;
        for (const auto& snapshot : good) {
            for (const auto& probe : snapshot["probes"]) {
                for (const auto& map : probe["maps"])
                    at += std::ssize(map["queries"]) * std::ssize(map["keys"]);
                if (probe.contains("saliency")) return at;
            }
        }
        FAIL("no saliency map");
        return at;
    }();
    REQUIRE(good[1]["probes"][0].contains("saliency"));
    file.with([](auto&) {}, changed(saliency, weights.data<float>()[saliency] + 0.25f));
    CHECK(load_snapshots(path).size() == 2);
    file.with([](auto&) {}, changed(saliency, -0.25f));
    CHECK_LOAD_REFUSED(path, "saliency");
    CHECK_LOAD_REFUSED(path, "negative weight");
}
