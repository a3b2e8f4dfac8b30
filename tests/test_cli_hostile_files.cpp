// Hostile or broken files in a run directory or given as --data: a clear one-line error (exit
// code 2) naming the file and the field or tensor, never a crash, a hang or exit code 1.
#include "cli_helpers.hpp"
#include "core/ops.hpp"
#include "core/serialization.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace cli_test;

/// A one-step reverse run in `dir`.
void small_run(const std::string& dir) {
    train(dir, {"--task", "reverse", "--steps", "2", "--eval-every", "1"});
}

/// Ten reversal pairs over six letters as a --data file at `path` (one held out).
void write_small_pairs(const fs::path& path) {
    std::string pairs;
    for (const char* row : {"a b c\tc b a", "d e f\tf e d", "a b d\td b a", "b c d\td c b", "e f a\ta f e",
                            "c a b\tb a c", "f f a\ta f f", "d d e\te d d", "a e c\tc e a", "b f e\te f b"})
        pairs += std::string(row) + "\n";
    write_text(path, pairs);
}

/// Writes `saved` back as tmp/run's config.json, applies `edit` (its checksum recorded again),
/// and checks that eval, inspect and --resume refuse the run naming `names`, inspect writing
/// nothing.
void every_reader_refuses(const TempDir& tmp, const std::string& saved,
                          const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
    write_text(fs::path(tmp / "run") / "config.json", saved);
    edit_config(tmp / "run", edit);
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", tmp / "run"},
             {"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "out.json"},
             {"train", "--resume", tmp / "run", "--steps", "4"}}) {
        INFO(command[0]);
        check_refused(run(command), names);
    }
    CHECK_FALSE(fs::exists(tmp / "out.json"));
}

}  // namespace

TEST_CASE("config.json fields of the wrong type are refused naming the field") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    const auto check = [&](const std::function<void(json&)>& edit, const std::string& field) {
        write_text(fs::path(tmp / "run") / "config.json", saved);
        edit_config(tmp / "run", edit);
        INFO(field);
        check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", field});
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"config.json", field});
    };
    check([](json& c) { c["format"] = 5; }, "format");
    check([](json& c) { c["format_version"] = "2"; }, "format_version");
    check([](json& c) { c["progress"] = 5; }, "progress");
    check([](json& c) { c["progress"]["steps_done"] = "many"; }, "progress.steps_done");
    check([](json& c) { c["progress"]["steps_done"] = -3; }, "progress");
    check([](json& c) { c["progress"]["reached_target"] = 1; }, "progress.reached_target");
    check([](json& c) { c["model"]["embed_dim"] = "64"; }, "model.embed_dim");
    check([](json& c) { c["train"]["lr"] = json::array(); }, "train.lr");
    check([](json& c) { c["files"] = 5; }, "files");
    check([](json& c) { c["files"]["model.safetensors"]["bytes"] = "x"; }, "files.model.safetensors");
    check([](json& c) { c["files"]["../../etc/passwd"] = c["files"]["metrics.csv"]; }, "not a file name");
}

TEST_CASE("eval, inspect and --resume refuse a config.json that the run's other records contradict") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    const auto check = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        every_reader_refuses(tmp, saved, edit, names);
    };
    // The report would show this lr as the run's; the optimizer's record says otherwise.
    check([](json& c) { c["train"]["lr"] = 0.01; },
          {"optimizer.safetensors", "'optimizer.initial_lr' is 0.003", "train.lr"});
    check(
        [](json& c) {
            c["train"]["schedule"] = "constant";
            c["train"]["warmup"] = 0;
        },
        {"optimizer.safetensors", "holds 'optimizer.initial_lr', which only a schedule sets"});
    // The schedule gives the lr at step 2 (in closed form, from the saved settings): over 1000
    // steps it is still warming up, over the run's 2 it was annealing.
    check([](json& c) { c["train"]["steps"] = 1000; },
          {"optimizer.safetensors", "'optimizer.lr' is", "config.json's train settings"});
    check([](json& c) { c["train"]["weight_decay"] = 0.1; },
          {"optimizer.safetensors", "'weight_decay' is 0 in the saved state but 0.1"});
    check(
        [](json& c) {
            c["train"]["optim"] = "sgd";
            c["train"]["momentum"] = 0.9;
        },
        {"optimizer.safetensors", "SGD.load_state_dict"});
    // Model settings that keep every weight's shape: the snapshot of the saved model disagrees.
    check([](json& c) { c["model"]["uniform_attention"] = 0; },
          {"attention_snapshots.safetensors", "a model setting in config.json was edited since"});
    check([](json& c) { c["model"]["window"] = 1; },
          {"attention_snapshots.safetensors", "that of model.safetensors under config.json's model settings",
           "a model setting in config.json was edited since"});
    // Counters its metrics.csv holds too: the steps since the last row, the last evaluation.
    check([](json& c) { c["progress"]["window_steps"] = 1; },
          {"progress.evaluation_pending is false, but step 2 is one the run evaluates at"});
    check([](json& c) { c["progress"]["heldout_token_accuracy"] = 0.5; },
          {"progress.heldout_token_accuracy is 0.5", "the last evaluation in metrics.csv"});
    // What the saved model predicts for the probes, recorded at each save (snapshots or not).
    check(
        [](json& c) { c["progress"]["probe_predictions"][0] = json::array({"zz"}); },
        {"config.json: the model as config.json describes it predicts", "saved a model that predicts 'zz'"});
    check([](json& c) { c["model"]["min_source_len"] = 6; }, {"model.min_source_len is 6", "task 'reverse'"});
    check([](json& c) { c["train"]["snapshot_every"] = 7; },
          {"progress.snapshot_period", "is not train.snapshot_every 7 doubled"});
    // Its held-out sequence accuracy after 2 steps is far below reverse's target.
    check([](json& c) { c["progress"]["reached_target"] = true; },
          {"progress.reached_target is true", "heldout_sequence_accuracy", "below the task's target"});
    // metrics.csv cut to its header, its checksum recorded again: no row for the steps done.
    write_text(fs::path(tmp / "run") / "config.json", saved);
    const fs::path metrics = fs::path(tmp / "run") / "metrics.csv";
    const std::string rows = read_text(metrics);
    write_text(metrics, rows.substr(0, rows.find('\n') + 1));
    record_checksum(metrics);
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", tmp / "run"}, {"train", "--resume", tmp / "run", "--steps", "4"}})
        check_refused(run(command),
                      {"but metrics.csv holds no row (the steps since the last row are the window)"});
    write_text(metrics, rows);
    write_text(fs::path(tmp / "run") / "config.json", saved);
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE("a config.json with a key twice in one object is refused, its checksum unchanged or not") {
    TempDir tmp;
    small_run(tmp / "run");
    const fs::path config = fs::path(tmp / "run") / "config.json";
    std::string text = read_text(config);
    const auto at = text.find("\"lr\": ");
    REQUIRE(at != std::string::npos);
    text.insert(at, "\"lr\": 0.5, ");  // the parser would keep the second, the run's own
    write_text(config, text);
    check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", "the key 'lr' appears twice"});
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"the key 'lr' appears twice"});
}

TEST_CASE("a config.json vocabulary with a duplicate, empty or NUL token is a config.json error") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    const auto check = [&](const std::function<void(json&)>& edit, const std::string& what) {
        write_text(fs::path(tmp / "run") / "config.json", saved);
        edit_config(tmp / "run", edit);
        INFO(what);
        check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", "vocabulary: entry", what});
        check_refused(run({"inspect", "--run", tmp / "run"}), {"config.json", what});
    };
    check([](json& c) { c["vocab"][5] = c["vocab"][4]; }, "appears twice");
    check([](json& c) { c["vocab"][4] = ""; }, "is empty");
    check([](json& c) { c["vocab"][4] = std::string("a\0b", 3); }, "control character");
}

