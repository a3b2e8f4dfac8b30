// Where the program writes and what its surroundings can do to it: no write through a symbolic
// link it did not ask for (lock file, run directory, inspect's default output), one lock per run
// whatever path names it, standard streams that are full, closed or broken never abort it or
// leak into its files, a file-size limit is an error like any other, and Ctrl-C during a long
// held-out evaluation saves the run at once.
#include "cli_helpers.hpp"
#include "train/run_lock.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <algorithm>
#include <map>

#include <chrono>
#include <csignal>
#include <thread>

namespace {

using namespace cli_test;

// The long-evaluation test's data: source-target pairs (10 % of them held out) over a
// vocabulary of tokens.
constexpr int kEvalPairs = 200000, kEvalTokens = 8000;

std::int64_t steps_done(const fs::path& dir) { return read_config(dir)["progress"]["steps_done"]; }

/// The run files whose bytes must survive a refused or failed save.
std::string run_bytes(const fs::path& dir) {
    return read_text(dir / "model.safetensors") + read_text(dir / "optimizer.safetensors") +
           read_text(dir / "metrics.csv") + read_text(dir / "config.json");
}

/// Names of `dir`'s entries that a writer leaves only when it fails to clean up.
std::vector<std::string> leftovers(const fs::path& dir) {
    std::vector<std::string> found;
    for (const auto& name : entries(dir))
        if (name.find(".staging-") != std::string::npos || name.find(".tmp.") != std::string::npos)
            found.push_back(name);
    return found;
}

/// A PID no process has: a child that has exited and been waited for.
pid_t dead_pid() {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(0);
    REQUIRE(::waitpid(pid, nullptr, 0) == pid);
    return pid;
}

/// One line ending in '\n'.
void check_one_line(const std::string& text) {
    CHECK(count_lines(text) == 1);
    CHECK(text.ends_with("\n"));
}

}  // namespace

// ---- symbolic links --------------------------------------------------------------------------

TEST_CASE("the lock file is never written through a symbolic link, nor over a file it did not leave") {
    TempDir tmp;
    write_text(tmp / "precious", "precious\n");
    fs::create_symlink(tmp / "precious", tmp / ".run.lock");
    check_refused(run(train_args(tmp / "run", "1")), {".run.lock", "symbolic link"});
    CHECK(read_text(tmp / "precious") == "precious\n");
    CHECK(fs::is_symlink(tmp / ".run.lock"));
    CHECK_FALSE(fs::exists(tmp / "run"));
    // A hard link to another file, or a file holding anything but a PID, is not a lock file a
    // train left: refused, untouched.
    write_text(tmp / "other", "12345\n");
    fs::create_hard_link(tmp / "other", tmp / ".run2.lock");
    check_refused(run(train_args(tmp / "run2", "1")), {".run2.lock", "not a lock file"});
    CHECK(read_text(tmp / "other") == "12345\n");
    write_text(tmp / ".run3.lock", "my notes\n");
    check_refused(run(train_args(tmp / "run3", "1")), {".run3.lock", "not a lock file"});
    CHECK(read_text(tmp / ".run3.lock") == "my notes\n");
    // What a killed train leaves (its PID) is taken over.
    write_text(tmp / ".run4.lock", fmt::format("{}", dead_pid()));
    require_ok(run(train_args(tmp / "run4", "1")));
    CHECK_FALSE(fs::exists(tmp / ".run4.lock"));
}

