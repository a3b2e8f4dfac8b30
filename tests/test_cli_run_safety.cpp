// Runs that survive: a run directory killed at any instant of its writing is the old complete
// run or the new one, Ctrl-C / SIGTERM save a resumable checkpoint, a resumed run equals an
// uninterrupted one byte for byte, and --out never replaces a run without --force.
#include "cli_helpers.hpp"
#include "core/atomic_file.hpp"
#include "train/run_dir.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace {

using namespace cli_test;

/// The bytes that must match between a resumed and an uninterrupted run.
struct RunBytes {
    std::string model, optimizer, metrics;
    bool operator==(const RunBytes&) const = default;
};

RunBytes run_bytes(const std::string& dir) {
    return {read_text(fs::path(dir) / "model.safetensors"),
            read_text(fs::path(dir) / "optimizer.safetensors"), metrics_without_seconds(dir)};
}

std::int64_t steps_done(const std::string& dir) { return read_config(dir)["progress"]["steps_done"]; }

/// No staging directory of a writer is left beside the run.
void check_no_staging(const fs::path& parent) {
    for (const auto& name : entries(parent)) CHECK_MESSAGE(name.find(".staging-") == std::string::npos, name);
}

/// One generation of run `dir` as a reader sees it (train::read_consistently): config.json with
/// its checksums and every listed file's verified (train::open_run), and the model's weights
/// (train::load_checkpoint). Throws IoError as they do.
json read_run(const fs::path& dir) {
    return attograd::train::read_consistently(dir, [&] {
        json config = attograd::train::open_run(dir);
        attograd::train::load_checkpoint(dir / "model.safetensors");
        return config;
    });
}

/// The run in `dir` is complete: its files check out (read_run) and the program opens it.
void check_complete(const std::string& dir) {
    CHECK_NOTHROW(read_run(dir));
    const Outcome opened = run({"eval", "--run", dir, "--show", "0"});
    INFO(opened.command, "\nstderr: ", opened.err);
    CHECK(opened.code == 0);
}

/// Copies the run `base` to `dir` and resumes it to 3 steps, killed at write point `k`: whether
/// it was (false: `k` is past the last point, and the resume finished).
bool resume_killed_at(const fs::path& base, const fs::path& dir, int k) {
    fs::copy(base, dir, fs::copy_options::recursive);
    const ChildEnd end = run_child({"train", "--resume", dir.string(), "--steps", "3", "--quiet"},
                                   {fmt::format("ATTOGRAD_TEST_KILL_AT={}", k)});
    if (end.code == 0) return false;
    REQUIRE(end.signal == SIGKILL);
    return true;
}

}  // namespace

TEST_CASE(
    "train --out refuses a directory holding a run and names --force, which replaces the run and keeps other "
    "files") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    const RunBytes first = run_bytes(tmp / "run");
    write_text(tmp / "run/notes.txt", "mine\n");
    auto again = train_args(tmp / "run", "4");
    check_refused(run(again), {"--force", "--resume", "run"});
    CHECK(run_bytes(tmp / "run") == first);
    again.push_back("--force");
    require_ok(run(again));
    CHECK(steps_done(tmp / "run") == 4);
    CHECK(read_text(tmp / "run/notes.txt") == "mine\n");
    CHECK(entries(tmp / "run") == std::set<std::string>{"attention_snapshots.safetensors", "config.json",
                                                        "metrics.csv", "model.safetensors", "notes.txt",
                                                        "optimizer.safetensors"});
    check_no_staging(tmp.path());
}

