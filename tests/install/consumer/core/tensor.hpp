// The consumer's own header whose path clashes with attograd's core/tensor.hpp: if an installed
// attograd header included "core/tensor.hpp", it would get this file and fail to compile.
#pragma once

#error "attograd's installed headers picked up the consumer's core/tensor.hpp"