TEST_CASE(
    "a run reached through a symbolic link takes the run's own lock and is saved where the link points") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    fs::create_directory_symlink(tmp / "run", tmp / "link");
    fs::create_directory(tmp / "links");
    fs::create_directory_symlink("../run", tmp / "links/relative");
    {
        const attograd::train::RunLock held(tmp / "run");  // as a train in another process holds it
        for (const std::string& path : {tmp / "link", tmp / "links/relative", tmp / "links/../link/"}) {
            check_refused(run({"train", "--resume", path, "--steps", "4", "--quiet"}),
                          {"being written by another process"});
        }
    }
    {
        const attograd::train::RunLock held(tmp / "link");
        check_refused(run({"train", "--resume", tmp / "run", "--steps", "4", "--quiet"}),
                      {"being written by another process"});
    }
    CHECK(steps_done(tmp / "run") == 2);
    require_ok(run({"train", "--resume", tmp / "link", "--steps", "4", "--quiet"}));
    CHECK(fs::is_symlink(tmp / "link"));
    CHECK(steps_done(tmp / "run") == 4);
    auto fresh = train_args(tmp / "links/relative", "1");
    fresh.push_back("--force");
    require_ok(run(fresh));
    CHECK(fs::is_symlink(tmp / "links/relative"));
    CHECK(steps_done(tmp / "run") == 1);
    // Locks and staging directories are beside the run, never beside a link.
    CHECK(entries(tmp / "links").size() == 1);
    CHECK_FALSE(entries(tmp.path()).contains(".link.lock"));
    CHECK(leftovers(tmp.path()).empty());
    // ".." after a link goes where the kernel goes: beside the link's target.
    fs::create_directories(tmp / "a/b");
    fs::create_directory_symlink(tmp / "a/b", tmp / "deep");
    require_ok(run(train_args(tmp / "deep/../run2", "1")));
    CHECK(steps_done(tmp / "a/run2") == 1);
    CHECK_FALSE(fs::exists(tmp / "run2"));
    const attograd::train::RunLock held(tmp / "a/run2");
    check_refused(run({"train", "--resume", tmp / "deep/../run2", "--steps", "2", "--quiet"}),
                  {"being written by another process"});
}

TEST_CASE(
    "a dangling symbolic link, or one to a file, is no run directory: refused, nothing made where it "
    "points") {
    TempDir tmp;
    fs::create_symlink(tmp / "nowhere/deep/run", tmp / "dangling");
    check_refused(run(train_args(tmp / "dangling", "1")), {"dangling", "symbolic link", "not a directory"});
    CHECK_FALSE(fs::exists(tmp / "nowhere"));
    CHECK(fs::is_symlink(tmp / "dangling"));
    write_text(tmp / "file", "mine\n");
    fs::create_symlink(tmp / "file", tmp / "to_file");
    check_refused(run(train_args(tmp / "to_file", "1")), {"to_file", "not a directory"});
    CHECK(read_text(tmp / "file") == "mine\n");
    CHECK(fs::is_symlink(tmp / "to_file"));
}

TEST_CASE("inspect never writes its default output through a symbolic link inside the run") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "1")));
    write_text(tmp / "victim", "victim\n");
    fs::create_directory(tmp / "run/inspect");
    const std::vector<std::pair<std::string, std::string>> outputs = {{"html", "report.html"},
                                                                      {"csv", "attention.csv"},
                                                                      {"json", "attention.json"},
                                                                      {"svg", "example1_layer0_head0.svg"}};
    for (const auto& [format, file] : outputs) {
        INFO(format);
        fs::create_symlink(tmp / "victim", fs::path(tmp / "run/inspect") / file);
        check_refused(run({"inspect", "--run", tmp / "run", "--format", format}),
                      {"inspect/" + file, "symbolic link", "--to"});
        CHECK(read_text(tmp / "victim") == "victim\n");
        CHECK(fs::is_symlink(fs::path(tmp / "run/inspect") / file));
        fs::remove(fs::path(tmp / "run/inspect") / file);
        // A dangling link is not followed either (it would create the file it names).
        fs::create_symlink(tmp / "made", fs::path(tmp / "run/inspect") / file);
        check_refused(run({"inspect", "--run", tmp / "run", "--format", format}), {"symbolic link"});
        CHECK_FALSE(fs::exists(tmp / "made"));
        fs::remove(fs::path(tmp / "run/inspect") / file);
    }
    CHECK(leftovers(tmp / "run/inspect").empty());
    // RUN/inspect itself a link to a directory elsewhere: nothing written there.
    fs::remove_all(tmp / "run/inspect");
    fs::create_directory(tmp / "elsewhere");
    fs::create_directory_symlink(tmp / "elsewhere", tmp / "run/inspect");
    for (const auto& [format, file] : outputs) {
        check_refused(run({"inspect", "--run", tmp / "run", "--format", format}),
                      {"inspect", "symbolic link"});
    }
    CHECK(entries(tmp / "elsewhere").empty());
    // A --to the user names is written through a link, as any output path is.
    write_text(tmp / "report.html", "old\n");
    fs::create_symlink(tmp / "report.html", tmp / "named.html");
    require_ok(run({"inspect", "--run", tmp / "run", "--format", "html", "--to", tmp / "named.html"}));
    CHECK(fs::is_symlink(tmp / "named.html"));
    CHECK(read_text(tmp / "report.html").starts_with("<!DOCTYPE html>"));
}

