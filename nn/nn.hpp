// Umbrella header of nn/: modules, layers, attention.
#pragma once

#include "nn/module.hpp"
