// `attograd train --vocab separate|shared`: a source and a target vocabulary (translate's default,
// --data on request) saved in config.json, used by every model kind, resumed bit for bit; runs
// with one vocabulary keep loading; bad values and a bad saved vocabulary are refused in one line.
#include "cli_helpers.hpp"

#include "core/serialization.hpp"

#include <fmt/format.h>

using namespace cli_test;

namespace {

/// A TSV of English colour-object pairs and their French word-swapped translations: the two
/// sides share no token.
std::string pairs_tsv() {
    const std::vector<std::pair<std::string, std::string>> adjectives = {
        {"red", "rouge"},  {"green", "vert"},  {"blue", "bleu"},
        {"black", "noir"}, {"white", "blanc"}, {"grey", "gris"}};
    const std::vector<std::pair<std::string, std::string>> nouns = {
        {"car", "voiture"}, {"file", "fichier"}, {"window", "fenêtre"},
        {"door", "porte"},  {"key", "clé"},      {"box", "boîte"}};
    std::string text;
    for (const auto& [a, fa] : adjectives)
        for (const auto& [n, fn] : nouns) text += fmt::format("{} {}\t{} {}\n", a, n, fn, fa);
    return text;
}

std::vector<std::string> tokens_of(const json& vocab) { return vocab.get<std::vector<std::string>>(); }

bool has(const std::vector<std::string>& tokens, const std::string& token) {
    return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
}

}  // namespace

TEST_CASE(
    "--data --vocab separate: a vocabulary per side, in config.json and the model, resumed bit for bit") {
    TempDir tmp;
    const std::string data = tmp / "pairs.tsv";
    write_text(data, pairs_tsv());
    for (const char* kind : {"seq2seq", "rnn"}) {
        INFO(kind);
        const auto args = [&](const std::string& dir, const std::string& steps) {
            std::vector<std::string> a = {"train", "--data", data, "--vocab", "separate", "--model", kind};
            // a constant learning rate: the schedule does not depend on --steps
            a.insert(a.end(), {"--steps", steps, "--batch", "8", "--seed", "2", "--schedule", "constant"});
            a.insert(a.end(), {"--warmup", "0", "--snapshot-every", "0", "--checkpoint-every", "1"});
            a.insert(a.end(), {"--eval-every", "100", "--out", dir, "--quiet"});
            return a;
        };
        const std::string whole = tmp / (std::string(kind) + "_whole"),
                          split = tmp / (std::string(kind) + "_split");
        require_ok(run(args(whole, "6")));
        require_ok(run(args(split, "3")));
        require_ok(run({"train", "--resume", split, "--steps", "6", "--quiet"}));
        CHECK(read_text(fs::path(split) / "model.safetensors") ==
              read_text(fs::path(whole) / "model.safetensors"));

        const json config = read_config(whole);
        const auto source = tokens_of(config["vocab"]), target = tokens_of(config["target_vocab"]);
        CHECK(source.size() == 4 + 12);  // the special tokens, 6 adjectives and 6 nouns a side
        CHECK(target.size() == 4 + 12);
        CHECK(has(source, "red"));
        CHECK_FALSE(has(source, "rouge"));
        CHECK(has(target, "rouge"));
        CHECK_FALSE(has(target, "red"));
        // the encoder embeds the source vocabulary, the decoder writes the target's
        const auto weights = attograd::load_safetensors(fs::path(whole) / "model.safetensors");
        CHECK(weights.at("embed.weight").size(0) == 16);
        if (std::string(kind) == "seq2seq") {
            CHECK(weights.at("target_embed.weight").size(0) == 16);
            CHECK(weights.at("out.weight").size(0) == 16);
        }
        const json eval = eval_json(whole);
        CHECK(eval["heldout_examples"].get<int>() >= 1);
        const Outcome inspected = run({"inspect", "--run", whole, "--input", "red car"});
        require_ok(inspected);
        CHECK(inspected.out.find("red car ->") != std::string::npos);
    }
}

TEST_CASE("--data shares one vocabulary unless asked, and such runs load as before") {
    TempDir tmp;
    const std::string data = tmp / "pairs.tsv";
    write_text(data, pairs_tsv());
    train(tmp / "run", {"--data", data, "--steps", "2", "--snapshot-every", "0"});
    const json config = read_config(tmp / "run");
    CHECK_FALSE(config.contains("target_vocab"));
    const auto tokens = tokens_of(config["vocab"]);
    CHECK(has(tokens, "red"));
    CHECK(has(tokens, "rouge"));
    CHECK(eval_json(tmp / "run")["heldout_examples"].get<int>() >= 1);
    train(tmp / "shared", {"--data", data, "--vocab", "shared", "--steps", "2", "--snapshot-every", "0"});
    CHECK(read_config(tmp / "shared")["vocab"] == config["vocab"]);
}

TEST_CASE("--vocab: a bad value, a bundled task, a bad saved target vocabulary: one line, exit 2") {
    TempDir tmp;
    const std::string data = tmp / "pairs.tsv";
    write_text(data, pairs_tsv());
    check_refused(run({"train", "--data", data, "--vocab", "both", "--out", tmp / "a"}),
                  {"attograd: --vocab must be separate or shared, got 'both'\n"});
    check_refused(run({"train", "--task", "copy", "--vocab", "separate", "--out", tmp / "b"}),
                  {"--vocab applies to --task translate and --data only"});
    CHECK_FALSE(fs::exists(tmp / "a"));
    CHECK_FALSE(fs::exists(tmp / "b"));
    const std::string dir = tmp / "run";
    train(dir, {"--data", data, "--vocab", "separate", "--steps", "1", "--snapshot-every", "0"});
    json config = read_config(dir);
    config["config_fnv1a64"] = "unchecked";  // edited by hand
    config["target_vocab"] = "rouge";
    write_text(fs::path(dir) / "config.json", config.dump());
    check_refused(run({"eval", "--run", dir}),
                  {"config.json: target_vocab: expected a JSON array of tokens"});
    config["target_vocab"] = json::array({"<pad>", "<bos>", "<eos>", "<unk>", "vert", "vert"});
    write_text(fs::path(dir) / "config.json", config.dump());
    check_refused(run({"eval", "--run", dir}), {"config.json: target_vocab:", "appears twice"});
}
