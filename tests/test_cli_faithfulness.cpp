// `attograd inspect --faithfulness`: every head's faithfulness table and verdict over held-out
// examples of a trained run, in the terminal and in the HTML report, and its refusals.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <set>
#include <string>
#include <utility>
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
std::int64_t decisions(const std::string& dir, std::int64_t n) {
    std::int64_t total = 0;
    for (const auto& example : inspected_examples(dir, n)) total += std::ssize(example["target"]) + 1;
    return total;
}

// Every attention head of the run's model: its module and head index, as inspect lists them.
std::set<std::pair<std::string, std::int64_t>> heads(const std::string& dir) {
    std::set<std::pair<std::string, std::int64_t>> all;
    const json examples = inspected_examples(dir, 1);
    for (const auto& head : examples[0]["heads"]) all.emplace(head["module"], head["head"]);
    return all;
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
    const auto all = heads(dir);
    // the encoder's self-attention and the decoder's cross-attention, two heads each
    REQUIRE(all.size() == 4);
    CHECK(o.out.find(fmt::format("faithfulness over 3 held-out example(s), {} decision(s)",
                                 decisions(dir, 3))) != std::string::npos);
    for (const auto& [module, h] : all) {
        const std::string verdict = line_with(o.out, fmt::format("{} head {}: ", module, h));
        CHECK_MESSAGE(has_verdict(verdict), module, " head ", h, ": ", verdict);
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
    CHECK(o.out.find(fmt::format("faithfulness over 2 held-out example(s), {} decision(s)",
                                 decisions(dir, 2))) != std::string::npos);
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
    for (const auto& [module, h] : heads(dir)) CHECK_MESSAGE(html.find(module) != std::string::npos, module);
    // the evidence lists the first example's own keys (its tokens and <eos>), not the padding
    const auto begin = html.find("id=\"faith-importance\""), end = html.find("</table>", begin);
    REQUIRE(end != std::string::npos);
    const std::string importance = html.substr(begin, end - begin);
    std::size_t rows = 0;
    for (auto at = importance.find("<tr><td>"); at != std::string::npos;
         at = importance.find("<tr><td>", at + 1))
        ++rows;
    CHECK(rows == inspected_examples(dir, 1)[0]["source"].size() + 1);
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
    // the terminal prints only the table: flags acting on drawn examples would be ignored
    for (const char* flag : {"--saliency", "--rollout", "--flow"})
        check_refused(run({"inspect", "--run", dir, "--faithfulness", flag}), {"--faithfulness", flag});
    check_refused(run({"inspect", "--run", dir, "--faithfulness", "--rollout", "--flow"}),
                  {"--rollout", "--flow"});
}

TEST_CASE("inspect --faithfulness --format html --to - keeps stdout for the report alone") {
    TempDir tmp;
    const std::string dir = tmp / "copy";
    require_ok(run(train_args(dir, "2")));
    const Outcome o =
        run({"inspect", "--run", dir, "--faithfulness", "--samples", "1", "--format", "html", "--to", "-"});
    require_ok(o);
    CHECK(o.out.starts_with("<!DOCTYPE html>"));
    CHECK(o.out.find("faithfulness over") == std::string::npos);
    CHECK(o.err.find("faithfulness over 1 held-out example(s)") != std::string::npos);
}
