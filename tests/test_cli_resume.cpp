// Resumed runs: every piece of training state (the REINFORCE baseline, the snapshot schedule,
// the checkpoint period) survives an interruption, a step-0 run resumes, and schedule state no
// run could have written is refused.
#include "cli_helpers.hpp"

#include "core/ops.hpp"
#include "core/serialization.hpp"

#include <doctest/doctest.h>

#include <csignal>

namespace {

using namespace cli_test;

/// Rewrites one entry of `dir`/optimizer.safetensors (0-d int64 or float64) and its checksum.
void plant(const std::string& dir, const std::string& name, double value) {
    const fs::path path = fs::path(dir) / "optimizer.safetensors";
    auto state = attograd::load_safetensors(path);
    REQUIRE_MESSAGE(state.contains(name), name);
    attograd::Tensor& t = state.at(name);
    t = attograd::clone(t);
    if (t.dtype() == attograd::DType::Int64) t.data<std::int64_t>()[0] = static_cast<std::int64_t>(value);
    if (t.dtype() == attograd::DType::Float64) t.data<double>()[0] = value;
    attograd::save_safetensors(path, state);
    record_checksum(path);
}

}  // namespace

TEST_CASE("hard attention trained by REINFORCE resumes bit for bit (its baseline is in the checkpoint)") {
    TempDir tmp;
    const std::vector<std::string> args = {
        "--task",       "copy", "--attention",      "hard", "--estimator",    "reinforce", "--batch", "8",
        "--eval-every", "100",  "--snapshot-every", "0",    "--no-early-stop"};
    require_ok(train_run(args, "40", tmp / "whole"));
    interrupted_run(args, "40", tmp / "split", "15");
    CHECK(file_bytes(tmp / "split", "model.safetensors") == file_bytes(tmp / "whole", "model.safetensors"));
    CHECK(file_bytes(tmp / "split", "optimizer.safetensors") ==
          file_bytes(tmp / "whole", "optimizer.safetensors"));
    CHECK(metrics_without_seconds(tmp / "split") == metrics_without_seconds(tmp / "whole"));
    // The baseline is a buffer of each hard attention layer, as PyTorch keeps running statistics.
    const auto weights = attograd::load_safetensors(fs::path(tmp / "whole") / "model.safetensors");
    const auto baseline = std::find_if(weights.begin(), weights.end(), [](const auto& entry) {
        return entry.first.ends_with(".reward_baseline");
    });
    REQUIRE(baseline != weights.end());
    CHECK(baseline->second.item() < 0.0);  // minus a summed loss
}

TEST_CASE("a resumed run keeps the snapshot schedule the 32-snapshot cap had reached") {
    TempDir tmp;
    // Snapshots every step: the cap doubles the period at steps 32 and 64.
    const std::vector<std::string> args = {"--task",         "reverse", "--batch",          "8",
                                           "--eval-every",   "100",     "--snapshot-every", "1",
                                           "--no-early-stop"};
    require_ok(train_run(args, "80", tmp / "whole"));
    const std::string whole = file_bytes(tmp / "whole", "attention_snapshots.safetensors");
    for (const std::string at : {"20", "45", "66", "70"}) {
        CAPTURE(at);
        const std::string dir = tmp / ("split" + at);
        interrupted_run(args, "80", dir, at);
        CHECK(file_bytes(dir, "attention_snapshots.safetensors") == whole);
        CHECK(read_config(dir)["progress"]["snapshot_period"] ==
              read_config(tmp / "whole")["progress"]["snapshot_period"]);
    }
    CHECK(read_config(tmp / "whole")["progress"]["snapshot_period"] == 4);
}

TEST_CASE("a run of --steps 0 resumes, and gives the run that trained from the start") {
    TempDir tmp;
    const std::vector<std::string> args = {
        "--task", "reverse", "--batch", "8", "--eval-every", "100", "--warmup", "2", "--snapshot-every", "0"};
    require_ok(train_run(args, "6", tmp / "whole"));
    require_ok(train_run(args, "0", tmp / "split"));
    require_ok(run({"train", "--resume", tmp / "split", "--steps", "6", "--quiet"}));
    CHECK(file_bytes(tmp / "split", "model.safetensors") == file_bytes(tmp / "whole", "model.safetensors"));
    CHECK(file_bytes(tmp / "split", "optimizer.safetensors") ==
          file_bytes(tmp / "whole", "optimizer.safetensors"));
    CHECK(metrics_without_seconds(tmp / "split") == metrics_without_seconds(tmp / "whole"));
}

