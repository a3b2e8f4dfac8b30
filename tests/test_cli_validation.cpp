// Values the program must not take silently: integers in config.json beyond their type, state
// that does not fit the run (optimizer lr, a REINFORCE baseline's update count, held-out tokens
// outside the vocabulary), real-valued flags float32 cannot hold, bidirectional controls in
// text, and eval --to.
#include "cli_helpers.hpp"
#include "core/ops.hpp"
#include "core/serialization.hpp"
#include "train/run_lock.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <limits>

namespace {

using namespace cli_test;

/// Rewrites the 0-d entry ending in `suffix` of `file` (int64 or float64) and records its checksum.
void plant(const fs::path& file, const std::string& suffix, double value) {
    auto state = attograd::load_safetensors(file);
    bool found = false;
    for (auto& [name, tensor] : state) {
        if (!name.ends_with(suffix)) continue;
        tensor = attograd::clone(tensor);
        if (tensor.dtype() == attograd::DType::Int64)
            tensor.data<std::int64_t>()[0] = static_cast<std::int64_t>(value);
        if (tensor.dtype() == attograd::DType::Float64) tensor.data<double>()[0] = value;
        found = true;
    }
    REQUIRE_MESSAGE(found, suffix);
    attograd::save_safetensors(file, state);
    record_checksum(file);
}

/// A small word-level TSV file: reverse three-token sequences of the words a-f.
std::string reverse_tsv() {
    const std::vector<std::string> words = {"a", "b", "c", "d", "e", "f"};
    std::string text;
    for (std::size_t i = 0; i < words.size(); ++i)
        for (std::size_t j = 0; j < words.size(); ++j) {
            const std::string& x = words[i];
            const std::string& y = words[j];
            const std::string& z = words[(i + j) % words.size()];
            text += fmt::format("{} {} {}\t{} {} {}\n", x, y, z, z, y, x);
        }
    return text;
}

}  // namespace

TEST_CASE("config.json integers beyond their type are refused, never wrapped") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2", "--eval-every", "1"});
    const json saved = read_config(tmp / "run");
    const auto check = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        json config = saved;
        edit(config);
        write_config(tmp / "run", config);  // resealed: the value check itself is reached
        check_refused(run({"eval", "--run", tmp / "run"}), names);
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), names);
    };
    // 2^64 - 1 read as int64 was -1: global attention instead of a refusal.
    check(
        [](json& c) { c["model"]["window"] = std::numeric_limits<std::uint64_t>::max(); },
        {"config.json: model.window must be >= 0 (or -1: global attention) and at most 9223372036854775807, "
         "got 18446744073709551615"});
    check([](json& c) { c["model"]["embed_dim"] = std::uint64_t{1} << 63; },
          {"config.json: model.embed_dim must be in [1, 4096], got 9223372036854775808"});
    check([](json& c) { c["progress"]["steps_done"] = std::uint64_t{1} << 63; },
          {"config.json: field 'progress.steps_done' must be an integer in [0, 9223372036854775807], got "
           "9223372036854775808"});
    check([](json& c) { c["format_version"] = std::numeric_limits<std::uint64_t>::max(); },
          {"config.json: field 'format_version' is missing or not an integer"});
    check([](json& c) { c["train"]["lr"] = 1e-50; },
          {"config.json: train.lr must be a positive number representable in float32", "got 1e-50"});
    write_config(tmp / "run", saved);
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE("--resume refuses an optimizer lr that differs from the run's when it has no schedule") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2", "--schedule", "constant", "--warmup", "0"});
    const fs::path file = fs::path(tmp / "run") / "optimizer.safetensors";
    CHECK_FALSE(attograd::load_safetensors(file).contains("optimizer.initial_lr"));  // no schedule
    plant(file, "optimizer.lr", 0.5);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}),
                  {"optimizer.safetensors", "'optimizer.lr' is 0.5, but the run's lr is 0.003",
                   "config.json: train.lr"});
    plant(file, "optimizer.lr", 3e-3);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
}

