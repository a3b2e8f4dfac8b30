// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/attention.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/attention_scores.hpp"
#include "nn/checkpoint.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/hard_attention.hpp"
#include "nn/head_silencing.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/local_window.hpp"
#include "nn/module.hpp"
#include "nn/multihead_attention.hpp"
#include "nn/sequential.hpp"