TEST_CASE(
    "a run killed at every instant of its writing is the old complete run or a new one, and resumes to the "
    "uninterrupted bytes") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "base", "2")));
    const std::vector<std::string> resume = {"--steps", "4", "--checkpoint-every", "1", "--quiet"};
    const auto resume_args = [&](const std::string& dir) {
        std::vector<std::string> args = {"train", "--resume", dir};
        args.insert(args.end(), resume.begin(), resume.end());
        return args;
    };
    fs::copy(tmp / "base", tmp / "whole");
    require_ok(run(resume_args(tmp / "whole")));
    const RunBytes whole = run_bytes(tmp / "whole");

    // Each write of a file, each rename and each removal is a point where the kill can land.
    int killed = 0;
    for (int k = 1; k < 100; ++k) {
        const std::string dir = tmp / fmt::format("run{}", k);
        fs::copy(tmp / "base", dir);
        const ChildEnd end = run_child(resume_args(dir), {fmt::format("ATTOGRAD_TEST_KILL_AT={}", k)});
        INFO("killed at point ", k);
        if (end.code == 0) break;  // k is past the last point: the run finished
        REQUIRE(end.signal == SIGKILL);
        ++killed;
        // The directory is a complete run at some step: it opens, its files check out.
        check_complete(dir);
        const std::int64_t done = steps_done(dir);
        CHECK((done >= 2 && done <= 4));
        // Resuming finishes it exactly as the uninterrupted run, and removes the staging
        // directory the killed writer left.
        if (done < 4) {
            require_ok(run(resume_args(dir)));
            check_no_staging(tmp.path());
        }
        CHECK(run_bytes(dir) == whole);
    }
    CHECK(killed >= 12);  // 2 checkpoints x (2 tensor files, metrics, config.json, swap, removal)
}

TEST_CASE("a fresh run killed at every instant leaves no directory or a complete run") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    int killed = 0;
    for (int k = 1; k < 100; ++k) {
        fs::remove_all(dir);  // what the last killed writer left beside it stays
        const ChildEnd end = run_child(train_args(dir, "2"), {fmt::format("ATTOGRAD_TEST_KILL_AT={}", k)});
        INFO("killed at point ", k);
        if (end.code == 0) break;
        REQUIRE(end.signal == SIGKILL);
        ++killed;
        if (fs::exists(dir)) check_complete(dir);
    }
    CHECK(killed >= 8);
    check_no_staging(tmp.path());  // each writer removed what the killed one before it left
}

TEST_CASE("--force replacing a run, killed at every instant, leaves the old run or the new one") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "old", "2")));
    const RunBytes old_bytes = run_bytes(tmp / "old");
    for (int k = 1; k < 100; ++k) {
        const std::string dir = tmp / fmt::format("run{}", k);
        fs::copy(tmp / "old", dir);
        auto args = train_args(dir, "1");
        args.push_back("--force");
        const ChildEnd end = run_child(args, {fmt::format("ATTOGRAD_TEST_KILL_AT={}", k)});
        INFO("killed at point ", k);
        if (end.code == 0) break;
        REQUIRE(end.signal == SIGKILL);
        check_complete(dir);
        const std::int64_t done = steps_done(dir);
        CHECK((done == 1 || done == 2));
        if (done == 2) CHECK(run_bytes(dir) == old_bytes);
    }
}

TEST_CASE(
    "Ctrl-C and SIGTERM finish the step, save a resumable run, say how to resume and exit 130 and 143") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "whole", "16")));
    const RunBytes whole = run_bytes(tmp / "whole");
    // Without --checkpoint-every, so the interrupt's own checkpoint is what is saved, inside a
    // metrics window (lines every 10 steps) or at its edge.
    for (const std::string at : {"1", "10", "13", "15:TERM"}) {
        INFO("signal at step ", at);
        const std::string dir = tmp / ("run" + at.substr(0, 2));
        auto args = train_args(dir, "16");
        args.erase(std::find(args.begin(), args.end(), "--checkpoint-every"),
                   std::find(args.begin(), args.end(), "--seed"));
        Outcome o;
        {
            ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", at);
            o = run(args);
        }
        const bool term = at.ends_with(":TERM");
        CHECK(o.code == (term ? 143 : 130));
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK(o.err.find(term ? "SIGTERM" : "SIGINT") != std::string::npos);
        CHECK(o.err.find("attograd train --resume " + dir) != std::string::npos);
        CHECK(steps_done(dir) == std::stoll(at));
        require_ok(run({"train", "--resume", dir, "--quiet"}));
        CHECK(run_bytes(dir) == whole);
    }
}