TEST_CASE("a REINFORCE baseline or update count in model.safetensors that no run reaches is refused") {
    TempDir tmp;
    train(tmp / "run", {"--task", "copy", "--steps", "2", "--attention", "hard", "--estimator", "reinforce"});
    const fs::path file = fs::path(tmp / "run") / "model.safetensors";
    plant(file, "reward_baseline_updates", -5);
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"model.safetensors", "reward_baseline_updates' is -5"});
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}),
                  {"reward_baseline_updates' is -5"});
    plant(file, "reward_baseline_updates", 2);
    require_ok(run({"eval", "--run", tmp / "run"}));
    // The baseline averages rewards, minus each sequence's loss: never positive.
    plant(file, ".reward_baseline", 1e300);
    check_refused(run({"eval", "--run", tmp / "run"}), {"model.safetensors", "reward_baseline' is 1e+300"});
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"outside [-1e+06, 0]"});
    plant(file, ".reward_baseline", -1e50);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}),
                  {"reward_baseline' is -1e+50", "outside [-1e+06, 0]"});
    plant(file, ".reward_baseline", -0.5);
    plant(file, "reward_baseline_updates", 3);  // after 2 steps
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"reward_baseline_updates' is 3", "more than the 2 steps the run has done"});
    plant(file, "reward_baseline_updates", 2);
    plant(file, ".reward_baseline", -0.5);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "4", "--quiet"}));
}

TEST_CASE("a broken heldout.tsv is refused by eval, inspect and --resume alike, and kept as it is") {
    TempDir tmp;
    write_text(tmp / "data.tsv", reverse_tsv());
    train(tmp / "run", {"--data", tmp / "data.tsv", "--steps", "2"});
    const fs::path heldout = fs::path(tmp / "run") / "heldout.tsv";
    const std::string saved = read_text(heldout);
    REQUIRE(saved.size() > 2);
    // The first line's first token replaced by: a token outside the vocabulary (which would be
    // evaluated as <unk>), <unk> itself, a control character; and the first line's target emptied.
    const std::string first_line = saved.substr(0, saved.find('\n'));
    const std::string source = first_line.substr(0, first_line.find('\t'));
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"zzz" + saved.substr(1), {"heldout.tsv: example 1: token 'zzz' is not in config.json's vocab"}},
        {"<unk>" + saved.substr(1), {"heldout.tsv:1: the source holds '<unk>', a reserved token"}},
        {"a\x1b" + saved.substr(1), {"heldout.tsv:1: the source token 'a\\x1b'"}},
        {source + "\t\n" + saved.substr(first_line.size() + 1), {"heldout.tsv:1: the target is empty"}},
    };
    for (const auto& [text, names] : cases) {
        INFO(names.front());
        write_text(heldout, text);
        record_checksum(heldout);
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run"},
                                                   {"train", "--resume", tmp / "run", "--steps", "3"}}) {
            check_refused(run(command), names);
            CHECK(read_text(heldout) == text);  // refused, not rewritten
        }
    }
    write_text(heldout, saved);
    record_checksum(heldout);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
}

TEST_CASE("real-valued flags float32 cannot hold are refused, naming the flag and the value") {
    TempDir tmp;
    const std::string out = tmp / "run";
    const auto refused = [&](std::vector<std::string> flags, const std::vector<std::string>& names) {
        std::vector<std::string> args = {"train", "--task", "reverse", "--steps",
                                         "1",     "--out",  out,       "--quiet"};
        args.insert(args.end(), flags.begin(), flags.end());
        check_refused(run(args), names);
        CHECK_FALSE(fs::exists(fs::path(out) / "config.json"));
    };
    // 1e-50 is 0 in float32: the run would train nothing.
    refused({"--lr", "1e-50"},
            {"--lr must be a positive number representable in float32", "[1.2e-38, 3.4e+38]", "got 1e-50"});
    refused({"--lr", "1e-39"}, {"--lr", "got 1e-39"});  // a float32 subnormal: no precision left
    refused({"--optim", "sgd", "--momentum", "1e-50"},
            {"--momentum must be representable in float32", "got 1e-50"});
    refused({"--weight-decay", "1e-45"}, {"--weight-decay", "float32", "got 1e-45"});
    refused({"--clip", "1e-40"}, {"--clip", "float32", "got 1e-40"});
    train(out,
          {"--task", "reverse", "--steps", "1", "--lr", "1.2e-38", "--clip", "0", "--weight-decay", "0"});
    check_refused(run({"eval", "--run", out, "--length-penalty", "1e-50"}),
                  {"--length-penalty must be 0 or a magnitude in [1.2e-38, 3.4e+38]", "got 1e-50"});
    require_ok(run({"eval", "--run", out, "--length-penalty", "0"}));
}

