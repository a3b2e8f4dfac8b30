// `attograd train --uniform-attention LAYER`: the layer's weights are uniform over the allowed
// keys in training, in the saved run's evaluation and in inspect; its refusals.
#include "cli_helpers.hpp"

#include "inspect/snapshot.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

using namespace attograd;
using namespace cli_test;

namespace {

// The largest |w - 1 / keys| of the maps of `module` in `example` (-1 when it has none).
double distance_from_uniform(const inspect::InspectedExample& example, const std::string& module) {
    double worst = -1;
    for (const auto& map : example.maps) {
        if (map.module != module) continue;
        for (std::int64_t r = 0; r < map.rows(); ++r)
            for (std::int64_t c = 0; c < map.cols(); ++c)
                worst = std::max(worst, std::abs(map.at(r, c) - 1.0 / static_cast<double>(map.cols())));
    }
    return worst;
}

std::vector<inspect::AttentionSnapshot> snapshots(const std::string& dir) {
    return inspect::load_snapshots(fs::path(dir) / "attention_snapshots.safetensors");
}

}  // namespace

TEST_CASE("train --uniform-attention holds a recurrent decoder's attention uniform, saved in config.json") {
    TempDir tmp;
    const std::string dir = tmp / "rnn";
    cli_test::train(dir, {"--task", "reverse", "--model", "rnn", "--uniform-attention", "0", "--steps", "30",
                          "--batch", "16", "--eval-every", "30", "--snapshot-every", "10", "--seed", "2"});
    CHECK(read_config(dir)["model"]["uniform_attention"] == 0);
    const auto recorded = snapshots(dir);
    REQUIRE(recorded.size() >= 3);  // steps 0, 10, 20, 30
    for (const auto& snapshot : recorded) {
        for (const auto& probe : snapshot.probes) {
            const double d = distance_from_uniform(probe, "decoder.attention");
            CHECK_MESSAGE(d >= 0, "step ", snapshot.step);
            CHECK_MESSAGE(d < 1e-6, "step ", snapshot.step);
        }
    }
    // The saved run is the same model: the faithfulness verdict says the layer is uniform.
    const Outcome faith = run({"inspect", "--run", dir, "--faithfulness", "--samples", "2"});
    require_ok(faith);
    const std::string verdict = line_with(faith.out, "decoder.attention head 0: ");
    CHECK_MESSAGE(verdict.find("attends uniformly (trained with --uniform-attention 0)") != std::string::npos,
                  verdict);
    // permuting uniform weights changes nothing
    CHECK_MESSAGE(verdict.find("not an explanation") != std::string::npos, verdict);
}

TEST_CASE("--uniform-attention holds one layer of several uniform, every head of it, the others not") {
    TempDir tmp;
    const std::string dir = tmp / "mha";
    cli_test::train(
        dir, {"--task", "reverse", "--layers", "1", "--heads", "2", "--uniform-attention", "0", "--steps",
              "40", "--batch", "16", "--eval-every", "40", "--snapshot-every", "20", "--seed", "3"});
    const auto layers = attention_modules(dir);
    REQUIRE(layers.size() == 2);
    const auto last = snapshots(dir).back();
    REQUIRE(!last.probes.empty());
    for (const auto& probe : last.probes) {
        CHECK(distance_from_uniform(probe, layers[0]) < 1e-6);
        CHECK(distance_from_uniform(probe, layers[1]) > 0.05);  // trained, not uniform
    }
    // eval of the saved run gives the accuracy training ended with (the same model)
    const Outcome eval = run({"eval", "--run", dir});
    require_ok(eval);
    const Outcome again = run({"eval", "--run", dir});
    CHECK(eval.out == again.out);
}

TEST_CASE("--uniform-attention refuses a negative or missing layer with one line and exit 2") {
    TempDir tmp;
    const std::vector<std::string> base = {"train",   "--task", "reverse", "--model", "rnn",
                                           "--steps", "1",      "--quiet", "--out"};
    auto with = [&](const std::string& layer) {
        std::vector<std::string> args = base;
        args.push_back(tmp / ("run" + layer));
        args.insert(args.end(), {"--uniform-attention", layer});
        return run(args);
    };
    check_refused(with("-1"), {"--uniform-attention", "must be an attention layer's number >= 0", "-1"});
    check_refused(with("1"),
                  {"--uniform-attention 1: no such attention layer", "0 = decoder.attention (1 head(s))"});
    check_refused(with("x"), {"--uniform-attention"});
    for (const char* layer : {"-1", "1", "x"}) CHECK_FALSE(fs::exists(tmp / (std::string("run") + layer)));
}

TEST_CASE("config.json: a uniform layer the model does not have is refused, naming the field") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    cli_test::train(dir, {"--task", "reverse", "--model", "rnn", "--steps", "2", "--eval-every", "2"});
    edit_config(dir, [](json& c) { c["model"]["uniform_attention"] = 3; });
    check_refused(run({"eval", "--run", dir}),
                  {"config.json: model.uniform_attention 3: no such attention layer", "decoder.attention"});
    // a run whose config.json does not list the setting has no uniform layer
    edit_config(dir, [](json& c) { c["model"].erase("uniform_attention"); });
    require_ok(run({"eval", "--run", dir}));
}
