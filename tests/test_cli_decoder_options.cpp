// `attograd train --decoder-self-attention` (the seq2seq decoder's causal self-attention) and
// `--dropout`: what the models compute with them, that they are saved and resumed bit for bit,
// that eval is deterministic, and the one-line refusals of values and combinations they do not take.
#include "cli_helpers.hpp"
#include "config.hpp"
#include "models.hpp"

#include "core/ops.hpp"
#include "data/task.hpp"

#include <fmt/format.h>

using namespace cli_test;
using attograd::Generator;
using attograd::Tensor;
using attograd::cli::Batch;
using attograd::cli::Model;
using attograd::cli::RunConfig;

namespace {

/// The copy task's default configuration with `edit` applied.
template <class Edit>
RunConfig copy_config(Edit edit) {
    RunConfig config = attograd::cli::default_config(*attograd::data::make_task("copy"));
    config.model.embed_dim = 16;
    config.model.ffn_dim = 16;
    edit(config.model);
    return config;
}

/// Two sources of the copy task's symbols, and their ids.
std::vector<std::vector<std::int64_t>> sources_of(const RunConfig& config) {
    return {config.vocab.encode({"a", "b", "c", "d"}), config.vocab.encode({"c", "a"})};
}

/// Teacher-forced logits [B, T, V] of `model` on `sources` and `targets`.
std::vector<float> logits(const Model& model, const std::vector<std::vector<std::int64_t>>& sources,
                          const std::vector<std::vector<std::int64_t>>& targets) {
    const Batch batch = model.make_batch(sources, &targets);
    return to_dtype(model.forward(batch).logits, attograd::DType::Float32).to_vector<float>();
}

/// Whether the logits of output position t (of V per position, T positions per row) are equal
/// in `a` and `b` for every row.
bool same_position(const std::vector<float>& a, const std::vector<float>& b, std::int64_t t,
                   std::int64_t rows, std::int64_t width, std::int64_t v) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t i = 0; i < v; ++i) {
            const auto k = static_cast<std::size_t>((r * width + t) * v + i);
            if (a[k] != b[k]) return false;
        }
    return true;
}

}  // namespace

TEST_CASE("--decoder-self-attention: output t sees the decoder inputs up to t only, and decoding agrees") {
    for (const bool self_attention : {false, true}) {
        INFO("decoder self-attention: ", self_attention);
        const RunConfig config = copy_config([&](auto& m) {
            m.decoder_self_attention = self_attention;
            m.heads = 2;
        });
        Generator generator(7);
        const auto model = attograd::cli::make_model(config.model, config.vocab, generator);
        model->eval();
        const auto sources = sources_of(config);
        const std::vector<std::vector<std::int64_t>> targets = {config.vocab.encode({"a", "b", "c", "d"}),
                                                                config.vocab.encode({"c", "a"})};
        // Change the decoder input at position 2 (y_2 of the first row): outputs 0 and 1 cannot
        // see it; output 2 reads it; outputs 3 and 4 see it only through self-attention.
        auto changed = targets;
        changed[0][1] = config.vocab.id("d");
        const auto a = logits(*model, sources, targets), b = logits(*model, sources, changed);
        const std::int64_t width = config.model.max_target_len + 1, v = config.vocab.size();
        CHECK(same_position(a, b, 0, 2, width, v));
        CHECK(same_position(a, b, 1, 2, width, v));
        CHECK_FALSE(same_position(a, b, 2, 2, width, v));
        CHECK(same_position(a, b, 3, 2, width, v) == !self_attention);
        CHECK(same_position(a, b, 4, 2, width, v) == !self_attention);

        // Greedy decoding runs the decoder on each prefix: its outputs are the argmax of the
        // teacher-forced logits on those outputs.
        const auto predicted = model->predict(sources);
        for (std::size_t r = 0; r < predicted.size(); ++r) {
            std::vector<std::vector<std::int64_t>> row_source{sources[r]}, row_target{predicted[r]};
            const auto l = logits(*model, row_source, row_target);
            for (std::size_t t = 0; t < predicted[r].size(); ++t) {
                const float* row = l.data() + static_cast<std::ptrdiff_t>(t) * v;
                CHECK(std::max_element(row, row + v) - row == predicted[r][t]);
            }
        }
        // The self-attention is listed for inspect, over the outputs, after each layer's start.
        std::vector<std::string> names;
        for (const auto& layer : model->attention_layers())
            if (layer.name.starts_with("decoder."))
                names.push_back(layer.name + (layer.over_outputs ? "*" : ""));
        CHECK(names == (self_attention ? std::vector<std::string>{"decoder.layers.0.self_attn*",
                                                                  "decoder.layers.0.multihead_attn"}
                                       : std::vector<std::string>{"decoder.layers.0.multihead_attn"}));
    }
}

TEST_CASE("--dropout drops in training mode only, in the Transformer and the recurrent models") {
    for (const char* kind : {"seq2seq", "encoder", "rnn"}) {
        INFO(kind);
        const RunConfig config = copy_config([&](auto& m) {
            m.kind = kind;
            m.layers = 1;
            m.rnn_layers = 2;
            m.decoder_self_attention = m.kind == "seq2seq";
            m.score = m.kind == "rnn" ? "additive" : m.score;
            m.dropout = 0.5;
        });
        Generator generator(3);
        const auto model = attograd::cli::make_model(config.model, config.vocab, generator);
        const auto sources = sources_of(config);
        const auto targets = sources;
        model->eval();
        const auto first = logits(*model, sources, targets);
        CHECK(logits(*model, sources, targets) == first);  // eval: nothing drawn, the same logits
        model->train();
        const auto trained = logits(*model, sources, targets);
        CHECK(trained != first);
        CHECK(logits(*model, sources, targets) != trained);  // a new mask per forward
        model->eval();
        CHECK(logits(*model, sources, targets) == first);
    }
}

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
    CHECK(read_text(fs::path(plain) / "model.safetensors") != read_text(fs::path(whole) / "model.safetensors"));
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
