// libFuzzer target: the TSV reader (TsvDataset::parse, then the data task built from it) must return
// or throw attograd::Error on any text. The first byte picks character or word tokens.
#include "data/tsv.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool chars = (data[0] & 1) != 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        namespace data = attograd::data;
        const auto dataset = data::TsvDataset::parse(text, chars, "fuzz.tsv");
        const auto round_trip =
            data::TsvDataset::parse(data::to_tsv(dataset.examples(), chars), chars, "again");
        if (round_trip.examples() != dataset.examples()) __builtin_trap();  // to_tsv must invert parse
        data::make_data_task(dataset);
    } catch (const attograd::Error&) {
    }
    return 0;
}
