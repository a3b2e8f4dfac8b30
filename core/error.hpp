// Exception hierarchy and the two checking macros every op uses.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace attograd {

/// Base of every error attograd throws on bad input. Messages start with the op or argument
/// name and give the shapes involved, e.g. `matmul: inner dimensions differ: [2, 3] x [4, 5]`.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Tensor shapes that do not fit the op (ranks, widths, broadcasting).
class ShapeError : public Error {
public:
    using Error::Error;
};

/// A value out of its allowed range (probabilities, learning rates, window sizes, ...).
class ValueError : public Error {
public:
    using Error::Error;
};

/// An element type the op does not accept (e.g. a float tensor used as indices).
class DTypeError : public Error {
public:
    using Error::Error;
};

/// An index outside its dimension (token ids, gather indices, narrow ranges).
class IndexError : public Error {
public:
    using Error::Error;
};

/// Misuse of the autograd tape: backward through released entries, backward from a
/// non-scalar without an upstream gradient, NaN/Inf found in anomaly mode.
class AutogradError : public Error {
public:
    using Error::Error;
};

/// Reading or writing files: missing, truncated or corrupt checkpoints, failed writes.
class IoError : public Error {
public:
    using Error::Error;
};

/// Memory for a tensor could not be allocated (the shape is too large for this machine).
class ResourceError : public Error {
public:
    using Error::Error;
};

/// A broken internal invariant: a bug in attograd, never the user's fault.
class InternalError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

}  // namespace attograd

/// Throws `ErrorType` with an fmt-formatted message when `cond` is false (user errors).
#define AG_CHECK(cond, ErrorType, ...)                          \
    do {                                                        \
        if (!(cond)) throw ErrorType(fmt::format(__VA_ARGS__)); \
    } while (0)

/// Throws InternalError when an internal invariant fails (a bug in attograd).
#define AG_ASSERT(cond, ...)                                                                              \
    do {                                                                                                  \
        if (!(cond))                                                                                      \
            throw ::attograd::InternalError(                                                              \
                fmt::format("internal error: {} ({}:{})", fmt::format(__VA_ARGS__), __FILE__, __LINE__)); \
    } while (0)