TEST_CASE("deeply nested JSON in config.json or in a checkpoint header is refused, not a stack overflow") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string deep = std::string(500'000, '[') + std::string(500'000, ']');
    const fs::path config = fs::path(tmp / "run") / "config.json";
    const std::string saved = read_text(config);
    write_text(config, R"({"format": )" + deep + "}");
    check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", "nested deeper than 64"});
    check_refused(run({"inspect", "--run", tmp / "run"}), {"config.json", "nested deeper than 64"});
    write_text(config, saved);

    // A header nested as deep, with the checksum recorded so that the reader itself is tested.
    const fs::path weights = fs::path(tmp / "run") / "model.safetensors";
    std::string header = R"({"a": )" + deep + "}";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
    write_text(weights, bytes + header);
    record_checksum(weights);
    check_refused(run({"eval", "--run", tmp / "run"}), {"model.safetensors", "nested deeper than 64"});
}

TEST_CASE("a FIFO in place of config.json, model.safetensors or --data is refused at once") {
    TempDir tmp;
    small_run(tmp / "run");
    ::alarm(60);  // a hang ends the test here instead of never
    for (const std::string name : {"model.safetensors", "config.json", "metrics.csv"}) {
        TempDir copy;
        fs::copy(tmp / "run", copy / "run");
        const fs::path file = fs::path(copy / "run") / name;
        fs::remove(file);
        REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
        INFO(name);
        check_refused(run({"eval", "--run", copy / "run"}), {name, "FIFO"});
        check_refused(run({"train", "--resume", copy / "run", "--steps", "4"}), {name, "FIFO"});
    }
    const std::string fifo = tmp / "data.tsv";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    check_refused(run({"train", "--data", fifo, "--steps", "1", "--out", tmp / "d", "--quiet"}),
                  {"data.tsv", "FIFO"});
    ::alarm(0);
}

TEST_CASE("every flipped byte in any file of a run is refused on load, naming the file") {
    TempDir tmp;
    small_run(tmp / "run");
    const json files = read_config(tmp / "run")["files"];
    REQUIRE(files.size() >= 3);  // model.safetensors, optimizer.safetensors, metrics.csv, snapshots
    int flips = 0, refused = 0;
    for (const auto& [name, info] : files.items()) {
        const fs::path file = fs::path(tmp / "run") / name;
        const std::string good = read_text(file);
        // Bytes in the length prefix, the header and the data, 17 per file.
        for (std::size_t k = 0; k < 17; ++k) {
            const std::size_t at = k * (good.size() - 1) / 16;
            std::string bad = good;
            bad[at] = static_cast<char>(bad[at] ^ 0x10);
            write_text(file, bad);
            ++flips;
            const Outcome o = run({"eval", "--run", tmp / "run"});
            INFO(name, " byte ", at, ": ", o.err);
            CHECK(o.code == 2);
            CHECK(o.err.find(name) != std::string::npos);
            refused += o.code == 2 && o.err.find("checksum") != std::string::npos;
        }
        write_text(file, good);
    }
    CHECK(refused == flips);
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE("optimizer state no optimizer could have written is refused on --resume, naming the entry") {
    TempDir tmp;
    small_run(tmp / "run");
    const fs::path path = fs::path(tmp / "run") / "optimizer.safetensors";
    const auto good = attograd::load_safetensors(path);
    const auto plant = [&](const std::string& suffix, double value) {
        auto state = good;
        for (auto& [name, tensor] : state) {
            if (!name.ends_with(suffix)) continue;
            tensor = attograd::clone(tensor);  // the copy of the map shares good's storage
            if (tensor.dtype() == attograd::DType::Float32)
                tensor.data<float>()[0] = static_cast<float>(value);
            if (tensor.dtype() == attograd::DType::Int64)
                tensor.data<std::int64_t>()[0] = static_cast<std::int64_t>(value);
            break;
        }
        attograd::save_safetensors(path, state);
        record_checksum(path);
    };
    plant(".exp_avg_sq", -0.5);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}),
                  {"optimizer.safetensors", "exp_avg_sq", "-0.5"});
    plant(".step", 0);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"optimizer.safetensors", "step"});
    plant(".step", -1);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"optimizer.safetensors", "step"});
    attograd::save_safetensors(path, good);
    record_checksum(path);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
}

TEST_CASE("a changed byte in config.json or a deleted files entry is refused, naming config.json") {
    TempDir tmp;
    small_run(tmp / "run");
    const fs::path config = fs::path(tmp / "run") / "config.json";
    const std::string saved = read_text(config);
    const auto check = [&](const std::string& from, const std::string& to) {
        INFO(from, " -> ", to);
        const auto at = saved.find(from);
        REQUIRE(at != std::string::npos);
        std::string edited = saved;
        edited.replace(at, from.size(), to);
        write_text(config, edited);
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run", "--format", "term"},
                                                   {"train", "--resume", tmp / "run", "--steps", "4"}})
            check_refused(run(command), {"config.json", "checksum", "unchecked"});
    };
    check(R"("window": -1)", R"("window": 1)");  // local attention, silently
    check(R"("score": ")", R"("score": "x)");
    const json original = json::parse(saved);
    const std::string token = original["vocab"][5].get<std::string>();
    check(fmt::format("\"{}\",", token), fmt::format("\"{}{}\",", token, token));
    check(R"("metrics.csv": {)", R"("metrics.csv_": {)");
    // A files entry deleted: the checksum covers the set of files too.
    json fewer = original;
    fewer["files"].erase("optimizer.safetensors");
    write_text(config, fewer.dump(2));
    check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", "checksum"});
    // Without the field (a byte of its name changed) too.
    json unsealed = original;
    unsealed.erase(attograd::train::config_checksum_field);
    write_text(config, unsealed.dump(2));
    check_refused(run({"eval", "--run", tmp / "run"}), {"config.json", "config_fnv1a64"});

    // The documented way to edit it by hand: "config_fnv1a64": "unchecked"; the next save seals it.
    json edited = original;
    edited["train"]["checkpoint_every"] = 7;
    edited[attograd::train::config_checksum_field] = attograd::train::config_unchecked;
    write_text(config, edited.dump(2));
    require_ok(run({"eval", "--run", tmp / "run"}));
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
    const json resealed = read_config(tmp / "run");
    CHECK(resealed["train"]["checkpoint_every"] == 7);
    CHECK(resealed[attograd::train::config_checksum_field] == attograd::train::config_checksum(resealed));
    require_ok(run({"eval", "--run", tmp / "run"}));
}