TEST_CASE(
    "a real SIGINT or SIGTERM from outside at an arbitrary moment, then --resume, gives the uninterrupted "
    "run") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "whole", "40")));
    const RunBytes whole = run_bytes(tmp / "whole");
    for (const int signal : {SIGINT, SIGTERM}) {
        const std::string dir = tmp / fmt::format("run{}", signal);
        const ChildEnd end = run_child(train_args(dir, "40"), {}, {.signal = signal, .after_ms = 900});
        INFO("signal ", signal, " exit ", end.code, " killed by ", end.signal);
        if (end.signal == signal) {
            // Outside the training loop (before its guard is set, or after the run is saved and the
            // guard is gone, e.g. in a sanitizer's exit-time leak check) the signal's default action
            // ends the process: there is no run yet, or a committed one.
            if (!fs::exists(dir)) continue;
        } else {
            CHECK(((end.code == 128 + signal) || end.code == 0));
        }
        // A signal during the final evaluation leaves all 40 steps done and the evaluation pending.
        const auto progress = read_config(dir)["progress"];
        if (progress["steps_done"] < 40 || progress["evaluation_pending"])
            require_ok(run({"train", "--resume", dir, "--quiet"}));
        CHECK(run_bytes(dir) == whole);
    }
}

TEST_CASE("train --checkpoint-every saves the run while it trains") {
    TempDir tmp;
    // Points 1-5 are the step-1 checkpoint (model, optimizer, metrics, config.json, the swap);
    // killed at point 6, while writing step 2's, the run holds step 1.
    const ChildEnd end = run_child(train_args(tmp / "run", "6"), {"ATTOGRAD_TEST_KILL_AT=6"});
    REQUIRE(end.signal == SIGKILL);
    CHECK(steps_done(tmp / "run") == 1);
    check_refused(run({"train", "--task", "copy", "--checkpoint-every", "-1", "--out", tmp / "x"}),
                  {"--checkpoint-every"});
}

TEST_CASE("a run whose loss blows up is refused as diverged (exit 2, one line), not reported as a success") {
    TempDir tmp;
    // Adam's step is about lr whatever the gradient: at 1e6 the loss reaches ~1e12 at once.
    check_refused(
        run({"train", "--task", "reverse", "--lr", "1e6", "--steps", "200", "--out", tmp / "run", "--quiet"}),
        {"diverged", "4x its first value", "--lr"});
    CHECK_FALSE(fs::exists(tmp / "run"));  // nothing from the diverged steps is kept
    // An update that overflows the parameters, or finite parameters whose outputs overflow at the
    // first held-out evaluation or snapshot, is the same divergence, not an inner op's message.
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--steps", "50", "--eval-every", "1", "--lr", "1e30"},
          std::vector<std::string>{"--steps", "1", "--lr", "3.4e38"},
          std::vector<std::string>{"--model", "encoder", "--steps", "1", "--lr", "3e38"}}) {
        std::vector<std::string> args = {"train", "--task", "reverse", "--out", tmp / "run2", "--quiet"};
        args.insert(args.end(), extra.begin(), extra.end());
        check_refused(run(args), {"training diverged at step 1", "--lr"});
        CHECK_FALSE(fs::exists(tmp / "run2"));
    }
}

TEST_CASE("a reader loading a run while a writer swaps generations in never reports false corruption") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "a", "2")));
    require_ok(run(train_args(tmp / "b", "3")));  // one step more: every file of the run differs
    const fs::path live = tmp / "live";
    fs::copy(tmp / "a", live);
    std::atomic<bool> stop{false};
    std::atomic<int> swaps{0};
    // The writer does what RunWriter::commit does: a complete new directory, one swap, the old
    // one removed, as fast as it can.
    std::thread writer([&] {
        for (int i = 0; !stop; ++i) {
            const fs::path staging = tmp / fmt::format(".live.staging-{}", i);
            fs::copy(i % 2 == 0 ? tmp / "b" : tmp / "a", staging);
            fs::remove_all(attograd::replace_directory(staging, live, "test"));
            ++swaps;
        }
    });
    // A writer saving without pause can outpace every attempt of a reader (kRunReadAttempts):
    // then the reader says so, which is true. What must never happen is a false "corrupted".
    int loads = 0, starved = 0, failures = 0;
    std::string first_failure;
    for (int i = 0; i < 300; ++i) {
        try {
            const std::int64_t done = read_run(live)["progress"]["steps_done"];
            CHECK((done == 2 || done == 3));
            ++loads;
        } catch (const attograd::Error& e) {
            if (std::string(e.what()).find("was saved again") != std::string::npos) {
                ++starved;
            } else if (failures++ == 0) {
                first_failure = e.what();
            }
        }
    }
    stop = true;
    writer.join();
    INFO("first failure: ", first_failure, "; loads ", loads, ", starved ", starved);
    CHECK(swaps > 10);
    CHECK(failures == 0);
    CHECK(loads > 150);  // retrying while a save lands lets most loads through even so
}

