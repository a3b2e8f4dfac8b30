// Internal: elementwise kernels in fixed-size chunks, so that every element takes one code path.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>

namespace attograd::detail {

// Inlined always: a call per chunk, returning a 128-byte array, would cost as much as the chunk's work.

/// Elements per chunk: 128 bytes, a whole number of SIMD packets at every width up to 512 bits
/// (two packets at 512, for the independent chains a polynomial tanh needs to fill the pipes).
template <class T>
inline constexpr int kChunk = static_cast<int>(128 / sizeof(T));

/// A fixed-size, aligned chunk: Eigen evaluates an expression over it in whole packets only, with
/// no scalar head or tail. Eigen's packet tanh and logistic round differently from their scalar
/// versions, and over a plain map the elements that fall in the head (alignment) or the tail
/// (size) take the scalar ones: an element's bits would depend on where it sits in its block, and
/// a one-query decode step would disagree with the whole sequence's pass. Through chunks each
/// element's result depends on its operands alone.
template <class T>
using Chunk = Eigen::Array<T, kChunk<T>, 1>;

/// The count (<= kChunk) elements at p as a chunk, zeros past count.
template <class T>
EIGEN_STRONG_INLINE Chunk<T> load_chunk(const T* p, std::int64_t count) {
    if (count == kChunk<T>) return Eigen::Map<const Chunk<T>>(p);
    Chunk<T> c = Chunk<T>::Zero();
    std::copy(p, p + count, c.data());
    return c;
}

/// Writes the first count elements of c to p.
template <class T>
EIGEN_STRONG_INLINE void store_chunk(const Chunk<T>& c, T* p, std::int64_t count) {
    std::copy(c.data(), c.data() + count, p);
}

/// Calls f(offset, count) for the consecutive chunks of [0, n), the last one possibly short.
template <class T, class F>
EIGEN_STRONG_INLINE void for_chunks(std::int64_t n, F&& f) {
    for (std::int64_t i = 0; i < n; i += kChunk<T>) f(i, std::min<std::int64_t>(kChunk<T>, n - i));
}

}  // namespace attograd::detail
