// Training time on one thread against the default thread setting, on an idle machine and beside
// a busy process this program starts and stops itself.
//
//   bench_threads_under_load [--rounds N] [--program PATH]
//
// Each workload is a run of the `attograd` program (default: ../examples/attograd/attograd
// from this program's directory), started fresh for every measurement because OpenMP reads its
// environment once, at start-up. Settings: OMP_NUM_THREADS=1; the default (all cores, with the
// load governor of core/detail/parallel.hpp); the default without the governor
// (ATTOGRAD_LOAD_GOVERNOR=0, the behaviour before it); and OMP_WAIT_POLICY=passive without it.
// Loads: none, and one competing process spinning on a core (forked here, killed after each
// round's runs). Rounds alternate the loads and run every setting in turn, so a slow spell of the
// machine lands on all settings alike; each figure is the median wall time over the rounds, and
// "x 1 thread" is the ratio of the medians. The machine's load average is printed before and
// after: on a shared machine the "idle" figures carry the other processes' load.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "timing.hpp"

extern char** environ;

namespace {

struct Workload {
    std::string name;
    std::vector<std::string> args;  // after `attograd train`
};

struct Setting {
    std::string name;
    std::vector<std::string> env;  // NAME=VALUE added to the environment
};

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

// Wall seconds of one run of `program train ARGS --out DIR --force` with `env` added, or a
// negative value when it failed.
double run_seconds(const std::string& program, const Workload& w, const Setting& s, const std::string& dir) {
    std::vector<std::string> args = {program, "train"};
    args.insert(args.end(), w.args.begin(), w.args.end());
    for (const char* extra : {"--out", dir.c_str(), "--force", "--quiet"}) args.emplace_back(extra);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> environment = s.env;
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return -1.0;
    int status = 0;
    ::waitpid(pid, &status, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? seconds : -1.0;
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = bench::int_flag(argc, argv, "--rounds", 5);
    const auto self = std::filesystem::absolute(argv[0]);
    std::string program = (self.parent_path().parent_path() / "examples/attograd/attograd").string();
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--program") == 0) program = argv[i + 1];
    if (!std::filesystem::exists(program)) {
        std::fprintf(stderr, "bench_threads_under_load: no attograd program at %s (build attograd_program)\n",
                     program.c_str());
        return 2;
    }
    const std::vector<std::string> common = {"--no-early-stop", "--snapshot-every", "0", "--checkpoint-every",
                                             "0"};
    std::vector<Workload> workloads = {
        {"reverse bilinear, 200 steps", {"--task", "reverse", "--score", "bilinear", "--steps", "200"}},
        {"reverse E 128 B 64 h 4, 60 steps",
         {"--task", "reverse", "--embed-dim", "128", "--batch", "64", "--heads", "4", "--steps", "60"}},
    };
    for (auto& w : workloads) w.args.insert(w.args.end(), common.begin(), common.end());
    const std::vector<Setting> settings = {
        {"1 thread", {"OMP_NUM_THREADS=1"}},
        {"default", {}},
        {"default, no governor", {"ATTOGRAD_LOAD_GOVERNOR=0"}},
        {"passive, no governor", {"ATTOGRAD_LOAD_GOVERNOR=0", "OMP_WAIT_POLICY=passive"}},
    };
    const std::vector<std::string> loads = {"idle", "1 busy process"};
    const auto runs =
        std::filesystem::temp_directory_path() / ("bench_threads_" + std::to_string(::getpid()));
    std::printf("CPU: %s, %ld cores; load average before: %s; %d rounds\n", cpu_model().c_str(),
                ::sysconf(_SC_NPROCESSORS_ONLN), load_average().c_str(), rounds);
    // seconds[workload][load][setting] over the rounds
    std::map<std::size_t, std::map<std::size_t, std::map<std::size_t, std::vector<double>>>> seconds;
    for (int round = 0; round < rounds; ++round) {
        for (std::size_t l = 0; l < loads.size(); ++l) {
            std::optional<bench::BusyProcess> busy;
            if (l == 1) busy.emplace();
            for (std::size_t w = 0; w < workloads.size(); ++w)
                for (std::size_t s = 0; s < settings.size(); ++s) {
                    const double t = run_seconds(program, workloads[w], settings[s], (runs / "run").string());
                    if (t < 0) {
                        busy.reset();
                        std::fprintf(stderr, "bench_threads_under_load: %s failed\n",
                                     workloads[w].name.c_str());
                        return 1;
                    }
                    seconds[w][l][s].push_back(t);
                }
            busy.reset();
        }
    }
    std::filesystem::remove_all(runs);
    std::printf("load average after: %s\n\n", load_average().c_str());
    std::printf("| workload | load | setting | median s | x 1 thread |\n| --- | --- | --- | --- | --- |\n");
    for (std::size_t w = 0; w < workloads.size(); ++w)
        for (std::size_t l = 0; l < loads.size(); ++l) {
            const double one = bench::median(seconds[w][l][0]);
            for (std::size_t s = 0; s < settings.size(); ++s) {
                const double t = bench::median(seconds[w][l][s]);
                std::printf("| %s | %s | %s | %.3f | %.2f |\n", workloads[w].name.c_str(), loads[l].c_str(),
                            settings[s].name.c_str(), t, t / one);
            }
        }
    return 0;
}