TEST_CASE("train writes no file through links in a run directory or staging names beside it") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    // Every run file a link to a copy of itself (so the run checks out): a save replaces the
    // links with new files and leaves the copies as they were.
    fs::create_directory(tmp / "copies");
    for (const auto& name : entries(tmp / "run")) {
        fs::copy_file(fs::path(tmp / "run") / name, fs::path(tmp / "copies") / name);
        fs::remove(fs::path(tmp / "run") / name);
        fs::create_symlink(fs::path(tmp / "copies") / name, fs::path(tmp / "run") / name);
    }
    const std::string copies = run_bytes(tmp / "copies");
    // A link named like the staging directory of a dead writer, pointing at another run with
    // files of its own: not taken for a staging directory (nothing moved out of it).
    require_ok(run(train_args(tmp / "other", "1")));
    write_text(tmp / "other/notes.txt", "mine\n");
    const std::string stale = fmt::format(".run.staging-{}-0", dead_pid());
    fs::create_directory_symlink(tmp / "other", tmp / stale);
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));
    CHECK(steps_done(tmp / "run") == 3);
    CHECK(run_bytes(tmp / "copies") == copies);
    for (const auto& name : entries(tmp / "run")) CHECK_FALSE(fs::is_symlink(fs::path(tmp / "run") / name));
    CHECK(read_text(tmp / "other/notes.txt") == "mine\n");
    CHECK_FALSE(fs::exists(tmp / "run/notes.txt"));
    CHECK(fs::is_symlink(tmp / stale));
}

// ---- standard streams ------------------------------------------------------------------------

TEST_CASE("a full, closed or broken stderr never aborts a command: train saves and exits with its code") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "base", "2")));
    for (const std::string err : {"/dev/full", ChildStreams::closed, ChildStreams::broken_pipe}) {
        INFO("stderr: '", err, "'");
        const ChildStreams streams{.err = err};
        const std::string dir = tmp / fmt::format("run{}", err.size());
        auto args = train_args(dir, "3");
        args.pop_back();  // not --quiet: progress lines go to stderr
        ChildEnd end = run_child(args, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 0);
        CHECK(steps_done(dir) == 3);
        // Interrupted: saves, says so (to nowhere) and exits 130; the run resumes.
        fs::remove_all(dir);
        end = run_child(args, {"ATTOGRAD_TEST_SIGNAL_AT_STEP=2"}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 130);
        CHECK(steps_done(dir) == 2);
        // Errors and warnings: their exit codes, not an abort.
        end = run_child({"train", "--task", "nosuchtask", "--out", tmp / "x"}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 2);
        end =
            run_child({"eval", "--run", tmp / "base", "--input", "a b", "--input", "zz zz"}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 0);
        end = run_child({"eval", "--run", tmp / "base", "--input", ""}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 2);
        end = run_child({"inspect", "--run", tmp / "base", "--format", "html", "--to", tmp / "r.html"}, {},
                        {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 0);
        end = run_child({"tasks"}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 0);
        end = run_child({"frobnicate"}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 2);
    }
}

