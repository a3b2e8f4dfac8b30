// A run's config.json edited by hand (sealed again) to hold a field train never writes, or a
// --data run's heldout.tsv replaced with its checksums recorded again: refused with one line
// naming the field or file, since eval and inspect would otherwise ignore a setting or measure
// the model on other examples.
#include "cli_helpers.hpp"
#include "core/input_file.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace {

using namespace cli_test;

/// 40 pairs "aI b c" -> "c b aI": a --data file with 40 different sources.
std::string pairs_text() {
    std::string pairs;
    for (int i = 0; i < 40; ++i) pairs += fmt::format("a{} b c\tc b a{}\n", i, i);
    return pairs;
}

}  // namespace

TEST_CASE("fields config.json does not hold as train writes them are refused, naming them") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2", "--eval-every", "1"});
    const json saved = read_config(tmp / "run");
    const auto refused = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        json config = saved;
        edit(config);
        write_config(tmp / "run", config);
        check_refused(run({"eval", "--run", tmp / "run"}), names);
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), names);
    };
    refused([](json& c) { c["model"]["widnow"] = 4; },
            {"config.json: unknown field 'model.widnow'", "misspelt", "window"});
    refused([](json& c) { c["train"]["sede"] = 1; }, {"unknown field 'train.sede'"});
    refused([](json& c) { c["task"]["heldout"] = "x"; }, {"unknown field 'task.heldout'"});
    refused([](json& c) { c["notes"] = "mine"; }, {"config.json: unknown field 'notes'"});
    refused([](json& c) { c["progress"]["step"] = 1; }, {"unknown field 'progress.step'", "steps_done"});
    refused([](json& c) { c["task"]["heldout_fnv1a64"] = "zz"; },
            {"task.heldout_fnv1a64 must be 16 hex digits", "got 'zz'"});
    refused([](json& c) { c["task"].erase("heldout_fnv1a64"); }, {"missing field 'task.heldout_fnv1a64'"});
    write_config(tmp / "run", saved);
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE("every message about a run's config.json names the run's directory") {
    TempDir tmp;
    fs::create_directories(tmp / "notes");
    write_config(tmp / "notes", json{{"format", "my-notes"},
                                     {"files", json::object()}});  // some other program's config.json
    const std::string shown = (fs::path(tmp / "notes") / "config.json").string();
    for (const char* command : {"eval", "inspect"})
        check_refused(run({command, "--run", tmp / "notes"}), {shown + ": field 'format' is not"});
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    edit_config(tmp / "run", [](json& c) { c["model"]["embed_dim"] = -5; });
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {(fs::path(tmp / "run") / "config.json").string() + ": model.embed_dim must be"});
}

TEST_CASE("train's closing line names every file the run holds, a --data run's heldout.tsv too") {
    TempDir tmp;
    write_text(tmp / "pairs.tsv", pairs_text());
    const Outcome data =
        run({"train", "--data", tmp / "pairs.tsv", "--steps", "1", "--quiet", "--out", tmp / "run"});
    require_ok(data);
    const json files = read_config(tmp / "run")["files"];
    REQUIRE(files.contains("heldout.tsv"));
    for (const auto& [name, info] : files.items())
        CHECK_MESSAGE(data.out.find(name) != std::string::npos, name);
    const Outcome bundled = run(train_args(tmp / "bundled", "1"));
    require_ok(bundled);
    CHECK(bundled.out.find("heldout.tsv") == std::string::npos);
}

TEST_CASE("a --data run's heldout.tsv must be the held-out split train saved") {
    TempDir tmp;
    const std::string pairs = pairs_text();
    write_text(tmp / "pairs.tsv", pairs);
    train(tmp / "run", {"--data", tmp / "pairs.tsv", "--steps", "2", "--eval-every", "1"});
    const fs::path heldout = fs::path(tmp / "run") / "heldout.tsv";
    const std::string saved = read_text(heldout);
    REQUIRE(read_config(tmp / "run")["task"]["heldout_fnv1a64"] == attograd::file_checksum(heldout));

    // Another example of the file (a training one) in place of a held-out one, the file's own
    // checksum recorded as train would have. While the training file is there as the run
    // started on it, the split is made again from it.
    std::string forged = saved;
    const std::string first = saved.substr(0, saved.find('\n') + 1);
    std::string other;
    for (std::size_t at = 0; at < pairs.size(); at = pairs.find('\n', at) + 1) {
        const std::string line = pairs.substr(at, pairs.find('\n', at) + 1 - at);
        if (saved.find(line) == std::string::npos) {
            other = line;
            break;
        }
    }
    REQUIRE(!other.empty());
    forged.replace(0, first.size(), other);
    write_text(heldout, forged);
    record_checksum(heldout);
    check_refused(run({"eval", "--run", tmp / "run"}), {"heldout.tsv", "is not the held-out split of"});
    check_refused(run({"inspect", "--run", tmp / "run", "--input", "a1 b c"}),
                  {"heldout.tsv", "is not the held-out split of"});
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}),
                  {"heldout.tsv", "is not the held-out split of"});

    // Without the training file, the run's held-out checksum no longer fits.
    fs::remove(tmp / "pairs.tsv");
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"task.heldout_fnv1a64", "heldout.tsv is not the file"});
    // The held-out checksum forged too: the training file, back, still refuses it.
    edit_config(tmp / "run",
                [&](json& c) { c["task"]["heldout_fnv1a64"] = attograd::file_checksum(heldout); });
    write_text(tmp / "pairs.tsv", pairs);
    check_refused(run({"eval", "--run", tmp / "run"}), {"heldout.tsv", "is not the held-out split of"});

    // The saved file and its checksums restored: read again.
    write_text(heldout, saved);
    record_checksum(heldout);
    edit_config(tmp / "run",
                [&](json& c) { c["task"]["heldout_fnv1a64"] = attograd::file_checksum(heldout); });
    require_ok(run({"eval", "--run", tmp / "run"}));
    fs::remove(tmp / "pairs.tsv");  // eval needs only heldout.tsv
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE(
    "a resume refuses train.seed and progress.seed that differ, and progress.seconds behind metrics.csv") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "4", "--eval-every", "2"});
    const fs::path config_file = fs::path(tmp / "run") / "config.json";
    const std::string saved = read_text(config_file);
    json config = json::parse(saved);
    config["config_fnv1a64"] = "unchecked";
    config["train"]["seed"] = 9;
    write_text(config_file, config.dump(2));
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "6", "--quiet"}),
                  {"train.seed 9 differs from progress.seed 0"});
    config = json::parse(saved);
    config["config_fnv1a64"] = "unchecked";
    config["progress"]["seconds"] = 0.0;
    write_text(config_file, config.dump(2));
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "6", "--quiet"}),
                  {"metrics.csv line 2: seconds", "is past the run's 0 seconds of training"});
    write_text(config_file, saved);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "6", "--quiet"}));
}
