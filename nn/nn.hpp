// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/attention_mask.hpp"
#include "nn/checkpoint.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/sequential.hpp"
