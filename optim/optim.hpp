// Umbrella header of optim/: optimizers, gradient clipping, learning-rate schedules, data-parallel training.
#pragma once

#include "optim/adam.hpp"
#include "optim/clip_grad.hpp"
#include "optim/distributed.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/optimizer.hpp"
#include "optim/sgd.hpp"
