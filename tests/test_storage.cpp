// The caching allocator behind tensor storage (core/storage.hpp): reuse on the allocating
// thread, no growth on a thread that only frees what others made, and empty_cache().
#include "core/storage.hpp"
#include "helpers.hpp"

#include <omp.h>

#include <cstdint>
#include <thread>
#include <vector>

using namespace attograd;

TEST_CASE("a freed buffer is reused by the thread that allocated it") {
    empty_cache();
    const std::size_t hits = allocator_stats().cache_hits;
    for (int i = 0; i < 3; ++i) Tensor t = empty({1 << 16});
    CHECK(allocator_stats().cache_hits >= hits + 2);
    CHECK(allocator_stats().cached_bytes >= (std::size_t{1} << 18));
}

TEST_CASE("buffers freed on another thread go back to the system, not into that thread's cache") {
    // a producer/consumer pipeline: the consumer only frees
    std::vector<Tensor> made;
    for (int i = 0; i < 8; ++i) made.push_back(empty({1 << 18}));  // 1 MB each
    std::size_t consumer_cached = 1;
    std::thread([&] {
        made.clear();
        consumer_cached = allocator_stats().cached_bytes;
    }).join();
    CHECK(consumer_cached == 0);
}

TEST_CASE("buffers of 2 MB and more start on a 2 MB boundary (huge pages), smaller ones on 64 bytes") {
    const auto offset = [](const Tensor& t, std::uintptr_t boundary) {
        return reinterpret_cast<std::uintptr_t>(t.data<float>()) % boundary;
    };
    empty_cache();  // fresh blocks from the system, then the same blocks again from the cache
    for (int round = 0; round < 2; ++round) {
        std::vector<Tensor> held;
        for (const std::int64_t n :
             {std::int64_t{1} << 19, (std::int64_t{3} << 19) + 5, std::int64_t{1} << 22}) {
            held.push_back(full({n}, 1.5));
            INFO("round ", round, ", ", n, " floats");
            CHECK(offset(held.back(), std::uintptr_t{2} << 20) == 0);
            CHECK(held.back().data<float>()[n - 1] == 1.5f);  // the whole block is usable
        }
        held.push_back(empty({1000}));
        CHECK(offset(held.back(), 64) == 0);
    }
}

namespace {

// A kernel that keeps per-thread scratch: log_softmax over a strided axis copies each row into
// the calling thread's scratch buffer (core/detail/softmax_kernel.hpp). One outer row: the
// calling thread does all of it.
void fill_scratch(std::int64_t rows) {
    NoGradGuard no_grad;
    const Tensor x = ones({rows, 4});
    const Tensor y = log_softmax(x, 0);  // rows elements, 4 apart
    REQUIRE(y.shape() == Shape{rows, 4});
}

}  // namespace

TEST_CASE("empty_cache releases the calling thread's kernel scratch buffers and cached blocks") {
    fill_scratch(1 << 16);
    { Tensor t = empty({1 << 16}); }
    const AllocatorStats before = allocator_stats();
    CHECK(before.scratch_bytes >= (std::size_t{1} << 16) * sizeof(float));
    CHECK(before.cached_bytes >= (std::size_t{1} << 16) * sizeof(float));
    empty_cache();
    const AllocatorStats after = allocator_stats();
    CHECK(after.scratch_bytes == 0);
    CHECK(after.cached_bytes == 0);
    fill_scratch(8);  // the kernels still work, on a fresh buffer
    CHECK(allocator_stats().scratch_bytes > 0);
    CHECK(allocator_stats().scratch_bytes < before.scratch_bytes);
}

TEST_CASE("empty_cache releases the OpenMP worker threads' scratch buffers too") {
    const int threads = omp_get_max_threads();
    if (threads < 2) {
        MESSAGE("SKIPPED: one OpenMP thread, no workers to release");
        return;
    }
    // Each worker fills its own scratch, then reports what it holds before and after.
    std::vector<std::size_t> held(static_cast<std::size_t>(threads), 0);
    const auto per_thread = [&](bool fill) {
#pragma omp parallel num_threads(threads)
        {
            if (fill) fill_scratch(1 << 14);
            held[static_cast<std::size_t>(omp_get_thread_num())] = allocator_stats().scratch_bytes;
        }
    };
    per_thread(true);
    for (int i = 0; i < threads; ++i) {
        INFO("thread ", i);
        CHECK(held[static_cast<std::size_t>(i)] >= (std::size_t{1} << 14) * sizeof(float));
    }
    empty_cache();
    per_thread(false);
    for (int i = 0; i < threads; ++i) {
        INFO("thread ", i);
        CHECK(held[static_cast<std::size_t>(i)] == 0);
    }
}
