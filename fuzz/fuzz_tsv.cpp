// libFuzzer target: the TSV reader (parse_tsv, then the data task built from it) must return
// or throw attograd::Error on any text. The first byte picks character or word tokens.
#include "data_task.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool chars = (data[0] & 1) != 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        auto examples = attograd::cli::parse_tsv(text, chars, "fuzz.tsv");
        const auto round_trip =
            attograd::cli::parse_tsv(attograd::cli::to_tsv(examples, chars), chars, "again");
        if (round_trip.size() != examples.size()) __builtin_trap();  // to_tsv must invert parse_tsv
        attograd::cli::make_data_task(std::move(examples), chars);
    } catch (const attograd::Error&) {
    }
    return 0;
}