TEST_CASE(
    "a full or broken stdout is exit 2 after the work is done, never an abort, and a closed one is "
    "/dev/null") {
    TempDir tmp;
    for (const std::string out : {"/dev/full", ChildStreams::broken_pipe, ChildStreams::closed}) {
        INFO("stdout: '", out, "'");
        const int code = out.empty() ? 0 : 2;
        const ChildStreams streams{.out = out};
        const std::string dir = tmp / fmt::format("run{}", out.size());
        ChildEnd end = run_child(train_args(dir, "2"), {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == code);
        CHECK(steps_done(dir) == 2);  // saved all the same
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"tasks"}, std::vector<std::string>{"--help"},
              std::vector<std::string>{"train", "--help"}, std::vector<std::string>{"--version"},
              std::vector<std::string>{"eval", "--run", dir},
              std::vector<std::string>{"inspect", "--run", dir},
              std::vector<std::string>{"inspect", "--run", dir, "--format", "json", "--to", "-"}}) {
            INFO(args[0]);
            end = run_child(args, {}, {}, streams);
            CHECK(end.signal == 0);
            CHECK(end.code == code);
        }
    }
}

TEST_CASE("with stdout or stderr closed, no file the program opens receives its output") {
    TempDir tmp;
    // The lock file is the first file train opens: with the stream's descriptor closed it would
    // take that number and receive the header lines (stderr) or the summary (stdout). It is
    // removed at the end, so the test holds it open to read what it held then.
    for (const std::string stream : {"out", "err"}) {
        INFO("closed: std", stream);
        const fs::path lock = tmp / (".run" + stream + ".lock");
        write_text(lock, fmt::format("{}", dead_pid()));  // as a killed train leaves it
        const int held = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(held >= 0);
        auto args = train_args(tmp / ("run" + stream), "2");
        args.pop_back();  // not --quiet
        const ChildStreams streams{.out = stream == "out" ? ChildStreams::closed : "/dev/null",
                                   .err = stream == "err" ? ChildStreams::closed : "/dev/null"};
        const Child child = start_child(args, {}, streams);
        CHECK(wait_child(child).code == 0);
        CHECK_FALSE(fs::exists(lock));
        char text[4096] = {};
        const ssize_t n = ::pread(held, text, sizeof text - 1, 0);
        ::close(held);
        CHECK(std::string(text, static_cast<std::size_t>(std::max<ssize_t>(n, 0))) ==
              fmt::format("{}", child.pid));
    }
    // Every file the program writes is as it would be with the streams open.
    const ChildStreams both_closed{.out = ChildStreams::closed, .err = ChildStreams::closed};
    auto args = train_args(tmp / "closed", "2");
    args.pop_back();
    REQUIRE(run_child(args, {}, {}, both_closed).code == 0);
    require_ok(run(train_args(tmp / "open", "2")));
    CHECK(read_text(tmp / "closed/model.safetensors") == read_text(tmp / "open/model.safetensors"));
    CHECK(metrics_without_seconds(tmp / "closed") == metrics_without_seconds(tmp / "open"));
}

// ---- limits and signals ----------------------------------------------------------------------

