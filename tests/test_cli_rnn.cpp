// `attograd train --model rnn`: the recurrent encoder with the Bahdanau or Luong decoder trains,
// saves its settings in config.json, resumes bit for bit, evaluates and is inspected; settings
// the decoders do not support are refused with one line.
#include "cli_helpers.hpp"

using namespace cli_test;

namespace {

/// A short run of `model_args` for `steps` steps (evaluated only at the end).
std::vector<std::string> rnn_args(const std::string& dir, const std::string& steps,
                                  const std::vector<std::string>& model_args) {
    std::vector<std::string> args = train_args(dir, steps);
    args.insert(args.end(), {"--model", "rnn", "--snapshot-every", "0"});
    args.insert(args.end(), model_args.begin(), model_args.end());
    return args;
}

}  // namespace

TEST_CASE("--model rnn with each decoder trains, resumes bit for bit, evaluates and is inspected") {
    struct Case {
        std::vector<std::string> args;
        std::string cell, decoder, score;
        bool bidirectional;
        std::int64_t layers, window;
    };
    const std::vector<Case> cases = {
        {{"--decoder", "bahdanau"}, "gru", "bahdanau", "additive", false, 1, -1},
        {{"--decoder", "bahdanau", "--bidirectional"}, "gru", "bahdanau", "additive", true, 1, -1},
        {{"--decoder", "luong"}, "gru", "luong", "bilinear", false, 1, -1},
        {{"--decoder", "luong", "--cell", "lstm", "--bidirectional", "--score", "dot", "--rnn-layers", "2"},
         "lstm",
         "luong",
         "dot",
         true,
         2,
         -1},
        {{"--decoder", "luong", "--score", "additive", "--window", "2", "--local", "p"},
         "gru",
         "luong",
         "additive",
         false,
         1,
         2},
        {{"--decoder", "luong", "--cell", "lstm", "--score", "scaled-dot", "--window", "1", "--local", "m"},
         "lstm",
         "luong",
         "scaled-dot",
         false,
         1,
         1},
    };
    for (const auto& c : cases) {
        std::string flags;
        for (const auto& a : c.args) flags += " " + a;
        INFO("flags:", flags);
        TempDir tmp;
        const std::string whole = tmp / "whole", split = tmp / "split";
        require_ok(run(rnn_args(whole, "8", c.args)));
        require_ok(run(rnn_args(split, "4", c.args)));
        require_ok(run({"train", "--resume", split, "--steps", "8", "--quiet"}));
        // the resumed run ends with the weights of the uninterrupted one, bit for bit
        CHECK(read_text(fs::path(split) / "model.safetensors") ==
              read_text(fs::path(whole) / "model.safetensors"));

        const json model = read_config(whole)["model"];
        CHECK(model["kind"] == "rnn");
        CHECK(model["cell"] == c.cell);
        CHECK(model["decoder"] == c.decoder);
        CHECK(model["score"] == c.score);
        CHECK(model["bidirectional"] == c.bidirectional);
        CHECK(model["rnn_layers"] == c.layers);
        CHECK(model["window"] == c.window);

        const json eval = eval_json(whole);
        CHECK(eval["heldout_examples"].get<int>() > 0);
        CHECK(eval["token_accuracy"].get<double>() >= 0.0);
        const Outcome term = run({"inspect", "--run", whole, "--input", "a b c d"});
        require_ok(term);
        CHECK(term.out.find("decoder.attention") != std::string::npos);
        const std::string html = tmp / "report.html";
        require_ok(run({"inspect", "--run", whole, "--format", "html", "--to", html}));
        CHECK(read_text(html).find("decoder.attention") != std::string::npos);
    }
}

TEST_CASE("--model rnn learns to reverse with the Bahdanau decoder") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    train(dir,
          {"--task", "reverse", "--model", "rnn", "--steps", "300", "--snapshot-every", "0", "--seed", "0"});
    CHECK(eval_json(dir)["sequence_accuracy"].get<double>() > 0.8);
}

TEST_CASE("--model rnn refuses what its decoders do not support, with one line and exit 2") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    const auto refused = [&](std::vector<std::string> extra, const std::vector<std::string>& names) {
        std::vector<std::string> args = {"train",   "--task", "copy",  "--model", "rnn",
                                         "--steps", "1",      "--out", dir};
        args.insert(args.end(), extra.begin(), extra.end());
        check_refused(run(args), names);
        CHECK_FALSE(fs::exists(dir));
    };
    refused({"--cell", "lstm"}, {"--cell lstm", "--decoder bahdanau is a GRU decoder"});
    refused({"--decoder", "bahdanau", "--score", "dot"}, {"--score dot", "scores additively"});
    refused({"--window", "2"}, {"--window", "--decoder luong"});
    refused({"--decoder", "luong", "--attention", "hard"}, {"--attention hard"});
    refused({"--decoder", "luong", "--heads", "2"}, {"--heads must be 1"});
    refused({"--layers", "2"}, {"--layers", "--rnn-layers"});
    refused({"--ffn-dim", "8"}, {"--ffn-dim", "--rnn-layers"});
    refused({"--bidirectional", "--embed-dim", "63"}, {"--bidirectional", "--embed-dim 63", "even"});
    refused({"--rnn-layers", "0"}, {"--rnn-layers must be in [1, 8], got 0"});
    refused({"--decoder", "attention"}, {"--decoder must be one of bahdanau, luong"});
    check_refused(run({"train", "--task", "copy", "--cell", "gru", "--steps", "1", "--out", dir}),
                  {"--cell applies to --model rnn only"});
    check_refused(run({"train", "--task", "copy", "--bidirectional", "--steps", "1", "--out", dir}),
                  {"--bidirectional applies to --model rnn only"});
}

TEST_CASE(
    "every bundled task's defaults combine with --model rnn (its Transformer-only defaults do not apply)") {
    for (const char* task : {"copy", "reverse", "sort", "recall", "dates"}) {
        INFO(task);
        TempDir tmp;
        const std::string dir = tmp / "run";
        train(dir, {"--task", task, "--model", "rnn", "--steps", "0", "--snapshot-every", "0"});
        CHECK(read_config(dir)["model"]["heads"] == 1);
        CHECK(read_config(dir)["model"]["score"] == "additive");
    }
}
