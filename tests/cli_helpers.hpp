// Helpers of the attograd program's end-to-end tests: temporary directories, running the
// program (ATTOGRAD_PROGRAM) as a child process and capturing its output, reading files.
#pragma once

#include "core/input_file.hpp"
#include "temp_dir.hpp"
#include "train/run_writer.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace cli_test {

using testing::TempDir;

/// Sets an environment variable for the life of the object.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
    ~ScopedEnv() { ::unsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
};

/// What one run of the program did.
struct Outcome {
    std::string command;  ///< the command line, for failure messages
    int code = -1;
    std::string out{}, err{};
};

/// The number of lines of `text` (its '\n' characters).
inline std::size_t count_lines(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// The line of `text` holding `needle` ("" when none).
inline std::string line_with(const std::string& text, const std::string& needle) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (line.find(needle) != std::string::npos) return line;
    return "";
}

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// The bytes of file `name` in run directory `dir`.
inline std::string file_bytes(const std::string& dir, const char* name) {
    return read_text(fs::path(dir) / name);
}

inline void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

inline json read_config(const std::string& dir) {
    return json::parse(read_text(fs::path(dir) / "config.json"));
}

/// metrics.csv without its last column (wall-clock seconds, the one thing a seed cannot fix).
inline std::string metrics_without_seconds(const std::string& dir) {
    std::istringstream lines(read_text(fs::path(dir) / "metrics.csv"));
    std::string result;
    for (std::string line; std::getline(lines, line);) result += line.substr(0, line.rfind(',')) + "\n";
    return result;
}

/// The names of the entries of `dir`.
inline std::set<std::string> entries(const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
}

/// Writes `config` as `dir`/config.json with its own checksum recorded, as train would have:
/// tests that plant bad settings the checksum would catch use it to reach the later checks.
inline void write_config(const fs::path& dir, json config) {
    config[attograd::train::config_checksum_field] = attograd::train::config_checksum(config);
    write_text(dir / "config.json", config.dump(2));
}

/// Rewrites `dir`/config.json with `edit(json&)` applied, resealed (write_config).
template <class Edit>
void edit_config(const fs::path& dir, Edit edit) {
    json config = read_config(dir);
    edit(config);
    write_config(dir, config);
}

/// Records `file`'s current size and checksum in its run's config.json, as train would have:
/// tests that plant bad contents the checksums would catch use it to reach the later checks.
inline void record_checksum(const fs::path& file) {
    const fs::path config_path = file.parent_path() / "config.json";
    json config = json::parse(read_text(config_path));
    config["files"][file.filename().string()] = {{"bytes", fs::file_size(file)},
                                                 {"fnv1a64", attograd::file_checksum(file)}};
    write_config(file.parent_path(), config);
}

/// How a child process ended: its exit code, or the signal that killed it.
struct ChildEnd {
    int code = -1;   ///< exit code when it exited
    int signal = 0;  ///< the signal that killed it, or 0
};

/// A signal to send a child process `after_ms` milliseconds after it started (0: none).
struct SendSignal {
    int signal = 0;
    int after_ms = 0;
};

/// Where a child process's standard output and error go, and its file-size limit.
struct ChildStreams {
    static constexpr const char* closed = "";              ///< the descriptor closed (`2>&-`)
    static constexpr const char* broken_pipe = "|broken";  ///< a pipe whose reader is gone
    std::string out = "/dev/null", err = "/dev/null";      ///< a path opened for writing, or the above
    std::uint64_t file_size_limit = 0;                     ///< RLIMIT_FSIZE in bytes (`ulimit -f`); 0: none
};

/// A child process running the attograd program.
struct Child {
    pid_t pid = 0;
};

