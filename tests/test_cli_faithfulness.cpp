// `attograd inspect --faithfulness`: every head's faithfulness table and verdict over held-out
// examples of a trained run, in the terminal and in the HTML report, and its refusals.
#include "cli_helpers.hpp"
#include "faithfulness_run.hpp"
#include "run_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

using namespace attograd;
using namespace cli_test;

namespace {

// A short reverse run with an encoder self-attention layer and two heads per layer, so that
// both kinds of query row (output positions, source positions) are measured.
std::string trained_reverse(const TempDir& tmp) {
    const std::string dir = tmp / "reverse";
    cli_test::train(dir, {"--task", "reverse", "--steps", "40", "--layers", "1", "--heads", "2", "--batch",
                          "16", "--eval-every", "100", "--seed", "3"});
    return dir;
}

// The output decisions of the first n held-out examples: each target token and <eos>.
std::int64_t decisions(const attograd::cli::LoadedRun& run, std::int64_t n) {
    std::int64_t total = 0;
    for (std::int64_t i = 0; i < n; ++i)
        total += std::ssize(run.task->held_out()[static_cast<std::size_t>(i)].target) + 1;
    return total;
}

bool has_verdict(const std::string& line) {
    for (const char* kind : {": decisive: ", ": partial: ", ": not an explanation: "})
        if (line.find(kind) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("inspect --faithfulness prints every head's row and one verdict per head") {
    TempDir tmp;
    const std::string dir = trained_reverse(tmp);
    const Outcome o = run({"inspect", "--run", dir, "--faithfulness", "--samples", "3"});
    require_ok(o);
    INFO(o.out);
    const auto loaded = attograd::cli::load_run(dir);
    const auto& layers = loaded.model->attention_layers();
    REQUIRE(layers.size() == 2);  // the encoder's self-attention and the decoder's cross-attention
    CHECK(o.out.find(fmt::format("faithfulness over 3 held-out example(s), {} decision(s)",
                                 decisions(loaded, 3))) != std::string::npos);
    for (const auto& layer : layers) {
        for (std::int64_t h = 0; h < layer.heads; ++h) {
            const std::string verdict = line_with(o.out, fmt::format("{} head {}: ", layer.name, h));
            CHECK_MESSAGE(has_verdict(verdict), layer.name, " head ", h, ": ", verdict);
        }
    }
    // the table's header and one row per head, then the rules with their thresholds
    CHECK(o.out.find("tau_loo") != std::string::npos);
    CHECK(o.out.find("verdicts (the first rule that applies):") != std::string::npos);
    CHECK(o.out.find("median TVD below 0.01") != std::string::npos);
    CHECK(o.out.find("seconds:") != std::string::npos);
}

TEST_CASE("inspect --faithfulness measures a recurrent decoder at every output position, step by step") {
    TempDir tmp;
    const std::string dir = tmp / "rnn";
    cli_test::train(dir, {"--task", "reverse", "--model", "rnn", "--steps", "30", "--batch", "16",
                          "--eval-every", "100", "--seed", "3"});
    const Outcome o = run({"inspect", "--run", dir, "--faithfulness", "--samples", "2"});
    require_ok(o);
    INFO(o.out);
    const auto loaded = attograd::cli::load_run(dir);
    CHECK(o.out.find(fmt::format("faithfulness over 2 held-out example(s), {} decision(s)",
                                 decisions(loaded, 2))) != std::string::npos);
    CHECK(has_verdict(line_with(o.out, "decoder.attention head 0: ")));
}

TEST_CASE("inspect --faithfulness --format html adds the faithfulness section to the report") {
    TempDir tmp;
    const std::string dir = trained_reverse(tmp);
    const std::string file = tmp / "report.html";
    require_ok(
        run({"inspect", "--run", dir, "--faithfulness", "--samples", "2", "--format", "html", "--to", file}));
    const std::string html = read_text(file);
    CHECK(html.find("<section id=\"faithfulness\">") != std::string::npos);
    CHECK(html.find("faith-heads") != std::string::npos);
    CHECK(html.find("faith-rules") != std::string::npos);
    CHECK(html.find("faith-importance") != std::string::npos);  // the answer layer's head 0 in detail
    const auto loaded = attograd::cli::load_run(dir);
    for (const auto& layer : loaded.model->attention_layers())
        CHECK_MESSAGE(html.find(layer.name) != std::string::npos, layer.name);
    // without --faithfulness the report has no such section
    const std::string plain = tmp / "plain.html";
    require_ok(run({"inspect", "--run", dir, "--format", "html", "--to", plain}));
    CHECK(read_text(plain).find("<section id=\"faithfulness\">") == std::string::npos);
}

TEST_CASE("inspect --faithfulness refuses what it cannot measure, in one line") {
    TempDir tmp;
    const std::string dir = tmp / "copy";
    require_ok(run(train_args(dir, "2")));
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--samples", "0"}), {"--samples", "0"});
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--format", "svg"}),
                  {"--faithfulness", "svg"});
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--format", "json"}),
                  {"--faithfulness", "json"});
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--knockout", "0.0"}), {"--knockout"});
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--input", "abc"}), {"--input"});
}

TEST_CASE("a verdict of no explanation says so when knocking the head out costs accuracy") {
    attograd::inspect::HeadFaithfulness head;
    head.verdict = "not an explanation: permuted weights change the output by TVD 0.002";
    head.accuracy = 0.9;
    head.knockout_accuracy = 0.5;
    CHECK(attograd::cli::reach_caveat(head) ==
          "; but knocking it out costs 40 points: it acts through rows other than the one perturbed");
    head.knockout_accuracy = 0.88;  // 2 points: below the threshold of 5
    CHECK(attograd::cli::reach_caveat(head).empty());
    head.knockout_accuracy = 0.5;
    head.verdict = "partial: knockout costs 40 points, tau with leave-one-out 0.10, permuted TVD 0.020";
    CHECK(attograd::cli::reach_caveat(head).empty());
    head.verdict = "not an explanation: permuted weights change the output by TVD 0.002";
    head.accuracy.reset();  // no labels: no knockout cost to speak of
    CHECK(attograd::cli::reach_caveat(head).empty());
}
