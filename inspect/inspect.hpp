// Umbrella header of inspect/: attention maps, alignment, saliency, knockout, rollout and flow,
// renderers, snapshots over training, previous-token and induction head scores.
#pragma once

#include "inspect/attention_map.hpp"
#include "inspect/chart_svg.hpp"
#include "inspect/export.hpp"
#include "inspect/faithfulness.hpp"
#include "inspect/faithfulness_stats.hpp"
#include "inspect/faithfulness_table.hpp"
#include "inspect/head_scores.hpp"
#include "inspect/intervention.hpp"
#include "inspect/knockout.hpp"
#include "inspect/max_flow.hpp"
#include "inspect/recorded_maps.hpp"
#include "inspect/render_html.hpp"
#include "inspect/render_svg.hpp"
#include "inspect/render_term.hpp"
#include "inspect/report.hpp"
#include "inspect/report_data.hpp"
#include "inspect/rollout.hpp"
#include "inspect/saliency.hpp"
#include "inspect/snapshot.hpp"
