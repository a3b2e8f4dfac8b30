// data/gettext_catalog: .mo files built byte by byte read back in both byte orders; truncated,
// corrupted and hostile bytes refused with IoError and never read out of bounds.
#include "data/gettext_catalog.hpp"

#include "core/error.hpp"
#include "mo_builder.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstring>

using namespace attograd;
using namespace attograd::data;

namespace {

const std::vector<std::pair<std::string, std::string>> entries{
    {"", "Content-Type: text/plain; charset=UTF-8\n"},
    {"Save", "Enregistrer"},
    {std::string("file\0files", 10), std::string("fichier\0fichiers", 16)},
    {"menu\x04Open", "Ouvrir"},
};

// The 32-bit number `value` written at `offset` of `bytes`, little-endian.
void poke(std::string& bytes, std::size_t offset, std::uint32_t value) {
    for (int k = 0; k < 4; ++k)
        bytes[offset + static_cast<std::size_t>(k)] = static_cast<char>((value >> (8 * k)) & 0xff);
}

}  // namespace

TEST_CASE("parse_gettext_catalog reads header, context, plural forms, in either byte order") {
    for (const bool big_endian : {false, true}) {
        CAPTURE(big_endian);
        const GettextCatalog catalog =
            parse_gettext_catalog(testing::make_mo(entries, big_endian), "test.mo");
        CHECK(catalog.header == "Content-Type: text/plain; charset=UTF-8\n");
        REQUIRE(catalog.messages.size() == 3);
        CHECK(catalog.messages[0].source == "Save");
        CHECK(catalog.messages[0].context.empty());
        CHECK(catalog.messages[0].source_plural.empty());
        CHECK(catalog.messages[0].translations == std::vector<std::string>{"Enregistrer"});
        CHECK(catalog.messages[1].source == "file");
        CHECK(catalog.messages[1].source_plural == "files");
        CHECK(catalog.messages[1].translations == std::vector<std::string>{"fichier", "fichiers"});
        CHECK(catalog.messages[2].context == "menu");
        CHECK(catalog.messages[2].source == "Open");
        CHECK(catalog.messages[2].translations == std::vector<std::string>{"Ouvrir"});
    }
    // No entries at all: an empty catalog, no header.
    const GettextCatalog empty = parse_gettext_catalog(testing::make_mo({}), "empty.mo");
    CHECK(empty.header.empty());
    CHECK(empty.messages.empty());
}

TEST_CASE("parse_gettext_catalog refuses what is not a .mo file, naming the file and the problem") {
    const std::string good = testing::make_mo(entries);
    CHECK_THROWS_WITH_AS(
        parse_gettext_catalog(good.substr(0, 27), "cut.mo"),
        doctest::Contains("cut.mo: not a .mo file: 27 bytes, shorter than the 28-byte header"), IoError);
    std::string bad_magic = good;
    poke(bad_magic, 0, 0x12345678);
    CHECK_THROWS_WITH_AS(
        parse_gettext_catalog(bad_magic, "x.mo"),
        doctest::Contains("x.mo: not a .mo file: magic number 0x12345678, expected 0x950412de"), IoError);
    std::string revision = good;
    poke(revision, 4, 0x00020000);
    CHECK_THROWS_WITH_AS(parse_gettext_catalog(revision, "r.mo"),
                         doctest::Contains("r.mo: unsupported .mo file revision 2.0"), IoError);
    std::string huge_count = good;
    poke(huge_count, 8, 0xffffffff);
    CHECK_THROWS_WITH_AS(
        parse_gettext_catalog(huge_count, "n.mo"),
        doctest::Contains("n.mo: corrupt .mo file: the table of originals (4294967295 entries at "
                          "offset 28) passes the end of the file"),
        IoError);
    std::string table_offset = good;
    poke(table_offset, 16, 0xfffffff0);
    CHECK_THROWS_WITH_AS(parse_gettext_catalog(table_offset, "t.mo"),
                         doctest::Contains("the table of translations (4 entries at offset 4294967280)"),
                         IoError);
    // Original 1 ("Save") said to be 0xffffffff bytes long: its end is past the file's.
    std::string string_length = good;
    poke(string_length, 28 + 8, 0xffffffff);
    CHECK_THROWS_WITH_AS(
        parse_gettext_catalog(string_length, "s.mo"),
        doctest::Contains("s.mo: corrupt .mo file: original string 1 (4294967295 bytes at offset"), IoError);
    std::string string_offset = good;
    poke(string_offset, 28 + 8 * 4 + 8 * 2 + 4, static_cast<std::uint32_t>(good.size()));
    CHECK_THROWS_WITH_AS(
        parse_gettext_catalog(string_offset, "o.mo"),
        doctest::Contains(fmt::format("translation string 2 (16 bytes at offset {})", good.size()).c_str()),
        IoError);
}

TEST_CASE("parse_gettext_catalog: every truncation and every flipped byte parses or throws IoError") {
    // Under ASan this also shows that no input reads outside the bytes given.
    const std::string good = testing::make_mo(entries, true);
    int refused = 0;
    for (std::size_t length = 0; length < good.size(); ++length) {
        // A copy of exactly `length` bytes, so that a read past its end is a heap overflow.
        const std::string cut = good.substr(0, length);
        try {
            parse_gettext_catalog(cut, "cut.mo");
        } catch (const IoError& error) {
            CHECK(std::strstr(error.what(), "cut.mo: ") == error.what());
            ++refused;
        }
    }
    // Cut inside the header or the tables, or before the last string's end: every cut is refused
    // (only the final NUL is not needed).
    CHECK(refused == static_cast<int>(good.size()) - 1);
    for (std::size_t at = 0; at < good.size(); ++at) {
        for (const unsigned char flip : {0x01, 0x80, 0xff}) {
            std::string corrupt = good;
            corrupt[at] = static_cast<char>(static_cast<unsigned char>(corrupt[at]) ^ flip);
            try {
                const GettextCatalog catalog = parse_gettext_catalog(corrupt, "flip.mo");
                CHECK(catalog.messages.size() <= entries.size());
            } catch (const IoError& error) {
                CHECK(std::strstr(error.what(), "flip.mo: ") == error.what());
            }
        }
    }
}

TEST_CASE("read_gettext_catalog reads a file, and refuses a missing path or a FIFO by name") {
    const testing::TempDir dir;
    testing::write_bytes(dir / "fr.mo", testing::make_mo(entries));
    CHECK(read_gettext_catalog(dir / "fr.mo").messages.size() == 3);
    CHECK_THROWS_WITH_AS(read_gettext_catalog(dir / "absent.mo"), doctest::Contains("absent.mo"), IoError);
    REQUIRE(::mkfifo((dir / "fifo.mo").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_gettext_catalog(dir / "fifo.mo"), doctest::Contains("fifo.mo"), IoError);
}
