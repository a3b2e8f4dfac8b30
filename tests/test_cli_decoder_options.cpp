// `attograd train --decoder-self-attention` (the seq2seq decoder's causal self-attention) and
// `--dropout`: that they are saved, change the training and resume bit for bit, that eval is
// deterministic, that inspect shows the self-attention causal, and the one-line refusals of values
// and combinations they do not take.
#include "cli_helpers.hpp"

#include <fmt/format.h>

using namespace cli_test;

TEST_CASE("--dropout and --decoder-self-attention are saved, change the training, and resume bit for bit") {
    TempDir tmp;
    const auto args = [&](const std::string& dir, const std::string& steps, const std::string& dropout) {
        std::vector<std::string> a = train_args(dir, steps);
        a.insert(a.end(), {"--snapshot-every", "0", "--decoder-self-attention", "--dropout", dropout});
        return a;
    };
    const std::string whole = tmp / "whole", split = tmp / "split", plain = tmp / "plain";
    require_ok(run(args(whole, "8", "0.3")));
    require_ok(run(args(split, "4", "0.3")));
    require_ok(run({"train", "--resume", split, "--steps", "8", "--quiet"}));
    require_ok(run(args(plain, "8", "0")));
    // the model's generator is seeded per step, so the masks after a resume are the same
    CHECK(read_text(fs::path(split) / "model.safetensors") ==
          read_text(fs::path(whole) / "model.safetensors"));
    CHECK(read_text(fs::path(plain) / "model.safetensors") !=
          read_text(fs::path(whole) / "model.safetensors"));
    const json model = read_config(whole)["model"];
    CHECK(model["decoder_self_attention"] == true);
    CHECK(model["dropout"] == 0.3);
    // --resume keeps them: they change the model
    check_refused(run({"train", "--resume", whole, "--steps", "9", "--dropout", "0"}),
                  {"--dropout cannot be given with it"});
    // eval is deterministic: no dropout outside training
    CHECK(eval_json(whole) == eval_json(whole));
    const Outcome inspected =
        run({"inspect", "--run", whole, "--input", "a b c", "--format", "json", "--to", "-"});
    require_ok(inspected);
    bool self_map = false;
    const json report = json::parse(inspected.out);
    for (const json& head : report["examples"][0]["heads"]) {
        if (head["module"] != "decoder.layers.0.self_attn") continue;
        self_map = true;
        const auto queries = head["queries"].get<std::vector<std::string>>();
        const auto keys = head["keys"].get<std::vector<std::string>>();
        REQUIRE(!queries.empty());
        CHECK(keys.size() == queries.size());
        CHECK(keys[0] == "<bos>");
        CHECK(std::equal(keys.begin() + 1, keys.end(), queries.begin()));  // y_{t-1} under y_t
        for (std::size_t t = 0; t < queries.size(); ++t)                   // causal: nothing on later inputs
            for (std::size_t s = t + 1; s < keys.size(); ++s)
                CHECK(head["weights"][t][s].get<double>() == 0.0);
    }
    CHECK(self_map);
}

TEST_CASE("a run's config.json without decoder_self_attention and dropout reads them as off") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    train(dir, {"--task", "copy", "--steps", "2", "--snapshot-every", "0"});
    const json before = eval_json(dir);
    json config = read_config(dir);
    config["config_fnv1a64"] = "unchecked";  // edited by hand
    config["model"].erase("decoder_self_attention");
    config["model"].erase("dropout");
    write_text(fs::path(dir) / "config.json", config.dump(2));
    CHECK(eval_json(dir) == before);
    config["model"]["dropout"] = 1.5;
    write_text(fs::path(dir) / "config.json", config.dump(2));
    check_refused(run({"eval", "--run", dir}), {"config.json: model.dropout must be in [0, 1), got 1.5"});
}

TEST_CASE(
    "--dropout out of range and --decoder-self-attention without a Transformer decoder: one line, exit 2") {
    TempDir tmp;
    const std::string out = tmp / "run";
    const auto refused = [&](std::vector<std::string> extra, const std::vector<std::string>& names) {
        std::vector<std::string> args = {"train", "--task", "copy", "--steps", "1", "--out", out, "--quiet"};
        args.insert(args.end(), extra.begin(), extra.end());
        check_refused(run(args), names);
        CHECK_FALSE(fs::exists(out));
    };
    refused({"--dropout", "1"}, {"attograd: --dropout must be in [0, 1), got 1\n"});
    refused({"--dropout", "-0.1"}, {"--dropout must be in [0, 1), got -0.1"});
    refused({"--dropout", "1e-50"}, {"--dropout must be representable in float32", "got 1e-50"});
    refused({"--model", "rnn", "--dropout", "2"}, {"--dropout must be in [0, 1), got 2"});
    for (const char* kind : {"encoder", "rnn"}) {
        refused(
            {"--model", kind, "--decoder-self-attention"},
            {fmt::format("attograd: --decoder-self-attention applies to --model seq2seq only (--model {} has "
                         "no Transformer decoder)\n",
                         kind)});
    }
    refused({"--decoder-self-attention", "--attention", "hard"},
            {"--attention hard applies to the decoder's cross-attention", "use --attention soft"});
}