TEST_CASE("a file-size limit fails the save with one line and exit 2, leaving the run as it was") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    const std::string before = run_bytes(tmp / "run");
    const std::uint64_t model = fs::file_size(tmp / "run/model.safetensors");
    const std::uint64_t optimizer = fs::file_size(tmp / "run/optimizer.safetensors");
    REQUIRE(optimizer > model);
    // The limit met by the first file, or by the second one after the first was written.
    for (const std::uint64_t limit : {std::uint64_t{4096}, model + 1}) {
        INFO("limit ", limit);
        const ChildStreams streams{.err = tmp / "err.txt", .file_size_limit = limit};
        ChildEnd end =
            run_child({"train", "--resume", tmp / "run", "--steps", "4", "--quiet"}, {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 2);
        const std::string err = read_text(tmp / "err.txt");
        check_one_line(err);
        CHECK_MESSAGE(err.find("cannot save the run (its directory is left as it was)") != std::string::npos,
                      err);
        CHECK_MESSAGE(err.find("File too large") != std::string::npos, err);
        CHECK_MESSAGE(err.find("ulimit -f") != std::string::npos, err);
        CHECK(run_bytes(tmp / "run") == before);
        CHECK(leftovers(tmp.path()).empty());
        CHECK_FALSE(fs::exists(tmp / ".run.lock"));
        // A new run: nothing left at all, not even the folders made for it.
        end =
            run_child(train_args((fs::path(tmp / "new") / "deeper" / "run").string(), "2"), {}, {}, streams);
        CHECK(end.code == 2);
        check_one_line(read_text(tmp / "err.txt"));
        CHECK_MESSAGE(read_text(tmp / "err.txt").find("(nothing was written)") != std::string::npos,
                      read_text(tmp / "err.txt"));
        CHECK_FALSE(fs::exists(tmp / "new"));
        CHECK(leftovers(tmp.path()).empty());
    }
    // The limit met mid-training by a file that grows (the attention snapshots, recorded every
    // step of a tiny model): the run holds the last save that fitted, and resumes to the run
    // that never met the limit.
    const auto growing = [&](const std::string& dir) {
        return std::vector<std::string>{"train",    "--task",
                                        "copy",     "--steps",
                                        "12",       "--batch",
                                        "8",        "--embed-dim",
                                        "4",        "--ffn-dim",
                                        "0",        "--snapshot-every",
                                        "1",        "--checkpoint-every",
                                        "1",        "--schedule",
                                        "constant", "--warmup",
                                        "0",        "--eval-every",
                                        "100",      "--seed",
                                        "3",        "--quiet",
                                        "--out",    dir};
    };
    require_ok(run(growing(tmp / "grown")));
    REQUIRE(fs::file_size(tmp / "grown/attention_snapshots.safetensors") > 16000);
    REQUIRE(fs::file_size(tmp / "grown/optimizer.safetensors") < 12000);
    {
        const ChildStreams streams{.err = tmp / "err.txt", .file_size_limit = 12000};
        const ChildEnd end = run_child(growing(tmp / "limited"), {}, {}, streams);
        CHECK(end.signal == 0);
        CHECK(end.code == 2);
        const std::string err = read_text(tmp / "err.txt");
        check_one_line(err);
        CHECK_MESSAGE(err.find("attention_snapshots.safetensors") != std::string::npos, err);
        const std::int64_t done = steps_done(tmp / "limited");
        CHECK((done >= 1 && done < 12));
        CHECK(leftovers(tmp.path()).empty());
        require_ok(run({"train", "--resume", tmp / "limited", "--quiet"}));
        CHECK(read_text(tmp / "limited/model.safetensors") == read_text(tmp / "grown/model.safetensors"));
        CHECK(metrics_without_seconds(tmp / "limited") == metrics_without_seconds(tmp / "grown"));
    }
    // inspect's report beyond the limit: the same, and no temporary file left in inspect/.
    const ChildStreams streams{.err = tmp / "err.txt", .file_size_limit = 2048};
    const ChildEnd end = run_child({"inspect", "--run", tmp / "run", "--format", "html"}, {}, {}, streams);
    CHECK(end.signal == 0);
    CHECK(end.code == 2);
    check_one_line(read_text(tmp / "err.txt"));
    CHECK(read_text(tmp / "err.txt").find("File too large") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp / "run/inspect"));  // made for the report, removed with it
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "4", "--quiet"}));  // the run is whole
}

