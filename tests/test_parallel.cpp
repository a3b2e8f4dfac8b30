// The threading policy's pieces: fixed reduction blocks and the load governor (core/detail/parallel.hpp).
#include "core/detail/parallel.hpp"

#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace attograd::detail;

TEST_CASE("blocks_for depends on the work alone, never on the thread count") {
    std::vector<std::int64_t> seen;
    for (const int threads : {1, 2, 4}) {
        omp_set_num_threads(threads);
        seen.push_back(blocks_for(10 * kMinParallelWork, kMinParallelWork));
    }
    omp_set_num_threads(omp_get_num_procs());
    CHECK(seen[0] == kMaxReductionBlocks);
    CHECK(seen[1] == seen[0]);
    CHECK(seen[2] == seen[0]);
    CHECK(blocks_for(2 * kMinParallelWork - 1, kMinParallelWork) == 1);
    CHECK(blocks_for(3 * kMinParallelWork, kMinParallelWork) == 3);
}

namespace {

/// Keeps `count` threads spinning until destroyed: more runnable threads than cores.
class BusyThreads {
public:
    explicit BusyThreads(int count) {
        for (int i = 0; i < count; ++i)
            threads_.emplace_back([this] {
                volatile double x = 1.0;
                while (!stop_.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
            });
    }
    ~BusyThreads() {
        stop_ = true;
        for (auto& t : threads_) t.join();
    }
    BusyThreads(const BusyThreads&) = delete;
    BusyThreads& operator=(const BusyThreads&) = delete;

private:
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

/// Calls available_threads() in a busy loop for up to `seconds`: true if it ever gave 1.
bool ever_one_thread(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end)
        if (available_threads() == 1) return true;
    return false;
}

}  // namespace

TEST_CASE("parallel_for visits every index once, on the calling thread alone when given one thread") {
    for (const Schedule schedule : {Schedule::Static, Schedule::Dynamic})
        for (const int threads : {0, 1, 2, 4})
            for (const std::int64_t count : {0, 1, 3, 1000}) {
                std::vector<std::atomic<int>> visits(static_cast<std::size_t>(count));
                std::atomic<int> in_region{0}, team{0};
                parallel_for(
                    count, threads,
                    [&](std::int64_t i) {
                        visits[static_cast<std::size_t>(i)]++;
                        if (omp_in_parallel()) in_region++;
                        int size = omp_get_num_threads(), seen = team.load();
                        while (size > seen && !team.compare_exchange_weak(seen, size)) {
                        }
                    },
                    schedule);
                INFO("threads ", threads, " count ", count);
                for (const auto& v : visits) CHECK(v.load() == 1);
                const bool alone = threads <= 1 || count <= 1;
                CHECK((in_region.load() == 0) == (alone || count == 0));
                if (!alone) CHECK(team.load() == std::min<std::int64_t>(threads, count));
            }
}

TEST_CASE("the load governor drops to one thread while the cores are oversubscribed") {
    if (!std::ifstream("/proc/thread-self/schedstat")) {
        MESSAGE("no /proc/thread-self/schedstat: the governor is off here");
        return;
    }
    omp_set_num_threads(2);
    {
        // Twice as many spinning threads as cores beside this one: it waits for a core most of
        // the time, which the governor must see within the 2 s.
        const BusyThreads busy(2 * omp_get_num_procs());
        CHECK(ever_one_thread(2.0));
        // ATTOGRAD_LOAD_GOVERNOR=0, read when a thread first asks, keeps every thread on.
        ::setenv("ATTOGRAD_LOAD_GOVERNOR", "0", 1);
        bool dropped = true;
        std::thread([&] {
            omp_set_num_threads(2);  // a new thread starts from the default thread count
            dropped = ever_one_thread(0.5);
        }).join();
        ::unsetenv("ATTOGRAD_LOAD_GOVERNOR");
        CHECK_FALSE(dropped);
    }
    omp_set_num_threads(omp_get_num_procs());
}

TEST_CASE(
    "the split costs are measured once, on every thread, and scale the thresholds within their bounds") {
    const SplitCost& cost = split_cost();
    CHECK(&cost == &split_cost());
    CHECK(cost.threads == omp_get_max_threads());
    CHECK(cost.scale >= kMinScale);
    CHECK(cost.scale <= kMaxScale);
    if (cost.threads > 1) CHECK(cost.fork_join_ns > 0.0);
    const double nominal = 2.0 * static_cast<double>(kMinParallelWork);
    if (cost.break_even == 0)
        CHECK(cost.scale == 1.0);
    else
        CHECK(cost.scale == std::clamp(static_cast<double>(cost.break_even) / nominal, kMinScale, kMaxScale));
    CHECK(min_work_scale() == cost.scale);
}

TEST_CASE("threads_for splits only past this machine's threshold, and never past the threads available") {
    for (const std::int64_t min_work :
         {kMinParallelWork, kMinParallelTranscendentalWork, kMinParallelGemmWork}) {
        const double threshold = static_cast<double>(min_work) * min_work_scale();
        CHECK(threads_for(static_cast<std::int64_t>(2.0 * threshold) - 1, min_work) == 1);
        CHECK(threads_for(min_work / 2, min_work) == 1);
        const int far = threads_for(static_cast<std::int64_t>(64.0 * threshold), min_work);
        CHECK(far >= 1);
        CHECK(far <= omp_get_max_threads());
    }
}

TEST_CASE("a child made by fork() runs on one thread instead of hanging in a region without workers") {
    std::atomic<int> visits{0};
    parallel_for(64, 2, [&](std::int64_t) { visits++; });  // the parent's team exists
    REQUIRE(visits == 64);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::alarm(20);  // a hang ends as SIGALRM, not as a stuck test run
        const bool one = available_threads() == 1 && forked_child() &&
                         threads_for(std::int64_t{1} << 40, kMinParallelWork) == 1;
        std::atomic<int> child_visits{0};
        parallel_for(1000, threads_for(std::int64_t{1} << 40, kMinParallelWork),
                     [&](std::int64_t) { child_visits++; });
        ::_exit(one && child_visits == 1000 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK_FALSE(forked_child());
}