TEST_CASE("bidirectional override and isolate characters never reach the terminal raw") {
    TempDir tmp;
    const std::string rlo = "\xe2\x80\xae", lri = "\xe2\x81\xa6";
    write_text(tmp / "bidi.tsv", reverse_tsv() + "a" + rlo + "b c\tc b\n");
    const Outcome data = run({"train", "--data", tmp / "bidi.tsv", "--steps", "1", "--out", tmp / "bad"});
    check_refused(data, {"\\u202e"});
    CHECK(data.err.find(rlo) == std::string::npos);
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const Outcome input = run({"eval", "--run", tmp / "run", "--input", "a b" + lri + " c"});
    CHECK(input.code == 2);
    CHECK(input.err.find("\\u2066") != std::string::npos);
    CHECK(input.err.find(lri) == std::string::npos);
    CHECK(input.out.find(lri) == std::string::npos);
    // eval --json prints the bad input's text as given: escaped in the JSON, never raw
    const std::string csi = "\xc2\x9b";  // C1 control introducer
    const Outcome json_out = run(
        {"eval", "--run", tmp / "run", "--json", "--input", "a b" + lri + csi + " c", "--input", "a b c"});
    CHECK(json_out.code == 2);
    CHECK(json_out.out.find(lri) == std::string::npos);
    CHECK(json_out.out.find(csi) == std::string::npos);
    CHECK(json_out.out.find("\\u2066") != std::string::npos);
}

TEST_CASE("bidi marks and invisible format characters never reach the terminal raw") {
    TempDir tmp;
    const std::string rlm = "\xe2\x80\x8f", bom = "\xef\xbb\xbf";
    write_text(tmp / "rlm.tsv", reverse_tsv() + "a " + rlm + " b c\tc b a\n");
    const Outcome data = run({"train", "--data", tmp / "rlm.tsv", "--steps", "1", "--out", tmp / "bad"});
    check_refused(data, {"\\u200f"});
    CHECK(data.err.find(rlm) == std::string::npos);
    CHECK_FALSE(fs::exists(tmp / "bad/config.json"));
    // A word joiner would make "ca<U+2060>t" a second token that looks like "cat".
    write_text(tmp / "joiner.tsv", reverse_tsv() + "ca\u2060t b\tb ca\u2060t\n");
    check_refused(run({"train", "--data", tmp / "joiner.tsv", "--steps", "1", "--out", tmp / "bad"}),
                  {"\\u2060"});
    CHECK_FALSE(fs::exists(tmp / "bad/config.json"));
    // A byte order mark at the start of the file is dropped, not refused.
    write_text(tmp / "bom.tsv", bom + reverse_tsv());
    train(tmp / "run", {"--data", tmp / "bom.tsv", "--steps", "1"});
    const std::vector<std::pair<std::string, std::string>> marks = {{"\xd8\x9c", "\\u061c"},
                                                                    {"\xe2\x80\x8b", "\\u200b"},
                                                                    {"\xe2\x80\x8e", "\\u200e"},
                                                                    {rlm, "\\u200f"},
                                                                    {bom, "\\ufeff"},
                                                                    {"\u2060", "\\u2060"},
                                                                    {"\u00ad", "\\u00ad"},
                                                                    {"\U000e0041", "\\U000e0041"}};
    for (const auto& [mark, escaped] : marks) {
        CAPTURE(escaped);
        const Outcome input = run({"eval", "--run", tmp / "run", "--input", "a " + mark + " b c"});
        check_refused(input, {escaped});
        CHECK(input.err.find(mark) == std::string::npos);
        CHECK(input.out.find(mark) == std::string::npos);
    }
    require_ok(run({"eval", "--run", tmp / "run", "--input", bom + "a b c"}));  // pasted from a file
}