/// Starts the attograd program (ATTOGRAD_PROGRAM) as a child process with `env` added to the
/// environment ("NAME=VALUE") and its streams and limit as `streams` says.
inline Child start_child(std::vector<std::string> args, const std::vector<std::string>& env,
                         const ChildStreams& streams = {}) {
    args.insert(args.begin(), ATTOGRAD_PROGRAM);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> environment = env;
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    int broken[2] = {-1, -1};  // its read end closed before the child writes
    REQUIRE(::pipe(broken) == 0);
    ::close(broken[0]);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // only async-signal-safe calls until exec
        if (streams.file_size_limit > 0) {
            const rlimit limit{streams.file_size_limit, streams.file_size_limit};
            if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
        }
        const std::pair<int, const std::string*> targets[] = {{STDOUT_FILENO, &streams.out},
                                                              {STDERR_FILENO, &streams.err}};
        for (const auto& [fd, target] : targets) {
            if (target->empty()) {
                ::close(fd);
            } else if (*target == ChildStreams::broken_pipe) {
                ::dup2(broken[1], fd);
            } else {
                const int opened = ::open(target->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (opened < 0) ::_exit(126);
                ::dup2(opened, fd);
                ::close(opened);
            }
        }
        ::close(broken[1]);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    ::close(broken[1]);
    return {pid};
}

/// Waits for `child` to end.
inline ChildEnd wait_child(const Child& child) {
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    ChildEnd end;
    if (WIFEXITED(status)) end.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
    return end;
}

/// Runs the attograd program as a child process (start_child; stdout and stderr to /dev/null
/// unless `streams` says otherwise), sends it `send`, and waits.
inline ChildEnd run_child(std::vector<std::string> args, const std::vector<std::string>& env,
                          SendSignal send = {}, const ChildStreams& streams = {}) {
    const Child child = start_child(std::move(args), env, streams);
    if (send.signal != 0) {
        ::usleep(static_cast<useconds_t>(send.after_ms) * 1000);
        ::kill(child.pid, send.signal);
    }
    return wait_child(child);
}

/// Runs `attograd ARGS...` as a child process (run_child), its stdout and stderr captured in
/// temporary files. A child killed by a signal fails the test, naming the signal.
inline Outcome run(const std::vector<std::string>& args) {
    Outcome outcome{.command = "attograd"};
    for (const auto& a : args) outcome.command += " " + a;
    const TempDir streams_dir;
    const ChildStreams streams{.out = streams_dir / "stdout", .err = streams_dir / "stderr"};
    const ChildEnd end = run_child(args, {}, {}, streams);
    outcome.out = read_text(streams.out);
    outcome.err = read_text(streams.err);
    INFO(outcome.command, "\nstderr: ", outcome.err);
    REQUIRE_MESSAGE(end.signal == 0, "killed by signal ", end.signal, " (", ::strsignal(end.signal),
                    "), exit code ", end.code);
    outcome.code = end.code;
    return outcome;
}

/// `attograd train` of a short copy run for `steps` steps into `dir`, --quiet: a constant
/// learning rate (the schedule then does not depend on --steps), a checkpoint after every step
/// and the held-out evaluation (the slow part) only at the end, so that tests can run it many
/// times. Metrics lines come every 10 steps.
inline std::vector<std::string> train_args(const std::string& dir, const std::string& steps) {
    std::vector<std::string> args = {"train", "--task", "copy", "--schedule", "constant", "--warmup", "0"};
    args.insert(args.end(),
                {"--batch", "8", "--eval-every", "100", "--checkpoint-every", "1", "--seed", "3"});
    args.insert(args.end(), {"--steps", steps, "--out", dir, "--quiet"});
    return args;
}

/// Requires that the program succeeded.
inline void require_ok(const Outcome& o) {
    INFO(o.command, "\nstderr: ", o.err);
    REQUIRE(o.code == 0);
}

/// `attograd train ARGS... --out DIR --quiet`, which must succeed.
inline void train(const std::string& dir, std::vector<std::string> args) {
    args.insert(args.begin(), "train");
    args.insert(args.end(), {"--out", dir, "--quiet"});
    require_ok(run(args));
}

/// Checks a refusal: exit code 2 and one line on stderr that contains every one of `names`.
inline void check_refused(const Outcome& o, const std::vector<std::string>& names) {
    INFO(o.command, "\nstderr: ", o.err);
    CHECK(o.code == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.ends_with("\n"));
    for (const auto& name : names) CHECK_MESSAGE(o.err.find(name) != std::string::npos, "names ", name);
}

/// `attograd train ARGS... --steps STEPS --out DIR --quiet` (not checked).
inline Outcome train_run(std::vector<std::string> args, const std::string& steps, const std::string& dir) {
    args.insert(args.begin(), "train");
    args.insert(args.end(), {"--steps", steps, "--out", dir, "--quiet"});
    return run(args);
}

/// The same run interrupted (SIGINT) after step `at`, then resumed to its end.
inline void interrupted_run(const std::vector<std::string>& args, const std::string& steps,
                            const std::string& dir, const std::string& at) {
    {
        ScopedEnv hook("ATTOGRAD_TEST_SIGNAL_AT_STEP", at);
        const Outcome first = train_run(args, steps, dir);
        INFO(first.command, "\nstderr: ", first.err);
        REQUIRE(first.code == 130);
    }
    require_ok(run({"train", "--resume", dir, "--quiet"}));
}

/// `attograd eval --run DIR --json`, parsed.
inline json eval_json(const std::string& dir) {
    const Outcome o = run({"eval", "--run", dir, "--json"});
    require_ok(o);
    return json::parse(o.out);
}

/// `attograd inspect --run DIR --samples N --format json --to -`: the examples, parsed.
inline json inspected_examples(const std::string& dir, std::int64_t samples) {
    const Outcome o =
        run({"inspect", "--run", dir, "--samples", std::to_string(samples), "--format", "json", "--to", "-"});
    require_ok(o);
    return json::parse(o.out)["examples"];
}

/// The attention layers (modules) of run DIR's model in forward order, as inspect lists their heads.
inline std::vector<std::string> attention_modules(const std::string& dir) {
    std::vector<std::string> modules;
    const json examples = inspected_examples(dir, 1);
    for (const auto& head : examples[0]["heads"])
        if (modules.empty() || modules.back() != head["module"]) modules.push_back(head["module"]);
    return modules;
}

}  // namespace cli_test