TEST_CASE("train refuses a run directory another train is writing, naming its pid") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    const RunBytes before = run_bytes(tmp / "run");
    {
        const attograd::train::RunLock other(tmp / "run");  // as a train in another process holds it
        const std::string pid = fmt::format("(pid {}:", ::getpid());
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4"}),
                      {"run is being written by another process", pid});
        auto fresh = train_args(tmp / "run", "3");
        fresh.push_back("--force");
        check_refused(run(fresh), {"run is being written by another process", pid});
        CHECK(run_bytes(tmp / "run") == before);
        // Readers need no lock.
        require_ok(run({"eval", "--run", tmp / "run"}));
    }
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
    CHECK(steps_done(tmp / "run") == 3);
    CHECK_FALSE(entries(tmp.path()).contains(".run.lock"));  // removed by its holder
}

TEST_CASE("inspect does not write into a run a train is writing (the next save would drop the report)") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    {
        const attograd::train::RunLock training(tmp / "run");  // as a train in another process holds it
        check_refused(run({"inspect", "--run", tmp / "run", "--format", "html"}),
                      {"run is being written by another process", "pass --to a path outside"});
        check_refused(run({"inspect", "--run", tmp / "run", "--format", "svg", "--to", tmp / "run/svg"}),
                      {"run is being written by another process"});
        CHECK_FALSE(fs::exists(tmp / "run/inspect/report.html"));
        require_ok(run({"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "outside.json"}));
        CHECK(fs::exists(tmp / "outside.json"));
    }
    require_ok(run({"inspect", "--run", tmp / "run", "--format", "html"}));
    CHECK(fs::exists(tmp / "run/inspect/report.html"));
    CHECK_FALSE(entries(tmp.path()).contains(".run.lock"));
}

TEST_CASE("inspect and eval write nothing once the run they read was saved again before they write") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    const fs::path hold = fs::path(tmp / "go");
    const std::vector<std::vector<std::string>> commands = {
        {"inspect", "--run", tmp / "run", "--format", "html"},
        {"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "out/inspect.json"},
        {"eval", "--run", tmp / "run", "--to", tmp / "run/notes/eval.txt"}};
    int steps = 2;
    for (const auto& command : commands) {
        CAPTURE(command[0]);
        fs::remove(hold);
        fs::remove(hold.string() + ".waiting");
        const ChildStreams streams{.out = tmp / "out.txt", .err = tmp / "err.txt"};
        const Child reader =
            start_child(command, {"ATTOGRAD_TEST_HOLD_AFTER_READ=" + hold.string()}, streams);
        for (int i = 0; i < 3000 && !fs::exists(hold.string() + ".waiting"); ++i) ::usleep(10'000);
        REQUIRE(fs::exists(hold.string() + ".waiting"));
        steps += 1;  // a save between the reader's read and its write
        require_ok(run({"train", "--resume", tmp / "run", "--steps", std::to_string(steps), "--quiet"}));
        write_text(hold, "");
        const ChildEnd end = wait_child(reader);
        CHECK(end.code == 2);
        const std::string err = read_text(tmp / "err.txt");
        CHECK(count_lines(err) == 1);
        CHECK_MESSAGE(err.find("was saved again while") != std::string::npos, err);
        CHECK_FALSE(fs::exists(tmp / "run/inspect"));
        CHECK_FALSE(fs::exists(tmp / "run/notes"));
        CHECK_FALSE(fs::exists(tmp / "out"));
    }
    CHECK(read_config(tmp / "run")["progress"]["steps_done"] == steps);
}

TEST_CASE("two train processes with the same new --out: one trains, the other exits 2") {
    TempDir tmp;
    std::vector<std::string> args = train_args(tmp / "run", "400");
    args.push_back("--no-early-stop");
    ChildEnd first_end, second_end;
    std::thread first([&] { first_end = run_child(args, {}); });
    // Started once the first holds the lock (a fixed wait is too short on a loaded machine).
    const fs::path lock = tmp / ".run.lock";
    for (int i = 0; i < 60'000 && !fs::exists(lock); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(fs::exists(lock));
    second_end = run_child(args, {});
    first.join();
    CHECK(first_end.code == 0);
    CHECK(second_end.code == 2);
    CHECK(steps_done(tmp / "run") == 400);
}

TEST_CASE("train --resume of a --data run refuses a TSV file that changed since the run started") {
    TempDir tmp;
    std::string pairs;
    for (int i = 0; i < 40; ++i) pairs += fmt::format("a{} b c\tc b a{}\n", i, i);
    write_text(tmp / "pairs.tsv", pairs);
    train(tmp / "run", {"--data", tmp / "pairs.tsv", "--steps", "2", "--seed", "3"});
    const json task = read_config(tmp / "run")["task"];
    CHECK(task["data_bytes"] == pairs.size());
    CHECK(task["data_fnv1a64"] == fmt::format("{:016x}", attograd::fnv1a64(pairs)));
    const RunBytes before = run_bytes(tmp / "run");
    const auto resume = [&] { return run({"train", "--resume", tmp / "run", "--steps", "4", "--quiet"}); };
    write_text(tmp / "pairs.tsv", pairs.substr(0, pairs.size() / 2));  // truncated
    check_refused(resume(), {"pairs.tsv", "not the training data of this run", "restore"});
    std::string changed = pairs;
    changed[pairs.find('b')] = 'q';  // one byte, same size
    write_text(tmp / "pairs.tsv", changed);
    check_refused(resume(), {"pairs.tsv", "not the training data of this run"});
    CHECK(run_bytes(tmp / "run") == before);
    write_text(tmp / "pairs.tsv", pairs);  // the original again
    require_ok(resume());
    CHECK(steps_done(tmp / "run") == 4);
}

TEST_CASE("a save over a directory that holds no run keeps every entry of it") {
    // Such as a directory a link put in DIR's place while training: its files are the user's.
    TempDir tmp;
    const fs::path dir = fs::path(tmp / "d");
    fs::create_directories(dir / "sub");
    write_text(dir / "notes.txt", "mine");
    write_text(dir / "sub" / "x", "x");
    {
        attograd::train::RunWriter writer(dir);
        writer.write_file("a.txt", "A");
        writer.commit(json::object());
    }
    CHECK(read_text(dir / "notes.txt") == "mine");
    CHECK(read_text(dir / "sub" / "x") == "x");
    CHECK(read_text(dir / "a.txt") == "A");
    // The next save replaces the run's own files and keeps the user's again.
    {
        attograd::train::RunWriter writer(dir);
        writer.write_file("a.txt", "B");
        writer.commit(json::object());
    }
    CHECK(read_text(dir / "notes.txt") == "mine");
    CHECK(read_text(dir / "a.txt") == "B");
}

TEST_CASE("staging names planted ahead, by counter and PID, do not stop a save") {
    TempDir tmp;
    const fs::path dir = fs::path(tmp / "run");
    for (int n = 0; n < 2000; ++n)
        fs::create_directory(fs::path(tmp / fmt::format(".run.staging-{}-{}", ::getpid(), n)));
    {
        attograd::train::RunWriter writer(dir);
        writer.write_file("a.txt", "A");
        writer.commit(json::object());
    }
    CHECK(read_text(dir / "a.txt") == "A");
    CHECK(fs::is_directory(
        fs::path(tmp / fmt::format(".run.staging-{}-0", ::getpid()))));  // not ours to remove
}

TEST_CASE("a user's entry whose NAME.kept would pass 255 bytes comes back under a name cut to fit") {
    TempDir tmp;
    const fs::path dir = fs::path(tmp / "run");
    const auto save = [&](const std::string& contents) {
        attograd::train::RunWriter writer(dir);
        writer.write_file("a.txt", contents);
        writer.commit(json::object());
    };
    save("A");
    // 252 bytes: NAME.kept would be 257. The second's cut would fall inside its two-byte "\xC3\xA9".
    const std::string ascii(252, 'm'), accented = std::string(249, 'n') + "\xC3\xA9" + "x";
    for (const auto& name : {ascii, accented}) write_text(dir / name, "old");
    // A killed save's staging directory (its writer gone) holding the user's entries, which the
    // user made again since.
    const pid_t gone = ::fork();
    if (gone == 0) ::_exit(0);
    REQUIRE(gone > 0);
    REQUIRE(::waitpid(gone, nullptr, 0) == gone);
    fs::copy(dir, tmp / fmt::format(".run.staging-{}-0", gone), fs::copy_options::recursive);
    for (const auto& name : {ascii, accented}) write_text(dir / name, "new");
    save("B");
    for (const auto& name : {ascii, accented}) CHECK(read_text(dir / name) == "new");
    CHECK(read_text(dir / (std::string(250, 'm') + ".kept")) == "old");
    CHECK(read_text(dir / (std::string(249, 'n') + ".kept")) == "old");  // not half a character
    check_no_staging(tmp.path());
}

TEST_CASE("a user's entries a save killed at any instant left behind come back, never over a newer one") {
    // Killed between the swap and moving the user's entries into the new generation, a save leaves
    // them in its staging directory; the user then makes an inspect/ of the same name before the
    // next save: both are kept.
    TempDir tmp;
    require_ok(run(train_args(tmp / "base", "2")));
    fs::create_directory(fs::path(tmp / "base") / "inspect");
    write_text(fs::path(tmp / "base") / "inspect" / "mine.txt", "precious");
    write_text(fs::path(tmp / "base") / "notes.txt", "notes");
    const auto holds = [](const fs::path& dir, const std::string& text) {
        for (const auto& entry : fs::recursive_directory_iterator(dir))
            if (entry.is_regular_file() && read_text(entry.path()) == text) return true;
        return false;
    };
    int killed = 0;
    for (int k = 1; k < 100; ++k) {
        const fs::path dir = tmp / fmt::format("run{}", k);
        INFO("killed at point ", k);
        if (!resume_killed_at(tmp / "base", dir, k)) break;
        ++killed;
        if (!fs::exists(dir / "inspect")) {
            fs::create_directory(dir / "inspect");
            write_text(dir / "inspect" / "new.txt", "newer");
        }
        require_ok(run({"train", "--resume", dir.string(), "--steps", "4", "--quiet"}));
        CHECK(holds(dir, "precious"));
        CHECK(holds(dir, "notes"));
        if (fs::exists(dir / "inspect" / "new.txt")) CHECK(read_text(dir / "inspect" / "new.txt") == "newer");
        check_no_staging(tmp.path());
    }
    CHECK(killed >= 6);
}

TEST_CASE(
    "the user's entries a killed last save left behind are back after any train of the run, even one "
    "that refuses") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "base", "2")));
    write_text(fs::path(tmp / "base") / "notes.txt", "notes");
    int stranded = 0;
    for (int k = 1; k < 100; ++k) {
        const fs::path dir = tmp / fmt::format("run{}", k);
        INFO("killed at point ", k);
        if (!resume_killed_at(tmp / "base", dir, k)) break;
        stranded += !fs::exists(dir / "notes.txt");
        // A resume to the steps the run has: nothing to train, refused or not, but the run's lock
        // was taken, and with it what the killed save left.
        const std::string done =
            std::to_string(read_config(dir.string())["progress"]["steps_done"].get<int>());
        (void)run({"train", "--resume", dir.string(), "--steps", done, "--quiet"});
        CHECK(read_text(dir / "notes.txt") == "notes");
        check_no_staging(tmp.path());
    }
    CHECK(stranded >= 1);  // some kill point fell between the swap and the move
}

TEST_CASE("another user's entry named as a lock file in a sticky directory is not a run being written") {
    TempDir tmp;
    const fs::path shared = tmp / "shared";
    fs::create_directory(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    fs::create_symlink("/nonexistent", shared / ".a.lock");
    REQUIRE(::lchown((shared / ".a.lock").c_str(), 54321, static_cast<gid_t>(-1)) == 0);
    require_ok(run(train_args((shared / "a" / "b" / "run").string(), "1")));
    require_ok(run({"eval", "--run", (shared / "a" / "b" / "run").string(), "--to",
                    (shared / "a" / "e.json").string()}));
    CHECK(fs::is_symlink(fs::symlink_status(shared / ".a.lock")));  // theirs, left as it was
    // One of this user's own is a train's lock: the place is refused.
    write_text(shared / ".c.lock", "12345\n");
    check_refused(run(train_args((shared / "c" / "run").string(), "1")),
                  {"is inside", "its lock file is beside it"});
}
