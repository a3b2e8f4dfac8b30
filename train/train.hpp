// Umbrella header of train/: the Trainer and its callbacks, and run directories (atomic
// generations, checksums, the one-writer lock, consistent reads).
#pragma once

#include "train/callbacks.hpp"
#include "train/file_io.hpp"
#include "train/interrupt.hpp"
#include "train/metrics_csv.hpp"
#include "train/output.hpp"
#include "train/progress.hpp"
#include "train/run_dir.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"
#include "train/trainer.hpp"