TEST_CASE("eval --to and inspect --to never write into the run directory itself, only into folders of it") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    const std::string config = read_text(tmp / "run/config.json");
    const std::string model = read_text(tmp / "run/model.safetensors");
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / "run/config.json"}),
                  {"eval: --to", "is in the run directory", "itself"});
    check_refused(
        run({"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "run/model.safetensors"}),
        {"inspect: --to", "is in the run directory", "itself"});
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / "run/new.json"}),
                  {"is in the run directory"});
    check_refused(run({"inspect", "--run", tmp / "run", "--format", "svg", "--to", tmp / "run"}),
                  {"inspect: --to", "is in the run directory"});
    CHECK_FALSE(fs::exists(tmp / "run/example1_layer0_head0.svg"));
    // Nor the run's lock file or a staging directory beside it.
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / ".run.lock"}),
                  {"is the lock file or a staging"});
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / ".run.staging-1-0/x.json"}),
                  {"is the lock file or a staging"});
    CHECK_FALSE(fs::exists(tmp / ".run.lock"));
    CHECK(read_text(tmp / "run/config.json") == config);
    CHECK(read_text(tmp / "run/model.safetensors") == model);
    require_ok(run({"eval", "--run", tmp / "run"}));  // the run still loads
    // a folder of the run stays writable
    require_ok(run({"eval", "--run", tmp / "run", "--to", tmp / "run/inspect/eval.json"}));
    CHECK(fs::exists(tmp / "run/inspect/eval.json"));
}

TEST_CASE("eval --to FILE writes the JSON results atomically to exactly that file") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    const Outcome printed = run({"eval", "--run", tmp / "run", "--json"});
    require_ok(printed);
    const fs::path file = fs::path(tmp / "out") / "new" / "eval.json";  // missing folders are created
    const Outcome written = run({"eval", "--run", tmp / "run", "--to", file});
    require_ok(written);
    CHECK(json::parse(read_text(file)) == json::parse(printed.out));
    CHECK(written.out.find("token accuracy") != std::string::npos);  // the summary is still printed
    CHECK(written.out.find("wrote ") != std::string::npos);
    CHECK(entries(fs::path(tmp / "out") / "new") == std::set<std::string>{"eval.json"});  // no temporary left
    // With --json the JSON goes to the file only.
    const Outcome quiet = run({"eval", "--run", tmp / "run", "--json", "--to", file});
    require_ok(quiet);
    CHECK(quiet.out.find('{') == std::string::npos);
    // --to - prints it.
    const Outcome dash = run({"eval", "--run", tmp / "run", "--to", "-"});
    require_ok(dash);
    CHECK(json::parse(dash.out) == json::parse(printed.out));
    // A directory is refused before anything is evaluated, and left as it was.
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / "out"}),
                  {"--to", "give a file name, not a directory"});
    check_refused(run({"eval", "--run", tmp / "run", "--to", std::string(tmp / "out") + "/"}),
                  {"give a file name, not a directory"});
    CHECK(entries(tmp / "out") == std::set<std::string>{"new"});
}