TEST_CASE("config.json values outside the range train writes are refused naming the field") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    // Edited by hand as docs/howto/checkpoints.md says: "config_fnv1a64": "unchecked".
    const auto check = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        json config = json::parse(saved);
        edit(config);
        config["config_fnv1a64"] = "unchecked";
        write_text(fs::path(tmp / "run") / "config.json", config.dump());
        check_refused(run({"eval", "--run", tmp / "run"}), names);
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), names);
    };
    // -1 used to wrap to 2^64 - 1 (json's get<uint64_t>) and -2 alike: refused as --seed refuses it.
    for (const std::int64_t seed : {-1, -2})
        check([&](json& c) { c["train"]["seed"] = seed; },
              {"config.json: train.seed must be an integer in [0, 18446744073709551615]",
               fmt::format("got {}", seed)});
    check([](json& c) { c["train"]["seed"] = 1.5; }, {"config.json: train.seed must be an integer, got 1.5"});
    // 1.0 is a JSON number that is not an integer: the message says an integer is expected.
    check([](json& c) { c["model"]["heads"] = 1.0; },
          {"config.json: model.heads must be an integer, got 1.0"});
    check([](json& c) { c["task"]["data_bytes"] = -1; }, {"config.json: task.data_bytes"});
    check([](json& c) { c["task"]["data_fnv1a64"] = "zz\x1b"; },
          {"config.json: task.data_fnv1a64 must be \"\" or 16 hex digits", "got 'zz\\x1b'"});
    check([](json& c) { c["progress"]["initial_loss"] = -1; },
          {"config.json: progress.initial_loss must be finite and >= 0", "got -1"});
    check([](json& c) { c["progress"]["seconds"] = 1e308; }, {"config.json: progress.seconds", "got 1e+308"});
    check([](json& c) { c["progress"]["seconds"] = -5; }, {"config.json: progress.seconds", "got -5"});
    check([](json& c) { c["progress"]["window_steps"] = 99; },
          {"config.json: progress.window_steps must be in [0, progress.steps_done = 2], got 99"});
    check([](json& c) { c["progress"]["steps_done"] = 5000; },
          {"config.json: progress.steps_done", "got 5000"});
    check([](json& c) { c["progress"]["high_loss_steps"] = 7; }, {"config.json: progress.high_loss_steps"});
    check([](json& c) { c["progress"]["heldout_token_accuracy"] = 1.5; },
          {"config.json: progress.heldout_token_accuracy must be in [0, 1]"});
    check([](json& c) { c["progress"]["heldout_sequence_accuracy"] = -0.1; },
          {"config.json: progress.heldout_sequence_accuracy"});
    check([](json& c) { c["progress"]["window_loss_sum"] = -3; }, {"config.json: progress.window_loss_sum"});
    check([](json& c) { c["progress"]["window_accuracy_sum"] = 50; },
          {"config.json: progress.window_accuracy_sum"});
    check([](json& c) { c["progress"]["pending_lr"] = -1; },
          {"config.json: progress.pending_lr must be finite and >= 0", "got -1"});
    check([](json& c) { c["progress"]["evaluation_pending"] = 1; },
          {"config.json: field 'progress.evaluation_pending' must be true or false"});
    check(
        [](json& c) {
            c["progress"]["evaluation_pending"] = true;
            c["progress"]["window_steps"] = 0;
        },
        {"config.json: progress.window_steps must be >= 1 while progress.evaluation_pending is true"});
    // Integers print as integers, other numbers in full, and the path once.
    check([](json& c) { c["progress"]["steps_done"] = std::numeric_limits<std::int64_t>::max(); },
          {"config.json: progress.steps_done must be in [0, train.steps = 2], got 9223372036854775807"});
    check([](json& c) { c["progress"]["heldout_token_accuracy"] = 1.0000001; },
          {"config.json: progress.heldout_token_accuracy must be in [0, 1], got 1.0000001"});
    // An integer beyond its field's type is out of the setting's range, said as that range.
    check(
        [](json& c) { c["train"]["steps"] = std::numeric_limits<std::uint64_t>::max(); },
        {"config.json: train.steps must be >= 0 and at most 9223372036854775807, got 18446744073709551615"});
    check([](json& c) { c["model"]["rnn_layers"] = std::numeric_limits<std::uint64_t>::max(); },
          {"config.json: model.rnn_layers must be in [1, 8], got 18446744073709551615"});
    check([](json& c) { c["model"]["window"] = 1e300; }, {"config.json: model.window", "got 1e+300"});
    // A setting out of its own range is named, not a progress record checked against it.
    check([](json& c) { c["train"]["batch"] = 0; }, {"config.json: train.batch must be in [1, 4096], got 0"});
    check([](json& c) { c["train"]["seed"] = json::parse("18446744073709551616"); },
          {"config.json: train.seed must be an integer in [0, 18446744073709551615], got "
           "18446744073709551616"});
    {
        json config = json::parse(saved);
        config["progress"]["snapshot_period"] = std::numeric_limits<std::int64_t>::max();
        config["config_fnv1a64"] = "unchecked";
        write_text(fs::path(tmp / "run") / "config.json", config.dump());
        // Every command that reads the run applies the same bound.
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"train", "--resume", tmp / "run", "--steps", "4"},
                                                   {"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run"}}) {
            INFO(command[0]);
            const Outcome o = run(command);
            CHECK(o.code == 2);
            CHECK(line_with(o.err, "snapshot_period")
                      .ends_with("config.json: progress.snapshot_period must be an integer in [0, 9e15), got "
                                 "9223372036854775807"));
            CHECK(o.err.find("config.json: config.json") == std::string::npos);
        }
    }
    // The largest seed --seed takes is kept, not refused (nor another run's seed: the first
    // step's loss and the step-0 snapshot are built again from it).
    train(tmp / "largest", {"--task", "reverse", "--steps", "2", "--seed",
                            std::to_string(std::numeric_limits<std::uint64_t>::max())});
    require_ok(run({"eval", "--run", tmp / "largest"}));
    json config = json::parse(saved);
    config["train"]["seed"] = std::numeric_limits<std::uint64_t>::max();
    config["progress"]["seed"] = std::numeric_limits<std::uint64_t>::max();  // recorded twice
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"not the model the run's seed made"});  // its step-0 snapshot
}

TEST_CASE("config.json naming another task than the model's is refused naming task.name") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    for (const char* name : {"dates", "recall", "nosuch"}) {
        INFO(name);
        json config = json::parse(saved);
        config["task"]["name"] = name;
        config["config_fnv1a64"] = "unchecked";
        write_text(fs::path(tmp / "run") / "config.json", config.dump());
        // dates' sources are longer than the model takes: refused before any example runs.
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run"},
                                                   {"train", "--resume", tmp / "run", "--steps", "4"}})
            check_refused(run(command), {"config.json: task.name", fmt::format("'{}'", name)});
    }
    // copy and sort have reverse's tokens and lengths: the model would run on them, but their
    // held-out examples are not those of the run (task.heldout_fnv1a64).
    for (const char* name : {"copy", "sort"}) {
        INFO(name);
        json config = json::parse(saved);
        config["task"]["name"] = name;
        config["config_fnv1a64"] = "unchecked";
        write_text(fs::path(tmp / "run") / "config.json", config.dump());
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run", "--input", "a b c"},
                                                   {"train", "--resume", tmp / "run", "--steps", "4"}})
            check_refused(run(command), {"config.json: task.heldout_fnv1a64",
                                         fmt::format("task.name '{}' is not the task this run", name)});
    }
    json config = json::parse(saved);
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    require_ok(run({"eval", "--run", tmp / "run"}));
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == 2);
}

TEST_CASE(
    "config.json: task 'data' without its file, and a progress count of the wrong kind, name the field") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    json config = json::parse(saved);
    config["task"]["name"] = "data";  // with task.data "": the resume used to say ": cannot open"
    config["task"]["data"] = "";
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}), {"config.json: task.data"});
    config = json::parse(saved);
    config["progress"]["steps_done"] = 1.5;  // used to say "must be a number, got number"
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    check_refused(run({"eval", "--run", tmp / "run"}), {"'progress.steps_done' must be an integer, got 1.5"});
}

