// Accuracies and shares as the program prints them (inspect::fraction_text).
#pragma once

#include "inspect/fraction_text.hpp"

namespace attograd::cli {

using inspect::fraction_text;

}  // namespace attograd::cli