TEST_CASE(
    "inspect --format svg --to DIR beyond the file-size limit leaves DIR's earlier files, none replaced") {
    TempDir tmp;
    require_ok(run(train_args(tmp / "run", "2")));
    const auto maps_in = [](const fs::path& dir) {
        std::map<std::string, std::string> maps;
        for (const auto& name : entries(dir)) maps[name] = read_text(dir / name);
        return maps;
    };
    const std::vector<std::string> inspect = {"inspect",   "--run", tmp / "run", "--format",  "svg",
                                              "--samples", "6",     "--to",      tmp / "maps"};
    require_ok(run(inspect));
    const auto before = maps_in(tmp / "maps");
    REQUIRE(before.size() >= 3);
    // Another generation of the same maps, trained further (every map's weights differ), and a
    // limit under which its largest file does not fit and its smallest does.
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "8", "--quiet"}));
    auto fresh = inspect;
    fresh.back() = tmp / "fresh";
    require_ok(run(fresh));
    std::vector<std::uintmax_t> sizes;
    for (const auto& [name, bytes] : maps_in(tmp / "fresh")) sizes.push_back(bytes.size());
    std::sort(sizes.begin(), sizes.end());
    REQUIRE(sizes.front() < sizes.back());
    const ChildStreams streams{.err = tmp / "err.txt", .file_size_limit = sizes.back() - 1};
    const ChildEnd end = run_child(inspect, {}, {}, streams);
    CHECK(end.signal == 0);
    CHECK(end.code == 2);
    const std::string err = read_text(tmp / "err.txt");
    check_one_line(err);
    CHECK_MESSAGE(err.find("File too large") != std::string::npos, err);
    CHECK(maps_in(tmp / "maps") == before);  // every file of the earlier generation, none of the new
    CHECK(leftovers(tmp / "maps").empty());
    // A directory the failed command made is removed again, with the folders it made above it.
    auto elsewhere = inspect;
    elsewhere.back() = (fs::path(tmp / "new") / "maps").string();
    CHECK(run_child(elsewhere, {}, {}, streams).code == 2);
    CHECK_FALSE(fs::exists(tmp / "new"));
    const ChildStreams none{.err = tmp / "err.txt", .file_size_limit = 1};
    CHECK(
        run_child({"eval", "--run", tmp / "run", "--to", (fs::path(tmp / "new") / "sub" / "e.json").string()},
                  {}, {}, none)
            .code == 2);
    CHECK_FALSE(fs::exists(tmp / "new"));
}