TEST_CASE("a files entry naming a file attograd does not write for the run is refused, and the file kept") {
    TempDir tmp;
    small_run(tmp / "run");
    const fs::path dir = tmp / "run";
    const std::string saved = read_text(dir / "config.json");
    // notes.txt is the user's; heldout.tsv is written for --data runs only, not for this reverse run.
    for (const char* name : {"notes.txt", "heldout.tsv"}) {
        INFO(name);
        write_text(dir / name, "mine\n");
        record_checksum(dir / name);
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", dir},
                                                   {"inspect", "--run", dir},
                                                   {"train", "--resume", dir, "--steps", "4"}}) {
            check_refused(run(command), {"config.json: field 'files' lists", fmt::format("'{}'", name),
                                         "which attograd does not write for this run"});
            REQUIRE(fs::exists(dir / name));
            CHECK(read_text(dir / name) == "mine\n");
        }
        write_text(dir / "config.json", saved);
        fs::remove(dir / name);
    }
    // Replacing the run with --force would drop every file its config.json lists.
    auto replace = train_args(dir, "2");
    replace.push_back("--force");
    for (const char* name : {"notes.txt", "heldout.tsv"}) {
        INFO(name);
        write_text(dir / name, "mine\n");
        record_checksum(dir / name);
        check_refused(run(replace), {"config.json: field 'files' lists", fmt::format("'{}'", name)});
        CHECK(read_text(dir / name) == "mine\n");
        write_text(dir / "config.json", saved);
    }
    // Unlisted, the user's files (a heldout.tsv of their own too) are kept by a save, and the run
    // stays readable.
    require_ok(run({"eval", "--run", dir}));
    require_ok(run({"inspect", "--run", dir, "--samples", "1"}));
    require_ok(run({"train", "--resume", dir, "--steps", "3", "--quiet"}));
    require_ok(run(replace));
    for (const char* name : {"notes.txt", "heldout.tsv"}) CHECK(read_text(dir / name) == "mine\n");
    fs::remove(dir / "heldout.tsv");
    // Without a readable list of the run's files, --force cannot tell them from the user's.
    for (const std::string broken : {"{not json", "{\"files\": 5}"}) {
        INFO(broken);
        write_text(dir / "config.json", broken);
        check_refused(run(replace), {"--force", "'notes.txt'", "move that out of the directory first"});
        CHECK(read_text(dir / "notes.txt") == "mine\n");
    }
    fs::remove(dir / "notes.txt");
    require_ok(run(replace));  // run files only: replaced
    CHECK_NOTHROW(json::parse(read_text(dir / "config.json")));
}

TEST_CASE("a hand-edited config.json cannot drop a file's checksum entry") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    for (const char* name :
         {"model.safetensors", "optimizer.safetensors", "metrics.csv", "attention_snapshots.safetensors"}) {
        INFO(name);
        json config = json::parse(saved);
        REQUIRE(config["files"].contains(name));
        config["files"].erase(name);  // the file could then be swapped for anything
        config["config_fnv1a64"] = "unchecked";
        write_text(fs::path(tmp / "run") / "config.json", config.dump());
        check_refused(run({"eval", "--run", tmp / "run"}), {"field 'files' has no entry for", name});
    }
    json config = json::parse(saved);
    config["files"] = json::array();
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"field 'files' must be an object of the run's file checksums, got array"});
}

TEST_CASE("a config.json edited to a model too large for memory is refused before it is built") {
    TempDir tmp;
    small_run(tmp / "run");
    json config = read_config(tmp / "run");
    config["model"]["embed_dim"] = 4096;
    config["model"]["ffn_dim"] = 16384;
    config["model"]["layers"] = 16;
    config["model"]["decoder_layers"] = 16;
    config["model"]["heads"] = 4096;
    config["train"]["batch"] = 4096;
    config["config_fnv1a64"] = "unchecked";
    write_text(fs::path(tmp / "run") / "config.json", config.dump());
    // 7.5e9 parameters: 28 GiB of float32 weights alone, and a batch of 4096 whose activations at
    // 4096 heads need terabytes, more than any machine the suite runs on has.
    const auto gib_needed = [](const Outcome& o) {
        const std::regex needed("would need about ([0-9.]+) GiB");
        std::smatch match;
        REQUIRE(std::regex_search(o.err, match, needed));
        return std::stod(match[1]);
    };
    const Outcome eval = run({"eval", "--run", tmp / "run"});
    check_refused(
        eval, {"config.json: ", "model.embed_dim 4096", "model.ffn_dim 16384", "GiB", "running this model"});
    const Outcome resume = run({"train", "--resume", tmp / "run", "--steps", "4"});
    check_refused(resume, {"config.json: ", "model.layers 16", "training would need"});
    CHECK(gib_needed(eval) > 28.0);
    CHECK(gib_needed(resume) > gib_needed(eval));  // + gradients, Adam's moments
}

