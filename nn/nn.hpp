// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/attention_mask.hpp"
#include "nn/attention_scores.hpp"
#include "nn/module.hpp"