TEST_CASE(
    "SIGINT during a long held-out evaluation saves the run within moments, and it resumes to the same run") {
    TempDir tmp;
    // Many held-out examples over a large vocabulary: the evaluation takes far longer than a
    // training step (each batch of 250 predictions computes logits over every token).
    std::string pairs;
    for (int i = 0; i < kEvalPairs; ++i) {
        const int a = i % kEvalTokens, b = i / kEvalTokens % kEvalTokens;  // distinct sources
        pairs += fmt::format("t{} t{} t{}\tt{} t{}\n", a, b, i * 7 % kEvalTokens, a, b);
    }
    write_text(tmp / "pairs.tsv", pairs);
    const auto args = [&](const std::string& dir) {
        return std::vector<std::string>{
            "train",     "--data", tmp / "pairs.tsv", "--steps", "1",     "--batch", "4", "--embed-dim", "16",
            "--ffn-dim", "0",      "--seed",          "5",       "--out", dir};
    };
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    require_ok(run(args(tmp / "whole")));
    const double whole_seconds = std::chrono::duration<double>(Clock::now() - started).count();

    const Child child = start_child(args(tmp / "run"), {}, {.err = tmp / "err.txt"});
    // The header line comes just before the training step, then the evaluation.
    const auto started_training = [&] {
        std::error_code ec;
        return fs::exists(tmp / "err.txt", ec) &&
               read_text(tmp / "err.txt").find("training data") != std::string::npos;
    };
    for (int i = 0; i < 6000 && !started_training(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto signalled = Clock::now();
    ::kill(child.pid, SIGINT);
    const ChildEnd end = wait_child(child);
    const double seconds = std::chrono::duration<double>(Clock::now() - signalled).count();
    INFO("uninterrupted run ", whole_seconds, " s; exit ", seconds, " s after SIGINT");
    CHECK(end.code == 130);
    CHECK(seconds < 0.3 * whole_seconds);
    const std::string err = read_text(tmp / "err.txt");
    CHECK(err.find("SIGINT at step 1 of 1: saved the run") != std::string::npos);
    const json progress = read_config(tmp / "run")["progress"];
    CHECK(progress["steps_done"] == 1);
    CHECK(progress["evaluation_pending"] == true);
    // Such a save is a run as any other: inspect reads it (its records agree with each other).
    require_ok(run({"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "pending.json"}));
    // Its row's lr is the step's, which the schedule gives: another one is refused.
    const std::string saved = read_text(tmp / "run/config.json");
    edit_config(tmp / "run", [](json& c) { c["progress"]["pending_lr"] = 7.5; });
    check_refused(run({"eval", "--run", tmp / "run"}),
                  {"progress.pending_lr is 7.5, but config.json's train settings"});
    write_text(tmp / "run/config.json", saved);
    // The resumed run does the evaluation it owed, and is the uninterrupted run.
    require_ok(run({"train", "--resume", tmp / "run", "--quiet"}));
    CHECK(read_config(tmp / "run")["progress"]["evaluation_pending"] == false);
    CHECK(read_text(tmp / "run/model.safetensors") == read_text(tmp / "whole/model.safetensors"));
    CHECK(read_text(tmp / "run/optimizer.safetensors") == read_text(tmp / "whole/optimizer.safetensors"));
    CHECK(metrics_without_seconds(tmp / "run") == metrics_without_seconds(tmp / "whole"));
}

TEST_CASE(
    "a signal while eval or inspect holds the run's lock waits for it: no lock, temporary or file left") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    require_ok(run(train_args(dir.string(), "2")));
    require_ok(run({"inspect", "--run", dir.string(), "--format", "html"}));  // kept as it is
    const std::string report = read_text(dir / "inspect" / "report.html");
    const auto entries_beside = [&] { return entries(tmp.path()); };
    const auto before = entries_beside();
    const auto interrupted = [&](const std::vector<std::string>& args, int signal, const char* name) {
        INFO(args[0], " ", args.back(), " ", name);
        const ChildEnd end = run_child(args, {std::string("ATTOGRAD_TEST_SIGNAL_AT_STEP=-1") + name});
        CHECK(end.signal == signal);        // ends as the signal would have, once the lock is given up
        CHECK(entries_beside() == before);  // no lock file beside the run
        CHECK(leftovers(dir).empty());
        CHECK(leftovers(dir / "inspect").empty());
        CHECK(read_text(dir / "inspect" / "report.html") == report);
    };
    for (const auto& [signal, name] :
         std::vector<std::pair<int, const char*>>{{SIGINT, ""}, {SIGTERM, ":TERM"}}) {
        interrupted({"inspect", "--run", dir.string(), "--format", "html"}, signal, name);
        interrupted({"inspect", "--run", dir.string(), "--format", "json"}, signal, name);
        interrupted({"inspect", "--run", dir.string(), "--format", "svg"}, signal, name);
        interrupted({"eval", "--run", dir.string(), "--to", (dir / "inspect" / "e" / "eval.json").string()},
                    signal, name);
        interrupted({"inspect", "--run", dir.string(), "--format", "json", "--to", (tmp / "r.json")}, signal,
                    name);
    }
    CHECK_FALSE(fs::exists(dir / "inspect" / "e"));  // the folder made for it went with it
    CHECK_FALSE(fs::exists(dir / "inspect" / "report.json"));
    CHECK(entries(dir / "inspect") == std::set<std::string>{"report.html"});
    require_ok(run({"eval", "--run", dir.string()}));
}

TEST_CASE("RUN/inspect that is a file is refused as not a directory, and left as it was") {
    TempDir tmp;
    const fs::path dir = tmp / "run";
    require_ok(run(train_args(dir.string(), "2")));
    write_text(dir / "inspect", "mine");
    const Outcome o = run({"inspect", "--run", dir.string(), "--format", "html"});
    check_refused(o, {"inspect: exists and is not a directory"});
    CHECK(read_text(dir / "inspect") == "mine");
}