TEST_CASE("edited attention snapshots are refused by --resume and left out of inspect's report") {
    TempDir tmp;
    const fs::path dir = tmp / "run", file = dir / "attention_snapshots.safetensors";
    train(dir, {"--task", "reverse", "--steps", "25", "--no-early-stop", "--snapshot-every", "10"});
    const attograd::SafetensorsContents saved = attograd::read_safetensors(file);
    const json good = json::parse(saved.metadata.at("snapshots"));
    REQUIRE(good.size() == 4);  // steps 0, 10, 20 and the end of training, 25
    REQUIRE(good[3]["step"] == 25);
    // The first map of the last snapshot's first probe that has a share (a right alignment).
    std::size_t shared = 0, offset = 0;
    for (std::size_t s = 0; s < 3; ++s)
        for (const auto& probe : good[s]["probes"])
            for (const auto& map : probe["maps"]) offset += map["queries"].size() * map["keys"].size();
    const json& maps = good[3]["probes"][0]["maps"];
    while (shared < maps.size() && !maps[shared].contains("alignment_share")) ++shared;
    REQUIRE(shared < maps.size());
    // Writes the file with `edit` made to its metadata and `first_weight` (when given) as the
    // last snapshot's first weight, with its checksum recorded as train would have.
    const auto planted = [&](const std::function<void(json&)>& edit, std::optional<float> first_weight = {}) {
        json j = good;
        edit(j);
        attograd::Tensor weights = attograd::clone(saved.tensors.at("weights"));
        if (first_weight) weights.data<float>()[offset] = *first_weight;
        auto metadata = saved.metadata;
        metadata["snapshots"] = j.dump();
        attograd::save_safetensors(file, {{"weights", weights}}, metadata);
        record_checksum(file);
    };
    const auto refused = [&](const std::string& problem) {
        INFO(problem);
        const Outcome report =
            run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"});
        CHECK(report.code == 0);
        CHECK(report.err.find("warning") != std::string::npos);
        CHECK(report.err.find(problem) != std::string::npos);
        CHECK(read_text(tmp / "report.html").find("could not be read") != std::string::npos);
        check_refused(run({"train", "--resume", dir, "--steps", "30", "--quiet"}),
                      {"attention_snapshots.safetensors", problem});
        CHECK(read_config(dir)["progress"]["steps_done"] == 25);
    };
    planted([](json&) {});  // unchanged: read and resumable
    const Outcome clean = run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"});
    CHECK(clean.code == 0);
    CHECK(clean.err.find("warning") == std::string::npos);

    planted([&](json& j) { j[3]["probes"][0]["maps"][shared]["alignment_share"] = 5; });
    refused("alignment_share 5 outside [0, 1]");
    planted([&](json& j) {
        const double share = j[3]["probes"][0]["maps"][shared]["alignment_share"];
        j[3]["probes"][0]["maps"][shared]["alignment_share"] = share > 0.5 ? share - 0.25 : share + 0.25;
    });
    refused("but its weights and right keys give");
    planted([](json& j) { j[2]["probes"][0]["prediction"][0] = "ZZZ"; });
    refused("prediction token 'ZZZ' is not in the run's vocabulary");
    // The layout is the run's: its probes' inputs, the model's layers, heads and labels, and
    // predictions as long as the probe's output.
    planted(
        [](json& j) { j[1]["probes"][0]["source"][0] = "zebra"; });  // one snapshot: not one input throughout
    refused("but 'zebra r i o a b' at step 10");
    planted([](json& j) {  // every snapshot: not the run's held-out example
        for (auto& snapshot : j) snapshot["probes"][0]["source"][0] = "zebra";
    });
    refused("snapshot 0 (step 0), probe 0: its input 'zebra");
    planted([](json& j) { j[1]["probes"][0]["maps"][0]["keys"][0] = "g"; });
    refused("snapshot 1 (step 10), probe 0: map 0");
    planted([](json& j) { j[2]["probes"][1]["maps"][0]["head"] = 999; });
    refused("head 999') is not the model's");
    planted([](json& j) {
        j[2]["probes"][0]["maps"][0]["module"] =
            std::string(j[2]["probes"][0]["maps"][0]["module"]) + "\u202e";
    });
    refused("\\u202e");
    CHECK(
        run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"}).err.find("\u202e") ==
        std::string::npos);
    planted([](json& j) {
        for (int k = 0; k < 17; ++k) j[2]["probes"][0]["prediction"].push_back("a");
    });
    refused("more than the probe's");
    planted([](json&) {}, -3.0f);
    refused("negative weight -3");
    planted([](json&) {}, saved.tensors.at("weights").data<float>()[offset] + 0.5f);  // the row sums to 1.5
    refused("more than 1");
    // The last snapshot (step 25, the run's last step) was taken of the saved model: a prediction
    // other than the model's says the model or the file is not the run's (the unchanged file
    // above passed with the model's own), so every command refuses the run.
    planted([](json& j) {
        auto& prediction = j[3]["probes"][0]["prediction"];
        REQUIRE(!prediction.empty());
        prediction[0] = prediction[0] == "a" ? "b" : "a";
    });
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir},
             {"inspect", "--run", dir, "--format", "html", "--to", tmp / "refused.html"},
             {"train", "--resume", dir, "--steps", "30", "--quiet"}})
        check_refused(run(command),
                      {"attention_snapshots.safetensors", "taken at the run's last step: its prediction"});
    CHECK_FALSE(fs::exists(tmp / "refused.html"));
    // The snapshot of step 0 is the seed's model's, which is built again.
    planted([](json& j) {
        auto& prediction = j[0]["probes"][0]["prediction"];
        REQUIRE(!prediction.empty());
        prediction[0] = prediction[0] == "a" ? "b" : "a";
    });
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "30", "--quiet"}})
        check_refused(run(command),
                      {"attention_snapshots.safetensors", "taken before the first step: its prediction"});
    // An earlier step's prediction is not checked against the model (it was another model).
    planted([](json& j) {
        auto& prediction = j[2]["probes"][0]["prediction"];
        REQUIRE(!prediction.empty());
        prediction[0] = prediction[0] == "a" ? "b" : "a";
    });
    CHECK(
        run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"}).err.find("warning") ==
        std::string::npos);
    // A snapshot after the steps trained (the file is saved with the run's other files, as one
    // generation): inspect leaves the replay out; --resume refuses it rather than drop it.
    planted([](json& j) { j.back()["step"] = 26; });
    const Outcome late = run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"});
    CHECK(late.code == 0);
    CHECK(late.err.find("has step 26, after the 25 steps the run has trained") != std::string::npos);
    check_refused(run({"train", "--resume", dir, "--steps", "30", "--quiet"}),
                  {"attention_snapshots.safetensors': a snapshot has step 26, after the 25 steps the run has "
                   "trained"});
    CHECK(read_config(dir)["progress"]["steps_done"] == 25);
    // A resume may change the period: the snapshots of both periods are the run's.
    planted([](json&) {});
    require_ok(run({"train", "--resume", dir, "--steps", "30", "--snapshot-every", "7", "--quiet"}));
    const Outcome changed = run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"});
    CHECK(changed.code == 0);
    CHECK(changed.err.find("warning") == std::string::npos);
}

TEST_CASE("metrics.csv rows the run cannot have written are refused by --resume, eval and inspect") {
    TempDir tmp;
    const fs::path dir = tmp / "run", file = dir / "metrics.csv";
    train(dir, {"--task", "reverse", "--steps", "4", "--no-early-stop", "--eval-every", "2"});
    const std::string good = read_text(file);
    const std::string header = good.substr(0, good.find('\n') + 1);
    const std::string first_row =
        good.substr(header.size(), good.find('\n', header.size()) + 1 - header.size());
    REQUIRE(first_row.starts_with("2,"));
    // `row` in place of the first row, recorded as train would record it.
    const auto planted = [&](const std::string& row) {
        std::string text = good;
        text.replace(header.size(), first_row.size(), row);
        write_text(file, text);
        record_checksum(file);
    };
    // The progress records metrics.csv holds would otherwise be read unchecked.
    const auto refused_by_every_command = [&](const std::vector<std::string>& names) {
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir},
                 {"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"},
                 {"train", "--resume", dir, "--steps", "6", "--quiet"}}) {
            INFO(command[0]);
            check_refused(run(command), names);
        }
        CHECK_FALSE(fs::exists(tmp / "report.html"));
    };
    // The first row with its field `column` (by header name) set to `value`.
    const auto with = [&](const std::string& column, const std::string& value) {
        std::vector<std::string> names, fields;
        std::stringstream h(header.substr(0, header.size() - 1)),
            r(first_row.substr(0, first_row.size() - 1));
        for (std::string f; std::getline(h, f, ',');) names.push_back(f);
        for (std::string f; std::getline(r, f, ',');) fields.push_back(f);
        const auto at = std::find(names.begin(), names.end(), column);
        REQUIRE(at != names.end());
        fields[static_cast<std::size_t>(at - names.begin())] = value;
        std::string row;
        for (const auto& f : fields) row += (row.empty() ? "" : ",") + f;
        return row + "\n";
    };
    for (const auto& [row, problem] : std::vector<std::pair<std::string, std::string>>{
             {with("step", "99"), "step '99' is not a step of this run"},
             {with("step", "4"), "after the previous row's 4"},  // the next row is step 4: not rising
             {with("step", "1.5"), "step '1.5'"},
             {with("loss", "-1"), "field 'loss' is -1, outside [0, inf]"},
             {with("train_token_accuracy", "5"), "field 'train_token_accuracy' is 5, outside [0, 1]"},
             {with("lr", "-0.5"), "field 'lr' is -0.5"}}) {
        INFO(row);
        planted(row);
        refused_by_every_command({"metrics.csv", problem});
        CHECK(read_config(dir)["progress"]["steps_done"] == 4);
    }
    // Whole-file edits: columns renamed (one accuracy drawn as the other), and \r\n line ends.
    std::string swapped = good;
    const std::string token = "heldout_token_accuracy", sequence = "heldout_sequence_accuracy";
    REQUIRE(header.find(token + "," + sequence) != std::string::npos);
    swapped.replace(header.find(token + "," + sequence), token.size() + 1 + sequence.size(),
                    sequence + "," + token);
    std::string crlf;
    for (const char c : good) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    for (const auto& [text, problem] : std::vector<std::pair<std::string, std::string>>{
             {swapped, "does not start with the header train writes ('step,loss,train_token_accuracy"},
             {crlf, "seconds\\r'"},  // the first line shown, its \r escaped
             {good.substr(0, good.size() - 1), "its last line does not end with a newline"}}) {
        INFO(problem);
        write_text(file, text);
        record_checksum(file);
        refused_by_every_command({"metrics.csv", problem});
    }
    planted(first_row);  // as written: drawn, and resumable
    require_ok(run({"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"}));
    CHECK(read_text(tmp / "report.html").find("id=\"charts-error\"") == std::string::npos);
    require_ok(run({"train", "--resume", dir, "--steps", "6", "--quiet"}));
}

