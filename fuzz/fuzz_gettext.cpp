// libFuzzer target: the gettext .mo reader (parse_gettext_catalog, then translation_pairs over what
// it read) must return or throw attograd::Error on any bytes, reading nothing outside them.
#include "data/gettext_catalog.hpp"
#include "data/translation_pairs.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // A copy of exactly `size` bytes, so that a read past the end is a heap overflow.
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        namespace data = attograd::data;
        const data::GettextCatalog catalog = data::parse_gettext_catalog(bytes, "fuzz.mo");
        data::translation_pairs({catalog}, 8);
    } catch (const attograd::Error&) {
    }
    return 0;
}
