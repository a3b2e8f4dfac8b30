// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/attention_mask.hpp"
#include "nn/module.hpp"
