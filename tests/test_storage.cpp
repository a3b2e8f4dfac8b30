// The caching allocator behind tensor storage (core/storage.hpp): reuse on the allocating
// thread, and no growth on a thread that only frees what others made.
#include "core/storage.hpp"
#include "helpers.hpp"

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