TEST_CASE("a run whose attention snapshots were removed with their files entry is refused, not restarted") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    train(dir, {"--task", "reverse", "--steps", "4", "--snapshot-every", "2"});
    fs::remove(dir / "attention_snapshots.safetensors");
    json config = read_config(dir);
    config["files"].erase("attention_snapshots.safetensors");
    config["config_fnv1a64"] = "unchecked";
    write_text(dir / "config.json", config.dump(2));
    const std::vector<std::string> names = {"config.json", "train.snapshot_every",
                                            "attention_snapshots.safetensors"};
    check_refused(run({"eval", "--run", dir}), names);
    check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", tmp / "x.json"}), names);
    check_refused(run({"train", "--resume", dir, "--steps", "6", "--quiet"}), names);
    CHECK_FALSE(fs::exists(dir / "attention_snapshots.safetensors"));
    // Without snapshots (as the message suggests) the run loads and resumes.
    config["train"]["snapshot_every"] = 0;
    write_text(dir / "config.json", config.dump(2));
    require_ok(run({"eval", "--run", dir}));
    require_ok(run({"train", "--resume", dir, "--steps", "6", "--quiet"}));
}

TEST_CASE("a model edited to finite weights that overflow is refused naming model.safetensors") {
    TempDir tmp;
    const fs::path dir = tmp / "run", path = dir / "model.safetensors";
    small_run(dir);
    const auto good = attograd::load_safetensors(path);
    const auto plant = [&](float value) {
        auto state = good;
        for (auto& [name, tensor] : state) {
            tensor = attograd::clone(tensor);  // the copy of the map shares good's storage
            float* data = tensor.data<float>();
            std::fill(data, data + tensor.numel(), value);
        }
        attograd::save_safetensors(path, state);
        record_checksum(path);
    };
    plant(3e38f);  // each weight finite, every logit NaN or infinite
    const std::vector<std::string> names = {"model.safetensors", "NaN or infinite logits"};
    check_refused(run({"eval", "--run", dir}), names);
    check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", tmp / "x.json"}), names);
    check_refused(run({"train", "--resume", dir, "--steps", "4", "--quiet"}), names);
    CHECK_FALSE(fs::exists(tmp / "x.json"));
    // Large but finite outputs are a model, and the last snapshot is named as not from its save.
    plant(1e5f);
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "4", "--quiet"}})
        check_refused(run(command),
                      {"attention_snapshots.safetensors", "model.safetensors are not from one save"});
    attograd::save_safetensors(path, good);
    record_checksum(path);
    require_ok(run({"train", "--resume", dir, "--steps", "4", "--quiet"}));
}

TEST_CASE("a resume never saves progress.seconds that a run may not record") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    small_run(dir);
    const auto set_seconds = [&](double seconds) {
        edit_config(dir, [&](json& c) { c["progress"]["seconds"] = seconds; });
    };
    set_seconds(1.5e9);  // readable, but a resume could pass 2e9
    require_ok(run({"eval", "--run", dir}));
    check_refused(run({"train", "--resume", dir, "--steps", "4", "--quiet"}),
                  {"config.json", "progress.seconds 1500000000 is past 1e+09, the most a run resumes from"});
    set_seconds(2.5e9);
    check_refused(run({"eval", "--run", dir}), {"progress.seconds must be finite and in [0, 2e+09]"});
    set_seconds(1e9);
    require_ok(run({"train", "--resume", dir, "--steps", "4", "--quiet"}));
    require_ok(run({"eval", "--run", dir}));
}

TEST_CASE("a bundled task's run holding the fields of a --data or translate run is refused naming them") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    small_run(dir);
    const std::string saved = read_text(dir / "config.json");
    for (const auto& [field, value, names] :
         {std::tuple{"data", json("x.tsv"), std::vector<std::string>{"task.data 'x.tsv'", "--data run"}},
          {"chars", json(true), {"task.chars true", "--data run"}},
          {"lang", json("fr"), {"task.lang 'fr'", "translate run"}},
          {"min_freq", json(3), {"task.min_freq 3 and task.max_vocab 0", "translate run"}},
          {"max_vocab", json(100), {"task.min_freq 1 and task.max_vocab 100", "translate run"}}}) {
        json config = json::parse(saved);
        config["task"][field] = value;
        write_config(dir, config);
        check_refused(run({"eval", "--run", dir}), names);
        check_refused(run({"train", "--resume", dir, "--steps", "4", "--quiet"}), names);
    }
    write_text(dir / "config.json", saved);
    require_ok(run({"eval", "--run", dir}));
}

TEST_CASE("the records a check rests on cannot be left out: progress, its seed and its probes' records") {
    TempDir tmp;
    small_run(tmp / "run");
    const std::string saved = read_text(fs::path(tmp / "run") / "config.json");
    const auto check = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        every_reader_refuses(tmp, saved, edit, names);
    };
    // Each with a model setting edited that the record would have caught.
    for (const char* field : {"probe_predictions", "probe_losses", "seed"}) {
        INFO(field);
        check(
            [&](json& c) {
                c["progress"].erase(field);
                c["model"]["uniform_attention"] = 0;
                c["train"]["seed"] = 12345;
            },
            {"config.json: missing field 'progress." + std::string(field) + "'"});
        check([&](json& c) { c["progress"][field] = nullptr; },
              {"config.json: missing field 'progress." + std::string(field) + "'"});
    }
    check([](json& c) { c.erase("progress"); }, {"config.json: missing field 'progress'"});
    check([](json& c) { c["progress"]["gemm_library"] = "MKL"; },
          {"field 'progress.gemm_library' must be \"LIBXSMM\" or \"Eigen\", got 'MKL'"});
    check([](json& c) { c["progress"]["cpu"] = ""; }, {"field 'progress.cpu' must be a CPU's name"});
    // Decoded predictions hold no special token.
    check([](json& c) { c["progress"]["probe_predictions"][0].push_back("<eos>"); },
          {"'progress.probe_predictions' must be a list of token lists (decoded"});
    // A bundled task's vocabulary is its symbols in their order: another order keeps every shape.
    check([](json& c) { std::swap(c["vocab"][4], c["vocab"][5]); },
          {"config.json: vocab is not what train builds for task.name 'reverse'"});
    check([](json& c) { c["progress"]["probe_losses"][0] = -1.0; },
          {"'progress.probe_losses' must be a list of finite numbers >= 0"});
    // The loss the saved model has on the first held-out examples, recorded at each save.
    check(
        [](json& c) {
            c["progress"]["probe_losses"][1] = c["progress"]["probe_losses"][1].get<double>() + 0.01;
        },
        {"config.json: the model as config.json describes it has loss", "on held-out example 1",
         "(progress.probe_losses)"});
    // Counters a resume carries on from: nothing in the window means no sums; steps mean a first loss.
    check([](json& c) { c["progress"]["window_loss_sum"] = 5.0; }, {"progress.window_loss_sum must be 0"});
    check([](json& c) { c["progress"]["initial_loss"] = 0.0; },
          {"progress.initial_loss must be > 0 (the first step's loss) after progress.steps_done = 2 steps"});
    check([](json& c) { c["progress"].erase("snapshot_period"); },
          {"config.json: missing field 'progress.snapshot_period'"});
}

TEST_CASE("model settings edited to ones that keep every weight's shape are refused without snapshots") {
    // With no snapshot of the saved model to compare, the probes' recorded predictions and losses
    // tell: hard attention and another score predict alike here but not with the same loss.
    TempDir tmp;
    const fs::path dir = tmp / "run";
    train(dir, {"--task", "reverse", "--steps", "30", "--snapshot-every", "0"});
    const std::string saved = read_text(dir / "config.json");
    const auto check = [&](const std::function<void(json&)>& edit) {
        write_text(dir / "config.json", saved);
        edit_config(dir, edit);
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir},
                 {"inspect", "--run", dir, "--format", "html", "--to", tmp / "report.html"},
                 {"train", "--resume", dir, "--steps", "40", "--quiet"}}) {
            INFO(command[0]);
            check_refused(run(command), {"config.json: the model as config.json describes it"});
        }
        CHECK_FALSE(fs::exists(tmp / "report.html"));
    };
    check([](json& c) { c["model"]["attention"] = "hard"; });
    check([](json& c) { c["model"]["score"] = "dot"; });
    check([](json& c) { c["model"]["uniform_attention"] = 0; });
    write_text(dir / "config.json", saved);
    require_ok(run({"eval", "--run", dir}));
}

