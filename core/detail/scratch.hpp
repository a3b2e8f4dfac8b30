// Internal: per-thread scratch buffers of the kernels, kept across calls so that the hot path
// does not allocate, and released by attograd::empty_cache() (core/storage.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace attograd::detail {

/// A scratch buffer that the calling thread's registry can release. Registers itself on
/// construction and leaves on destruction; use only as a `thread_local`.
class ScratchBase {
public:
    ScratchBase();
    virtual ~ScratchBase();
    ScratchBase(const ScratchBase&) = delete;
    ScratchBase& operator=(const ScratchBase&) = delete;

    /// Returns the buffer's memory to the system.
    virtual void release() noexcept = 0;
    /// Bytes the buffer holds.
    virtual std::size_t bytes() const noexcept = 0;
};

/// A thread's scratch vector: `thread_local detail::Scratch<float> s; float* p = s.at_least(n);`.
template <class T, class Alloc = std::allocator<T>>
class Scratch final : public ScratchBase {
public:
    /// The buffer, grown to at least n elements (its contents are unspecified).
    T* at_least(std::size_t n) {
        if (buffer.size() < n) buffer.resize(n);
        return buffer.data();
    }
    void release() noexcept override { std::vector<T, Alloc>().swap(buffer); }
    std::size_t bytes() const noexcept override { return buffer.capacity() * sizeof(T); }

    std::vector<T, Alloc> buffer;
};

/// Releases every scratch buffer of the calling thread.
void release_thread_scratch() noexcept;

/// Bytes held by the calling thread's scratch buffers.
std::size_t thread_scratch_bytes() noexcept;

}  // namespace attograd::detail