TEST_CASE("--to refuses another run's lock file and staging names, and --out MISSING/../RUN is RUN") {
    TempDir tmp;
    train(tmp / "base", {"--task", "reverse", "--steps", "2"});
    train(tmp / "other", {"--task", "reverse", "--steps", "3"});
    check_refused(run({"eval", "--run", tmp / "base", "--to", tmp / ".other.lock"}),
                  {"is the lock file or a staging directory of the run", "other"});
    check_refused(run({"eval", "--run", tmp / "base", "--to", tmp / ".other.staging-99999-3/x.json"}),
                  {"is the lock file or a staging directory of the run"});
    CHECK_FALSE(fs::exists(tmp / ".other.lock"));
    CHECK_FALSE(fs::exists(tmp / ".other.staging-99999-3"));
    require_ok(run({"eval", "--run", tmp / "base", "--to", tmp / ".nothing.lock"}));  // no run of that name
    // A path the kernel cannot follow (missing/..) names the same run: refused as --out RUN is.
    const std::string spelled = (fs::path(tmp / "missing") / ".." / "other").string();
    check_refused(run({"train", "--task", "reverse", "--steps", "5", "--out", spelled}),
                  {"holds a run already", "--force"});
    CHECK(read_config(tmp / "other")["progress"]["steps_done"] == 3);
}

TEST_CASE(
    "a run's lock file and staging names are neither a run directory nor a --to before its first save") {
    TempDir tmp;
    train(tmp / "r1", {"--task", "reverse", "--steps", "2"});
    for (const char* name : {".r1.lock", ".r1.staging-99999-1", ".fresh.lock"})
        check_refused(run({"train", "--task", "reverse", "--steps", "2", "--out", tmp / name}),
                      {"is the name of a run's lock file or staging directory"});
    CHECK_FALSE(fs::exists(tmp / ".r1.lock"));
    // A lock file whose run has no directory yet (a train before its first save) is its writer's.
    const attograd::train::RunLock starting(tmp / "fresh");
    check_refused(run({"eval", "--run", tmp / "r1", "--to", tmp / ".fresh.lock"}),
                  {"is the lock file or a staging directory of the run"});
    CHECK(read_text(fs::path(tmp / ".fresh.lock")).find('{') == std::string::npos);
}

TEST_CASE("what the program says of a flag given twice, a run of no steps and a diverged loss is plain") {
    TempDir tmp;
    const std::string out = tmp / "run";
    check_refused(run({"train", "--task", "reverse", "--steps", "5", "--steps", "6", "--out", out}),
                  {"--steps: given 2 times; give it once"});
    // No step ran: the evaluation's line shows no training loss or accuracy.
    const Outcome none = run({"train", "--task", "reverse", "--steps", "0", "--out", out});
    REQUIRE(none.code == 0);
    const std::string shown = none.out + none.err;
    CHECK(shown.find("step     0  held-out token") != std::string::npos);
    CHECK(shown.find("loss 0.0000") == std::string::npos);
    // A NaN loss is "nan", whatever its sign bit; the hint names the flags that move it.
    const Outcome diverged =
        run({"train", "--task", "reverse", "--lr", "1e30", "--clip", "0", "--out", tmp / "diverged"});
    CHECK(diverged.code == 2);
    CHECK(diverged.err.find("(loss nan); try a lower --lr or --weight-decay, or --clip") !=
          std::string::npos);
    CHECK(diverged.err.find("-nan") == std::string::npos);
    // A head knocked out twice is named by the flag, not by the library's class.
    train(tmp / "small", {"--task", "reverse", "--steps", "1"});
    check_refused(run({"inspect", "--run", tmp / "small", "--knockout", "0.0", "--knockout", "0.0"}),
                  {"--knockout 0.0: given twice; give each head once"});
}

TEST_CASE("--to with a file or folder name past 255 bytes is refused before any work") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    const std::string long_name(256, 'j');
    check_refused(run({"eval", "--run", tmp / "run", "--to", tmp / (long_name + ".json")}),
                  {"--to", "is 261 bytes, past the 255 a file or folder name may have"});
    check_refused(
        run({"inspect", "--run", tmp / "run", "--format", "svg", "--to", fs::path(tmp / long_name) / "svg"}),
        {"--to", "is 256 bytes, past the 255"});
    check_refused(run({"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / long_name}),
                  {"--to", "is 256 bytes, past the 255"});
    CHECK(entries(tmp.path()) == std::set<std::string>{"run"});
}
