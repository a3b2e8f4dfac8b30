// Every op: one header per op family.
#pragma once

#include "core/ops_additive_score.hpp"
#include "core/ops_attention.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_local_attention.hpp"
#include "core/ops_local_sdpa.hpp"
#include "core/ops_loss.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_norm.hpp"
#include "core/ops_positional.hpp"
#include "core/ops_random.hpp"
#include "core/ops_reduce.hpp"
#include "core/ops_shape.hpp"
#include "core/ops_softmax.hpp"
#include "core/ops_sparsemax.hpp"
