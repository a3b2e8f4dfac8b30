// Reference-counted byte buffers, served by a caching allocator.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace attograd {

/// A 64-byte aligned buffer shared by every tensor that views it (reshape shares storage).
/// Buffers of 2 MB and more start on a 2 MB boundary, and on Linux ask for transparent huge
/// pages (madvise MADV_HUGEPAGE): fewer TLB misses for the large activations' strided reads.
/// Buffers come from a per-thread cache of freed blocks, so a training loop that allocates the
/// same sizes every step stops calling the system allocator (and stops page-faulting) after
/// the first step. A buffer freed on another thread than the one that allocated it goes back
/// to the system: in a pipeline that hands tensors to a consumer thread, the consumer's cache
/// would otherwise fill (up to 512 MB) with blocks it never asks for.
class Storage {
public:
    /// Allocates `bytes` bytes (uninitialised).
    explicit Storage(std::size_t bytes);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() { return data_; }                ///< the first byte
    const void* data() const { return data_; }    ///< the first byte
    std::size_t bytes() const { return bytes_; }  ///< the size allocated

private:
    void* data_;
    std::size_t bytes_;
    const void* owner_;  // the allocating thread's cache
};

/// Statistics of the calling thread's buffer cache (for benchmarks and tests).
struct AllocatorStats {
    std::size_t cached_bytes = 0;   ///< bytes held in free lists, ready for reuse
    std::size_t system_allocs = 0;  ///< calls that reached the system allocator
    std::size_t cache_hits = 0;     ///< allocations served from the cache
    std::size_t scratch_bytes = 0;  ///< bytes held by the kernels' scratch buffers (not tensors)
};

/// The calling thread's allocator statistics.
AllocatorStats allocator_stats();

/// Releases the memory attograd keeps for reuse: the calling thread's cached tensor blocks and
/// its kernels' scratch buffers (per-thread buffers the attention, GEMM and softmax kernels keep
/// across calls), then the same for OpenMP's worker threads, reached through one parallel region
/// over omp_get_max_threads() threads (from inside a parallel region: the calling thread only).
/// Tensors alive are untouched; the next ops allocate afresh. PyTorch's
/// `torch.cuda.empty_cache()` for the CPU's caches: call it after a large model or batch is done
/// with, before a long phase of smaller work. allocator_stats() shows the effect per thread.
void empty_cache();

namespace detail {

/// A block of at least `bytes` bytes (at most 256) from the calling thread's free lists of
/// small blocks; tensor handles and their reference counts live in such blocks, so making a
/// tensor in a steady loop does not reach malloc. Larger requests go to operator new.
void* small_block_alloc(std::size_t bytes);
/// Gives back a block of small_block_alloc(bytes) (to the calling thread's lists).
void small_block_free(void* block, std::size_t bytes) noexcept;

/// Allocator over the small-block lists, for std::allocate_shared.
template <class T>
struct SmallBlockAllocator {
    using value_type = T;
    SmallBlockAllocator() = default;
    template <class U>
    SmallBlockAllocator(const SmallBlockAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(small_block_alloc(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { small_block_free(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const SmallBlockAllocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace detail

}  // namespace attograd
