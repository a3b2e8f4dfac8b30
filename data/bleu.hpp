// Corpus BLEU (Papineni et al. 2002) over token ids or strings, with several references per
// hypothesis, and sacreBLEU's default "13a" tokenisation of detokenised text.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::data {

/// Options of corpus_bleu.
struct BleuOptions {
    /// N: n-grams of orders 1..N are counted, each weighted 1/N in the geometric mean (BLEU-4,
    /// nltk's default weights (0.25, 0.25, 0.25, 0.25)); in [1, 4].
    std::int64_t max_order = 4;
};

/// A corpus BLEU score and the counts behind it (sacreBLEU's BLEUScore fields).
struct BleuScore {
    /// BP * exp(sum_n log(p_n) / N), in [0, 1] (sacreBLEU prints 100 times this). 0 when some
    /// order has no clipped match (no smoothing, as Papineni et al. and nltk's default).
    double score = 0.0;
    double brevity_penalty = 0.0;           ///< BP = 1 if c > r, else exp(1 - r / c); 0 when c = 0
    std::array<double, 4> precisions{};     ///< p_n = matches[n-1] / totals[n-1] (0 when totals is 0)
    std::array<std::int64_t, 4> matches{};  ///< clipped n-gram matches of order n, summed over the corpus
    std::array<std::int64_t, 4> totals{};   ///< n-grams of order n in the hypotheses, summed
    std::int64_t hypothesis_length = 0;     ///< c: tokens in every hypothesis
    std::int64_t reference_length = 0;      ///< r: sum of each hypothesis' closest reference length
    /// False when no hypothesis has N tokens: p_N is then 0/0, so corpus BLEU-N is undefined
    /// (`score` is 0, as sacreBLEU and nltk report it); show it as "n/a", not as a score of 0.
    bool defined = true;
};

/// Corpus BLEU (Papineni, Roukos, Ward, Zhu 2002, "BLEU: a method for automatic evaluation of
/// machine translation", section 2): for each order n <= N, the modified precision p_n is the
/// sum over hypotheses of each n-gram's count clipped to its largest count in any one of that
/// hypothesis' references, divided by the total number of hypothesis n-grams; c is the total
/// hypothesis length and r the sum of the reference lengths closest to each hypothesis' length
/// (the shorter one on a tie, as sacreBLEU and nltk). BLEU = BP * exp(sum_n log(p_n) / N) with
/// BP = 1 when c > r, else exp(1 - r / c). Statistics are summed over the corpus before
/// dividing (corpus BLEU, not the mean of sentence scores).
///
/// hypotheses[i] are token ids; references[i] holds one or more reference id sequences of
/// hypothesis i (ids are compared as they are: decode them first if padding or <eos> could
/// appear). Throws ValueError when there is no hypothesis, the counts differ, hypothesis i has
/// no reference, or max_order is outside [1, 4].
BleuScore corpus_bleu(const std::vector<std::vector<std::vector<std::int64_t>>>& references,
                      const std::vector<std::vector<std::int64_t>>& hypotheses,
                      const BleuOptions& options = {});

/// corpus_bleu over string tokens (already tokenised, e.g. by tokenize_13a or split_whitespace);
/// tokens match when their bytes are equal. Throws as the id version.
BleuScore corpus_bleu(const std::vector<std::vector<std::vector<std::string>>>& references,
                      const std::vector<std::vector<std::string>>& hypotheses,
                      const BleuOptions& options = {});

/// corpus_bleu of detokenised lines, each tokenised by tokenize_13a: sacreBLEU's
/// `corpus_bleu(hypotheses, [refs...], tokenize="13a")` without smoothing (sacreBLEU's default
/// "exp" smoothing only changes scores where some order has no match; here those are 0).
/// references[i] are the reference lines of hypotheses[i]. Throws as the id version.
BleuScore corpus_bleu_13a(const std::vector<std::vector<std::string>>& references,
                          const std::vector<std::string>& hypotheses, const BleuOptions& options = {});

/// sacreBLEU's default tokeniser "13a" (Tokenizer13a, the tokenisation of NIST's
/// mteval-v13a.pl), in its order:
///   1. remove "<skipped>", join "-\n" (delete it), replace "\n" by a space, unescape the HTML
///      entities &quot; &amp; &lt; &gt; (each replaced in the whole line, in that order);
///   2. pad the line with one space on each side;
///   3. put spaces around each of the ASCII symbols { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * +
///      : ; < = > ? @ / (not ' - . ,);
///   4. split off . and , unless preceded by a digit, then unless followed by a digit (so
///      "3.14" and "1,000" stay whole), and split off - after a digit;
///   5. split at whitespace (Python's str.split(): ASCII whitespace, U+001C-U+001F, U+0085,
///      U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
/// Steps 3-4 are left-to-right substitutions with Python re.sub's non-overlapping matches.
/// Case is kept (sacreBLEU's default is case-sensitive). Bytes that are not UTF-8 pass through.
std::vector<std::string> tokenize_13a(std::string_view line);

}  // namespace attograd::data
