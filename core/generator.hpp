// Seeded random number generators; every random op takes one explicitly.
#pragma once

#include <cstdint>
#include <random>

namespace attograd {

/// A seeded pseudo-random source (64-bit Mersenne Twister). The same seed gives the same
/// numbers on every platform: normals and uniforms are derived here, not by `<random>`'s
/// implementation-defined distributions.
class Generator {
public:
    /// Seeds the generator; the default seed is 0.
    explicit Generator(std::uint64_t seed = 0) : engine_(seed) {}

    /// Re-seeds the generator.
    void manual_seed(std::uint64_t seed) {
        engine_.seed(seed);
        has_spare_ = false;  // a normal cached from the old sequence must not leak into the new one
    }

    /// Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

    /// Uniform double in [low, high).
    double uniform(double low, double high) { return low + (high - low) * uniform(); }

    /// Standard normal (Box-Muller; the second value is cached for the next call).
    double normal();

    /// Uniform integer in [low, high).
    std::int64_t randint(std::int64_t low, std::int64_t high);

    /// Raw 64 random bits.
    std::uint64_t next() { return engine_(); }

private:
    std::mt19937_64 engine_;
    bool has_spare_ = false;
    double spare_ = 0.0;
};

/// The process-wide default generator (seed 0), used only when no generator is passed.
Generator& default_generator();

}  // namespace attograd