TEST_CASE("a --data run's heldout.tsv removed with its files entry is refused by --resume as by eval") {
    TempDir tmp;
    const fs::path data = tmp / "pairs.tsv", dir = tmp / "run";
    write_small_pairs(data);
    train(dir, {"--data", data, "--steps", "4"});
    fs::remove(dir / "heldout.tsv");
    edit_config(dir, [](json& c) { c["files"].erase("heldout.tsv"); });
    check_refused(run({"eval", "--run", dir}), {"heldout.tsv: cannot open"});
    check_refused(run({"train", "--resume", dir, "--steps", "6", "--quiet"}), {"heldout.tsv: cannot open"});
    CHECK_FALSE(fs::exists(dir / "heldout.tsv"));
}

TEST_CASE("a run file larger than config.json records is refused by its size, before it is read") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    small_run(dir);
    // 8 GiB, sparse: reading it would be refused past 4 GiB, with another message.
    fs::resize_file(dir / "metrics.csv", std::uint64_t{8} << 30);
    check_refused(run({"eval", "--run", dir}),
                  {"metrics.csv: holds 8589934592 bytes but config.json records"});
}

TEST_CASE("a model tensor in another dtype than train writes is refused, not converted") {
    TempDir tmp;
    const fs::path dir = tmp / "run", path = dir / "model.safetensors";
    small_run(dir);
    auto state = attograd::load_safetensors(path);
    const std::string name = state.begin()->first;
    state[name] = attograd::to_dtype(state[name], attograd::DType::Float64);
    attograd::save_safetensors(path, state);
    record_checksum(path);
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "4", "--quiet"}})
        check_refused(run(command), {"model.safetensors: tensor '" + name +
                                     "' is float64, but train writes it as float32 (the dtype of the "
                                     "model's tensor)"});
}

TEST_CASE("a loss sum and a finished evaluation a run interrupted between two rows cannot hold are refused") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "11");  // one step past the row of step 10
        CHECK(run({"train", "--task", "reverse", "--steps", "40", "--eval-every", "100", "--out",
                   dir.string(), "--quiet"})
                  .code == 130);
    }
    const std::string saved = read_text(dir / "config.json");
    REQUIRE(json::parse(saved)["progress"]["window_steps"] == 1);
    const auto refused = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names) {
        write_text(dir / "config.json", saved);
        edit_config(dir, edit);
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir},
                 {"inspect", "--run", dir, "--format", "json", "--to", tmp / "out.json"},
                 {"train", "--resume", dir, "--quiet"}}) {
            INFO(command[0]);
            check_refused(run(command), names);
        }
    };
    // A loss sum past what finite float32 losses add up to.
    refused([](json& c) { c["progress"]["window_loss_sum"] = 1e300; },
            {"progress.window_loss_sum must be in [0, progress.window_steps = 1 x 3.40282e+38]"});
    // Step 11 made a step the run evaluates at: its evaluation would be owed, not done.
    refused([](json& c) { c["train"]["eval_every"] = 11; },
            {"progress.evaluation_pending is false, but step 11 is one the run evaluates at"});
    write_text(dir / "config.json", saved);
    require_ok(run({"train", "--resume", dir, "--quiet"}));
}

TEST_CASE("a target reached needs the evaluation that reached it in metrics.csv") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "11");  // before any held-out evaluation
        CHECK(run({"train", "--task", "reverse", "--steps", "40", "--eval-every", "100", "--out",
                   dir.string(), "--quiet"})
                  .code == 130);
    }
    edit_config(dir, [](json& c) {
        c["progress"]["reached_target"] = true;
        c["progress"]["heldout_sequence_accuracy"] = 0.995;
        c["progress"]["heldout_token_accuracy"] = 0.999;
    });
    for (const auto& command :
         std::vector<std::vector<std::string>>{{"eval", "--run", dir}, {"train", "--resume", dir, "--quiet"}})
        check_refused(run(command),
                      {"progress.reached_target is true, but metrics.csv holds no held-out evaluation"});
    // Unreadable for another reason: that reason is given.
    const json saved = read_config(dir);
    edit_config(dir, [](json& c) { c["progress"]["seconds"] = 0.0; });
    check_refused(run({"eval", "--run", dir}),
                  {"metrics.csv line 2: seconds", "is past the run's 0 seconds"});
    edit_config(dir, [&](json& c) { c["progress"]["seconds"] = saved["progress"]["seconds"]; });
    // Cut to its header (the window then all the steps), or gone with its files entry.
    const std::string metrics = read_text(dir / "metrics.csv");
    write_text(dir / "metrics.csv", metrics.substr(0, metrics.find('\n') + 1));
    record_checksum(dir / "metrics.csv");
    edit_config(dir, [](json& c) { c["progress"]["window_steps"] = c["progress"]["steps_done"]; });
    check_refused(run({"eval", "--run", dir}),
                  {"progress.reached_target is true, but metrics.csv holds no held-out evaluation"});
    fs::remove(dir / "metrics.csv");
    edit_config(dir, [](json& c) { c["files"].erase("metrics.csv"); });
    check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", tmp / "r.json"}),
                  {"metrics.csv: missing (train writes it at every save"});
}

TEST_CASE(
    "optimizer.safetensors holds only the optimizer's and the schedule's state, for every updated "
    "parameter") {
    TempDir tmp;
    const fs::path dir = tmp / "run", path = dir / "optimizer.safetensors";
    small_run(dir);
    const auto good = attograd::load_safetensors(path);
    const auto refused = [&](const std::map<std::string, attograd::Tensor>& state,
                             const std::string& message) {
        attograd::save_safetensors(path, state);
        record_checksum(path);
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "4", "--quiet"}})
            check_refused(run(command), {"optimizer.safetensors", message});
    };
    auto extra = good;
    extra.emplace("extra.weight", attograd::tensor({1.0f}, {1}));
    refused(extra, "holds 'extra.weight', which train does not write");
    // Adam keeps moments for every parameter it updated: one's removed would start again.
    auto removed = good;
    std::erase_if(removed, [](const auto& entry) { return entry.first.starts_with("optimizer.state.3."); });
    REQUIRE(removed.size() + 3 == good.size());
    refused(removed, "has no state for parameter 3, which the run has changed since it was made");
    auto none = good;
    std::erase_if(none, [](const auto& entry) { return entry.first.starts_with("optimizer.state."); });
    refused(none, "has no state for parameter 0, which the run has changed since it was made");
}

