// The caching allocator behind tensor storage (core/storage.hpp): reuse on the allocating
// thread, and no growth on a thread that only frees what others made.
#include "core/storage.hpp"
#include "helpers.hpp"

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