TEST_CASE("schedule state no run could have written is refused on --resume, naming the field") {
    TempDir tmp;
    const std::vector<std::string> args = {"--task", "reverse", "--batch", "8", "--snapshot-every", "0"};
    require_ok(train_run(args, "3", tmp / "run"));
    const std::string good = file_bytes(tmp / "run", "optimizer.safetensors");
    const auto restore = [&] {
        write_text(fs::path(tmp / "run") / "optimizer.safetensors", good);
        record_checksum(fs::path(tmp / "run") / "optimizer.safetensors");
    };
    plant(tmp / "run", "schedule.last_epoch", 1e12);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "5"}),
                  {"optimizer.safetensors", "schedule.last_epoch", "progress.steps_done"});
    plant(tmp / "run", "schedule.last_epoch", 2);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "5"}), {"schedule.last_epoch"});
    restore();
    plant(tmp / "run", "optimizer.initial_lr", 0.5);
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "5"}),
                  {"optimizer.safetensors", "optimizer.initial_lr", "0.5", "train.lr"});
    restore();
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "5", "--quiet"}));
}

TEST_CASE("--checkpoint-every is saved in config.json and kept by --resume unless given again") {
    TempDir tmp;
    const std::vector<std::string> args = {"--task",
                                           "reverse",
                                           "--batch",
                                           "8",
                                           "--snapshot-every",
                                           "0",
                                           "--eval-every",
                                           "100",
                                           "--checkpoint-every",
                                           "7"};
    require_ok(train_run(args, "3", tmp / "run"));
    CHECK(read_config(tmp / "run")["train"]["checkpoint_every"] == 7);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "5", "--quiet"}));
    CHECK(read_config(tmp / "run")["train"]["checkpoint_every"] == 7);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "7", "--checkpoint-every", "2", "--quiet"}));
    CHECK(read_config(tmp / "run")["train"]["checkpoint_every"] == 2);
    // A resumed run checkpoints with the saved period: killed while writing its second save
    // (points 1-5 are one save), a run resumed at step 7 with period 2 holds step 8.
    const ChildEnd end = run_child({"train", "--resume", tmp / "run", "--steps", "20", "--quiet"},
                                   {"ATTOGRAD_TEST_KILL_AT=6"});
    REQUIRE(end.signal == SIGKILL);
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == 8);
    json config = read_config(tmp / "run");
    config["train"]["checkpoint_every"] = -1;
    write_config(tmp / "run", config);  // resealed: the refusal must come from the field, not the checksum
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "30"}),
                  {"config.json", "train.checkpoint_every"});
}

TEST_CASE("a run saved with its held-out evaluation pending resumes at its own --steps, and says so below") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    train(dir, {"--task", "reverse", "--steps", "4", "--eval-every", "100"});
    // As after a signal during the evaluation at step 4: its metrics row (the file's only one)
    // is still to come, and the 4 steps are the window.
    const std::string metrics = read_text(dir / "metrics.csv");
    REQUIRE(std::count(metrics.begin(), metrics.end(), '\n') == 2);
    write_text(dir / "metrics.csv", metrics.substr(0, metrics.find('\n') + 1));
    record_checksum(dir / "metrics.csv");
    edit_config(dir, [](json& c) {
        c["progress"]["evaluation_pending"] = true;
        c["progress"]["window_steps"] = 4;
        c["progress"]["window_loss_sum"] = 12.0;
        c["progress"]["window_accuracy_sum"] = 0.5;
    });
    check_refused(run({"train", "--resume", dir, "--steps", "3", "--quiet"}),
                  {"has done 4 steps already", "--steps N with N >= 4"});
    require_ok(run({"train", "--resume", dir, "--steps", "4", "--quiet"}));
    CHECK(read_config(dir)["progress"]["evaluation_pending"] == false);
    CHECK(read_config(dir)["progress"]["steps_done"] == 4);
}