TEST_CASE("a --data run's vocabulary must be the one train builds: from the data file, or in byte order") {
    TempDir tmp;
    const fs::path data = tmp / "pairs.tsv", moved = tmp / "moved.tsv";
    write_small_pairs(data);
    for (const char* vocab : {"shared", "separate"}) {
        INFO(vocab);
        const fs::path dir = tmp / vocab;
        train(dir, {"--data", data, "--vocab", vocab, "--steps", "4"});
        const std::string field = std::string(vocab) == "shared" ? "vocab" : "target_vocab";
        const std::string saved = read_text(dir / "config.json");
        const auto tokens = read_config(dir)[field].get<std::vector<std::string>>();
        CHECK(std::is_sorted(tokens.begin() + 4, tokens.end()));  // after <pad> <bos> <eos> <unk>
        // Two tokens swapped keep every weight's shape but read their rows as each other.
        const auto swap = [&](json& c) { std::swap(c[field][4], c[field][5]); };
        edit_config(dir, swap);
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "6", "--quiet"}})
            check_refused(run(command), {"config.json: " +
                                         std::string(field == "vocab" ? "vocab" : "vocab or target_vocab") +
                                         " is not what train builds from"});
        fs::rename(data, moved);  // without the data file: the order still tells
        check_refused(run({"eval", "--run", dir}),
                      {"config.json: " + field +
                       " has 'b' before 'a', but train builds a --data run's vocabulary "
                       "in byte order"});
        check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", tmp / "r.json"}),
                      {"has 'b' before 'a'"});
        CHECK_FALSE(fs::exists(tmp / "r.json"));
        fs::rename(moved, data);
        write_text(dir / "config.json", saved);
        require_ok(run({"eval", "--run", dir}));
        require_ok(run({"train", "--resume", dir, "--steps", "6", "--quiet"}));
    }
}

TEST_CASE("train.optim adam and adamw are told apart by their saved state") {
    TempDir tmp;
    for (const auto& [trained, relabelled] : {std::pair{"adam", "adamw"}, std::pair{"adamw", "adam"}}) {
        const fs::path dir = tmp / trained;
        train(dir, {"--task", "reverse", "--steps", "2", "--optim", trained, "--weight-decay", "0.01"});
        edit_config(dir, [&](json& c) { c["train"]["optim"] = relabelled; });
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "4", "--quiet"}})
            check_refused(run(command), {"optimizer.safetensors", "decoupled_weight_decay"});
    }
}

TEST_CASE("progress.reached_target and high_loss_steps must be what training's rules leave") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    small_run(dir);
    const std::string saved = read_text(dir / "config.json");
    // An evaluation at the target sets the flag; a false one would let a resume train on.
    edit_config(dir, [](json& c) {
        c["progress"]["heldout_sequence_accuracy"] = 1.0;
        c["progress"]["reached_target"] = false;
    });
    check_refused(
        run({"eval", "--run", dir}),
        {"config.json: progress.reached_target is false, but progress.heldout_sequence_accuracy is 1, "
         "at or above the task's target 0.99"});
    // Training stops as diverged once 20 steps in a row had a high loss: no save holds 20.
    write_text(dir / "config.json", saved);
    edit_config(dir, [](json& c) {
        c["train"]["steps"] = 40;
        c["progress"]["steps_done"] = 30;
        c["progress"]["high_loss_steps"] = 20;
    });
    check_refused(run({"eval", "--run", dir}),
                  {"progress.high_loss_steps must be in [0, progress.steps_done = 30] "
                   "and below 20"});
    // The first step's loss, divergence's yardstick, is computed again from the seed.
    for (const double forged : {1e-30, 1e300, 3.0}) {
        INFO(forged);
        write_text(dir / "config.json", saved);
        edit_config(dir, [&](json& c) { c["progress"]["initial_loss"] = forged; });
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "4", "--quiet"}})
            check_refused(run(command),
                          {"config.json: progress.initial_loss is", "but the run's first step"});
    }
    write_text(dir / "config.json", saved);
    require_ok(run({"train", "--resume", dir, "--steps", "4", "--quiet"}));
}

TEST_CASE(
    "a --data run's first-step loss is computed again by eval and inspect while its data file is there") {
    TempDir tmp;
    const fs::path data = tmp / "pairs.tsv", dir = tmp / "run";
    write_small_pairs(data);
    train(dir, {"--data", data, "--steps", "4", "--batch", "4"});
    // train.batch acts only in training: a batch of 8 gives the first step another loss.
    edit_config(dir, [](json& c) { c["train"]["batch"] = 8; });
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir},
             {"inspect", "--run", dir, "--format", "json", "--to", tmp / "out.json"},
             {"train", "--resume", dir, "--steps", "6", "--quiet"}}) {
        INFO(command[0]);
        check_refused(run(command), {"config.json: progress.initial_loss is", "but the run's first step"});
    }
    CHECK_FALSE(fs::exists(tmp / "out.json"));
    // Without its data file only the held-out examples are at hand: eval reads the setting as the run's.
    fs::rename(data, tmp / "elsewhere.tsv");
    require_ok(run({"eval", "--run", dir}));
}

TEST_CASE(
    "a --data or translate run's recorded data checksum cannot be blanked, nor a bundled task given one") {
    TempDir tmp;
    const fs::path data = tmp / "pairs.tsv", dir = tmp / "run", bundled = tmp / "bundled";
    write_small_pairs(data);
    train(dir, {"--data", data, "--steps", "4"});
    edit_config(dir, [](json& c) { c["task"]["data_fnv1a64"] = ""; });
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"eval", "--run", dir}, {"train", "--resume", dir, "--steps", "6", "--quiet"}})
        check_refused(run(command),
                      {"config.json: task.data_bytes", "are not what train writes for task.name 'data'"});
    small_run(bundled);
    edit_config(bundled, [](json& c) {
        c["task"]["data_fnv1a64"] = "0123456789abcdef";
        c["task"]["data_bytes"] = 10;
    });
    check_refused(run({"eval", "--run", bundled}), {"are not what train writes for task.name 'reverse'"});
}

TEST_CASE("a metrics.csv with another first line is refused once, showing that line") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    small_run(dir);
    edit_config(dir, [](json& c) {
        c["progress"]["reached_target"] = true;
        c["progress"]["heldout_sequence_accuracy"] = 1.0;
    });
    write_text(dir / "metrics.csv", "\xEF\xBB\xBF" + read_text(dir / "metrics.csv"));  // a BOM
    record_checksum(dir / "metrics.csv");
    const Outcome outcome = run({"eval", "--run", dir});
    check_refused(outcome, {"does not start with the header train writes ('step,", "its first line is"});
    CHECK(outcome.err.find("progress.reached_target") == outcome.err.rfind("progress.reached_target"));
}

TEST_CASE("a setting the run's model has no use for must hold what train writes for it") {
    TempDir tmp;
    const fs::path lm = tmp / "lm", seq = tmp / "seq";
    train(lm, {"--task", "induction", "--steps", "2"});
    train(seq, {"--task", "reverse", "--steps", "2"});
    const auto refused = [&](const fs::path& dir, const std::function<void(json&)>& edit,
                             const std::string& message) {
        const std::string saved = read_text(dir / "config.json");
        edit_config(dir, edit);
        for (const auto& command : std::vector<std::vector<std::string>>{
                 {"eval", "--run", dir},
                 {"inspect", "--run", dir, "--format", "html", "--to", tmp / "r.html"},
                 {"train", "--resume", dir, "--steps", "4", "--quiet"}})
            check_refused(run(command), {message});
        CHECK_FALSE(fs::exists(tmp / "r.html"));
        write_text(dir / "config.json", saved);
    };
    // The language model's attention is causal scaled dot-product: no window, score or cell.
    refused(
        lm, [](json& c) { c["model"]["window"] = 4096; },
        "config.json: model.window is 4096, but this run's model has no use for it (--model lm): train "
        "writes -1");
    refused(
        lm, [](json& c) { c["model"]["score"] = "additive"; }, "model.score is \"additive\"");
    refused(
        lm, [](json& c) { c["model"]["cell"] = "lstm"; }, "model.cell is \"lstm\"");
    refused(
        seq, [](json& c) { c["model"]["estimator"] = "reinforce"; }, "(--model seq2seq, soft attention)");
    refused(
        seq, [](json& c) { c["model"]["local"] = "p"; }, "(--model seq2seq, global attention)");
    require_ok(run({"eval", "--run", lm}));
    require_ok(run({"eval", "--run", seq}));
}
