// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/attention.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/attention_scores.hpp"
#include "nn/hard_attention.hpp"
#include "nn/local_window.hpp"
#include "nn/module.hpp"
