// Umbrella header of inspect/: attention maps, alignment, saliency, knockout, rollout and flow,
// renderers, snapshots over training.
#pragma once

#include "inspect/attention_map.hpp"
#include "inspect/report.hpp"
#include "inspect/recorded_maps.hpp"
#include "inspect/snapshot.hpp"
