// The attograd program's beam search (eval and inspect --beam, --length-penalty): greedy by
// default, inspect's rows labelled with the beam output, its refusals.
#include "cli_helpers.hpp"

#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <cmath>

using namespace cli_test;
using namespace attograd;

namespace {

/// A sort run trained part of the way: greedy and beam search then disagree on some outputs.
void train_partly(const std::string& dir) {
    cli_test::train(dir, {"--task", "sort", "--steps", "150", "--seed", "3"});
}

}  // namespace

TEST_CASE("eval and inspect --beam 1 print exactly what they print without it") {
    TempDir tmp;
    train_partly(tmp / "run");
    const std::string run_dir = tmp / "run";
    const Outcome plain = run({"eval", "--run", run_dir, "--json", "--show", "1000"});
    require_ok(plain);
    for (const auto& extra : {std::vector<std::string>{"--beam", "1"},
                              std::vector<std::string>{"--beam", "1", "--length-penalty", "0.6"}}) {
        std::vector<std::string> args{"eval", "--run", run_dir, "--json", "--show", "1000"};
        args.insert(args.end(), extra.begin(), extra.end());
        const Outcome beam = run(args);
        require_ok(beam);
        CHECK(beam.out == plain.out);
    }
    const Outcome inspect_plain =
        run({"inspect", "--run", run_dir, "--samples", "4", "--format", "json", "--to", "-"});
    const Outcome inspect_beam =
        run({"inspect", "--run", run_dir, "--samples", "4", "--format", "json", "--to", "-", "--beam", "1"});
    require_ok(inspect_plain);
    require_ok(inspect_beam);
    CHECK(inspect_beam.out == inspect_plain.out);
    CHECK(inspect_beam.err == inspect_plain.err);
}

TEST_CASE(
    "inspect --beam 4 --format json shows the beam output's attention, its rows labelled by its tokens") {
    TempDir tmp;
    train_partly(tmp / "run");
    const std::string run_dir = tmp / "run";
    const std::string samples = "20";
    const Outcome inspected = run(
        {"inspect", "--run", run_dir, "--samples", samples, "--format", "json", "--to", "-", "--beam", "4"});
    require_ok(inspected);
    const Outcome greedy_eval = run({"eval", "--run", run_dir, "--json", "--show", samples});
    const Outcome beam_eval = run({"eval", "--run", run_dir, "--json", "--show", samples, "--beam", "4"});
    require_ok(greedy_eval);
    require_ok(beam_eval);
    const json examples = json::parse(inspected.out)["examples"];
    const json greedy = json::parse(greedy_eval.out)["examples"],
               beam = json::parse(beam_eval.out)["examples"];
    REQUIRE(examples.size() == 20);
    std::int64_t differ = 0;
    const auto task = data::make_task("sort");
    for (std::size_t e = 0; e < examples.size(); ++e) {
        const json& ex = examples[e];
        const auto prediction = ex["prediction"].get<std::vector<std::string>>();
        CHECK(task->detokenize(prediction) == beam[e]["prediction"].get<std::string>());
        differ += beam[e]["prediction"] != greedy[e]["prediction"];
        std::vector<std::string> rows = prediction;
        rows.emplace_back(data::Vocabulary::eos);
        std::int64_t decoder_maps = 0;
        for (const json& head : ex["heads"]) {
            if (!head["module"].get<std::string>().starts_with("decoder.")) continue;
            ++decoder_maps;
            CHECK(head["queries"].get<std::vector<std::string>>() == rows);
            REQUIRE(head["weights"].size() == rows.size());
            for (const json& row : head["weights"]) {  // each row a distribution over the source
                double total = 0.0;
                for (const json& w : row) total += w.get<double>();
                CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
            }
        }
        CHECK(decoder_maps == 1);
    }
    CHECK(differ >= 1);  // some shown outputs are the beam's own, not greedy's
}

TEST_CASE("eval and inspect refuse a bad --beam or --length-penalty in one line naming the flag") {
    TempDir tmp;
    cli_test::train(tmp / "run", {"--task", "sort", "--steps", "5"});
    const std::string run_dir = tmp / "run";
    for (const char* command : {"eval", "inspect"}) {
        for (const char* beam : {"0", "-2", "65", "1.5", "four"})
            check_refused(run({command, "--run", run_dir, "--beam", beam}), {"--beam"});
        // Beyond [-10, 10] |y|^A swamps log P(y): -1e308 gave an empty output, 1e308 nonsense.
        for (const char* alpha : {"inf", "nan", "x", "1e308", "-1e308", "10.5", "-11"})
            check_refused(run({command, "--run", run_dir, "--beam", "2", "--length-penalty", alpha}),
                          {"--length-penalty"});
        check_refused(run({command, "--run", run_dir, "--beam", "2", "--length-penalty", "-1e308"}),
                      {"--length-penalty must be in [-10, 10], got -1e+308"});
        for (const char* alpha : {"10", "-10", "0.6"})
            require_ok(run({command, "--run", run_dir, "--beam", "2", "--length-penalty", alpha}));
    }
}

TEST_CASE("eval and inspect refuse --beam above 1 for the encoder model, which does not decode") {
    TempDir tmp;
    cli_test::train(tmp / "run", {"--task", "copy", "--model", "encoder", "--layers", "1", "--steps", "5"});
    const std::string run_dir = tmp / "run";
    for (const char* command : {"eval", "inspect"}) {
        check_refused(run({command, "--run", run_dir, "--beam", "2"}), {"--beam", "seq2seq", "encoder"});
        require_ok(run({command, "--run", run_dir, "--beam", "1"}));
    }
}
