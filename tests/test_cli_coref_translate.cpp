// The coref and translate tasks through the program: coref's learning and the head that
// resolves "it", translate's BLEU in eval, and refused translate options (exit 2, one line).
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <regex>
#include <string>

namespace {

using namespace cli_test;

bool french_installed() {
    std::error_code error;
    return std::filesystem::is_directory("/usr/share/locale/fr/LC_MESSAGES", error);
}

}  // namespace

TEST_CASE(
    "train --task coref reaches 95% held-out accuracy within 400 steps, a decoder head on the referent") {
    TempDir tmp;
    train(tmp / "run", {"--task", "coref", "--steps", "400"});
    const json result = eval_json(tmp / "run");
    CHECK(result["task"] == "coref");
    CHECK(result["sequence_accuracy"].get<double>() >= 0.95);
    double best = 0.0;      // the best head's attention mass on the noun "it" refers to
    std::string resolving;  // that head as LAYER.HEAD
    for (const json& head : result["alignment"]) {
        if (head["share"].get<double>() <= best) continue;
        best = head["share"].get<double>();
        resolving = fmt::format("{}.{}", head["layer"].get<int>(), head["head"].get<int>());
    }
    CHECK(best >= 0.5);
    // Without that head the decoder no longer finds the referent: accuracy falls below 90 %.
    const Outcome knocked =
        run({"inspect", "--run", tmp / "run", "--knockout", resolving, "--format", "term"});
    require_ok(knocked);
    const std::smatch found = [&] {
        std::smatch m;
        std::regex_search(knocked.out, m, std::regex("held-out sequence accuracy ([0-9.]+)% -> ([0-9.]+)%"));
        return m;
    }();
    REQUIRE(found.size() == 3);
    CHECK(std::stod(found[1].str()) >= 95.0);
    CHECK(std::stod(found[2].str()) < 90.0);
}

TEST_CASE("train --task translate refuses a language without catalogs and options of other tasks") {
    TempDir tmp;
    check_refused(run({"train", "--task", "translate", "--lang", "xx-none", "--out", tmp / "a"}),
                  {"no gettext catalogs for language xx-none", "/usr/share/locale/xx-none/LC_MESSAGES"});
    check_refused(run({"train", "--task", "translate", "--lang", "../fr", "--out", tmp / "b"}),
                  {"is not a locale name"});
    check_refused(run({"train", "--task", "copy", "--lang", "fr", "--out", tmp / "c"}),
                  {"--lang applies to --task translate only"});
    check_refused(run({"train", "--task", "copy", "--min-freq", "3", "--out", tmp / "d"}),
                  {"--min-freq applies to --task translate only"});
    if (!french_installed()) return;
    check_refused(run({"train", "--task", "translate", "--min-freq", "0", "--out", tmp / "e"}),
                  {"--min-freq must be >= 1, got 0"});
    check_refused(run({"train", "--task", "translate", "--max-vocab", "3", "--out", tmp / "f"}),
                  {"--max-vocab must be 0 (no limit) or >= 4"});
    check_refused(run({"train", "--task", "translate", "--min-freq", "1000000", "--out", tmp / "g"}),
                  {"--min-freq 1000000 leaves no word of the training pairs in the source vocabulary"});
    CHECK(!fs::exists(tmp / "g"));
}

TEST_CASE("eval of a translate run scores corpus BLEU against every reference, and --to writes it") {
    if (!french_installed()) {
        MESSAGE("skipped: no French catalogs installed");
        return;
    }
    TempDir tmp;
    train(tmp / "run",
          {"--task", "translate", "--steps", "2", "--embed-dim", "16", "--layers", "0", "--decoder-layers",
           "1", "--heads", "1", "--ffn-dim", "0", "--max-vocab", "500", "--snapshot-every", "0"});
    const json config = read_config(tmp / "run");
    CHECK(config["task"]["lang"] == "fr");
    CHECK(config["task"]["min_freq"] == 2);
    CHECK(config["vocab"].size() == 500);
    // separate vocabularies by default: French words are the target's only
    const auto source = config["vocab"].get<std::vector<std::string>>();
    const auto target = config["target_vocab"].get<std::vector<std::string>>();
    CHECK(target.size() == 500);
    CHECK(std::find(target.begin(), target.end(), "fichier") != target.end());
    CHECK(std::find(source.begin(), source.end(), "fichier") == source.end());
    CHECK(std::find(source.begin(), source.end(), "file") != source.end());
    const std::string to = (tmp.path() / "out" / "eval.json").string();
    const Outcome text = run({"eval", "--run", tmp / "run", "--to", to});
    require_ok(text);
    CHECK(text.out.find("corpus BLEU ") != std::string::npos);
    const json result = json::parse(read_text(to));
    CHECK(result["task"] == "translate");
    CHECK(result["heldout_examples"].get<int>() > 1000);
    CHECK(result["bleu"].get<double>() >= 0.0);
    CHECK(result["bleu"].get<double>() < 5.0);  // two steps of a tiny model translate nothing
    // The run records its pairs: catalogs that give other pairs (here: another recorded checksum,
    // as a catalog updated since training would give) are refused rather than evaluated on.
    CHECK(config["task"]["data_bytes"].get<std::uint64_t>() > 0);
    edit_config(tmp / "run", [](json& c) { c["task"]["data_fnv1a64"] = "0123456789abcdef"; });
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"eval", "--run", tmp / "run"},
          {"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}})
        check_refused(run(command), {"gettext catalogs for 'fr' give other pairs", "0123456789abcdef"});
}
