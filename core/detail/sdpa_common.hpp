// Internal: what the two global fused attention kernels (core/ops_attention.cpp keeps the
// [Tq, Tk] weights, core/detail/flash_attention.cpp does not) share: the call's geometry, dropout
// masks regenerated from a seed, and per-thread scratch.
#pragma once

#include "core/detail/fused_attention_common.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/scratch.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attograd::detail {

/// Everything the kernels need to know about one call, besides the data pointers.
struct SdpaGeometry : HeadGeometry {
    /// Strides of the additive mask over [B, h, Tq, Tk] (0 on broadcast dimensions).
    std::int64_t mask_b = 0, mask_h = 0, mask_t = 0, mask_s = 0;
    double scale = 1.0;
    /// Dropout: active only while training with p > 0; one seed per (batch, head) block.
    double dropout_p = 0.0;
    std::vector<std::uint64_t> seeds{};
    bool dropout_active() const { return !seeds.empty(); }
    /// Enough work per call to be worth a parallel region.
    bool parallel() const {
        return blocks() > 1 && worth_parallel(blocks() * tq * tk * (d + dv), kMinParallelGemmWork);
    }
    /// (batch, head) blocks a thread takes at a time: threads that come free take more, so a
    /// core that runs slower for a while (a shared machine) does not hold the others up. Up to 4
    /// small blocks a grab (the small step's 32 x 32 blocks: fewer hand-outs), one when a block
    /// alone is worth a parallel region: in the large step (256 x 256 blocks, ~90 µs of
    /// backward each) grabs of 4 left one thread idle for up to 0.35 ms at each region's end.
    int blocks_per_grab() const {
        const std::int64_t block_work = std::max<std::int64_t>(1, tq * tk * (d + dv));
        return static_cast<int>(std::clamp<std::int64_t>(kMinParallelGemmWork / block_work, 1, 4));
    }
    /// The mask row of query t in block (b, h), indexed by key with stride mask_s.
    template <class T>
    const T* mask_row(const T* mask, std::int64_t b, std::int64_t h, std::int64_t t) const {
        return mask + b * mask_b + h * mask_h + t * mask_t;
    }
};

/// Uniform [0, 1) number `index` of the stream of a block's seed: the (index + 1)-th output of
/// SplitMix64 (Steele et al. 2014) started at `seed`, computed directly, so that any tile of a
/// block's dropout mask can be regenerated in backward instead of being stored.
inline double dropout_uniform(std::uint64_t seed, std::uint64_t index) {
    std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/// dst[i] = src[i] * M / (1 - p) for elements first .. first + n of the block's dropout mask M
/// (keep with probability 1 - p); dst may equal src. The same seed gives the same mask in
/// forward and backward.
template <class T>
void apply_dropout(const T* src, T* dst, std::int64_t n, double p, std::uint64_t seed,
                   std::int64_t first = 0) {
    const T keep_scale = p >= 1.0 ? T(0) : static_cast<T>(1.0 / (1.0 - p));
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] =
            dropout_uniform(seed, static_cast<std::uint64_t>(first + i)) >= p ? src[i] * keep_scale : T(0);
}

/// Per-thread scratch `slot` (0 .. 5) of at least n elements, kept across calls (no allocation
/// per step). 64-byte aligned, like tensor storage: Eigen's vectorised reductions (sum, max)
/// start with scalar steps up to the first aligned packet, so a row's sum would otherwise add in
/// an order that depends on which thread's buffer holds it, and results on the thread count.
template <class T>
T* sdpa_scratch(int slot, std::int64_t n) {
    thread_local Scratch<T, Eigen::aligned_allocator<T>> buffers[6];
    return buffers[slot].at_least(static_cast<std::size_t>(n));
}

}  // namespace attograd::detail
