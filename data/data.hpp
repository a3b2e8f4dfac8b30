// attograd::data: the bundled toy tasks, coref, keyword, translate, Vocabulary, TSV datasets,
// batching, BLEU and gettext translation pairs, in one include.
#pragma once

#include "data/batcher.hpp"
#include "data/bleu.hpp"
#include "data/char_lm.hpp"
#include "data/coref.hpp"
#include "data/dates.hpp"
#include "data/evaluation.hpp"
#include "data/example_vocabulary.hpp"
#include "data/gettext_catalog.hpp"
#include "data/induction.hpp"
#include "data/keyword.hpp"
#include "data/task.hpp"
#include "data/teacher_forcing.hpp"
#include "data/text.hpp"
#include "data/toy_tasks.hpp"
#include "data/translate_task.hpp"
#include "data/translation_pairs.hpp"
#include "data/tsv.hpp"
#include "data/vocabulary.hpp"
