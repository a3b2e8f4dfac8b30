// Everything attograd offers, in one include.
#pragma once

#include "core/core.hpp"
#include "data/data.hpp"
#include "inspect/inspect.hpp"
#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "train/train.hpp"