TEST_CASE("SIGHUP (a closed terminal) during training saves the run, exits 129, and the run resumes") {
    TempDir tmp;
    std::vector<std::string> args = train_args(tmp / "run", "6");
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "3:HUP");
        const Outcome first = run(args);
        INFO(first.err);
        CHECK(first.code == 129);
        CHECK(first.err.find("SIGHUP at step 3") != std::string::npos);
    }
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == 3);
    require_ok(run({"train", "--resume", tmp / "run", "--quiet"}));
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == 6);
}

TEST_CASE("a run records its seed: a resume under another seed is refused as itself, not as divergence") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    require_ok(run(train_args(dir, "2")));  // --seed 3
    CHECK(read_config(dir)["progress"]["seed"] == 3);
    edit_config(dir, [](json& config) { config["train"]["seed"] = 4; });  // a hand-edited seed
    const Outcome o = run({"train", "--resume", dir, "--steps", "4", "--quiet"});
    check_refused(o, {"config.json", "train.seed 4 differs from progress.seed 3"});
    CHECK(o.err.find("diverged") == std::string::npos);  // only a divergence reads so
    CHECK(read_config(dir)["progress"]["steps_done"] == 2);
}

TEST_CASE("a signal while train sets up ends it once set up: nothing written, no lock or folder left") {
    TempDir tmp;
    const fs::path out = fs::path(tmp / "new") / "folder" / "run";
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "-1:TERM");
        const Outcome fresh = run(train_args(out.string(), "4"));
        CHECK(fresh.code == 143);
        CHECK(fresh.err == "attograd: SIGTERM before training started: nothing was written\n");
    }
    CHECK_FALSE(fs::exists(tmp / "new"));  // the folders made for the lock went with it
    require_ok(run(train_args(out.string(), "2")));
    const std::string model = read_text(out / "model.safetensors"), config = read_text(out / "config.json");
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "-1");
        const Outcome resumed = run({"train", "--resume", out.string(), "--steps", "4", "--quiet"});
        CHECK(resumed.code == 130);
        CHECK(resumed.err == "attograd: SIGINT before training started: nothing was written\n");
    }
    CHECK(read_text(out / "model.safetensors") == model);
    CHECK(read_text(out / "config.json") == config);
    CHECK(entries(out.parent_path()) == std::set<std::string>{"run"});  // no lock file left
}

TEST_CASE("a signal ignored when train starts (nohup) stays ignored: training goes on") {
    TempDir tmp;
    struct sigaction ignore {};
    struct sigaction previous {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    REQUIRE(::sigaction(SIGHUP, &ignore, &previous) == 0);  // inherited by the child, as nohup does
    Outcome o;
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", "2:HUP");
        o = run(train_args(tmp / "run", "4"));
    }
    ::sigaction(SIGHUP, &previous, nullptr);
    require_ok(o);
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == 4);
}

TEST_CASE("a resume on other kernels than the run's last save says its steps may differ in their last bits") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    require_ok(run(train_args(dir, "2")));
    const json progress = read_config(dir)["progress"];
    CHECK_FALSE(progress["gemm_library"].get<std::string>().empty());
    CHECK_FALSE(progress["cpu"].get<std::string>().empty());
    const Outcome same = run({"train", "--resume", dir, "--steps", "3", "--quiet"});
    require_ok(same);
    CHECK(same.err.find("warning") == std::string::npos);
    edit_config(dir, [](json& c) { c["progress"]["cpu"] = "Another CPU\x1b[31m"; });
    const Outcome other = run({"train", "--resume", dir, "--steps", "4", "--quiet"});
    require_ok(other);
    CHECK(other.err.find("attograd: warning: the run trained on " +
                         progress["gemm_library"].get<std::string>() +
                         " on 'Another CPU\\x1b[31m', and this resume runs on") != std::string::npos);
    CHECK(other.err.find("may differ in their last bits") != std::string::npos);
    CHECK(read_config(dir)["progress"]["cpu"] == progress["cpu"]);  // the save records this process's
    edit_config(dir, [](json& c) { c["progress"].erase("cpu"); });
    check_refused(run({"eval", "--run", dir}), {"missing field 'progress.cpu'"});
}
