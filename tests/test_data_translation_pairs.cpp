// data/translation_pairs: filtering, grouping by source, the hash split, catalogs found on disk
// (built in the test) and, when installed, the machine's own French catalogs.
#include "data/translation_pairs.hpp"

#include "core/error.hpp"
#include "data/text.hpp"
#include "mo_builder.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

GettextCatalog catalog(const std::vector<std::pair<std::string, std::string>>& entries) {
    return parse_gettext_catalog(testing::make_mo(entries), "test.mo");
}

}  // namespace

TEST_CASE("message_problem keeps short plain messages and names why others go") {
    CHECK(message_problem("Open file", 8).empty());
    CHECK(message_problem("Ouvrir le fichier récent", 8).empty());
    CHECK(message_problem("", 8) == "is empty");
    CHECK(message_problem("Error: ", 8) == "has leading or trailing whitespace");
    CHECK(message_problem(" x", 8) == "has leading or trailing whitespace");
    CHECK(message_problem("bad \xff byte", 8) == "is not valid UTF-8");
    CHECK(message_problem("two\nlines", 8) == "holds a control character");
    for (const char* directive :
         {"%s not found", "%1 files", "{0} items", "{name}", "see $HOME", "<b>bold</b>", "100%"}) {
        CAPTURE(directive);
        CHECK(message_problem(directive, 8) == "holds a format directive or markup (% { } $ <)");
    }
    CHECK(message_problem("one two three", 3).empty());
    CHECK(message_problem("one two three four", 3) == "has more than max_tokens words");
}

TEST_CASE("translation_pairs: filtered, grouped by source, most frequent translation first") {
    const GettextCatalog first = catalog({
        {"", "Content-Type: text/plain; charset=UTF-8\n"},
        {"Invalid argument", "Argument invalide"},
        {"OK", "OK"},  // identical: left out
        {"Quit", ""},  // empty translation: left out
        {"Save", "Enregistrer"},
        {"file %s", "fichier %s"},                                               // directive: left out
        {std::string("file\0files", 10), std::string("fichier\0fichiers", 16)},  // plural: left out
        {"ctx\x04Open", "Ouvrir"},                                               // the context is dropped
    });
    const GettextCatalog second = catalog({
        {"Open", "Ouvrir"},
        {"Save", "Sauvegarder"},
        {"a b c d e", "a b c d e f g h i"},  // too long for max_tokens 8
    });
    const GettextCatalog third = catalog({{"Save", "Sauvegarder"}});
    const std::vector<TranslationPair> pairs = translation_pairs({first, second, third}, 8);
    REQUIRE(pairs.size() == 3);
    CHECK(pairs[0] == TranslationPair{"Invalid argument", {"Argument invalide"}});
    CHECK(pairs[1] == TranslationPair{"Open", {"Ouvrir"}});  // twice the same: one reference
    // "Sauvegarder" twice, "Enregistrer" once.
    CHECK(pairs[2] == TranslationPair{"Save", {"Sauvegarder", "Enregistrer"}});
    // A tie is in byte order.
    const auto tie =
        translation_pairs({catalog({{"Save", "Sauvegarder"}}), catalog({{"Save", "Enregistrer"}})}, 8);
    CHECK(tie == std::vector<TranslationPair>{{"Save", {"Enregistrer", "Sauvegarder"}}});
    CHECK_THROWS_WITH_AS(translation_pairs({first}, 0),
                         doctest::Contains("translation_pairs: max_tokens must be >= 1, got 0"), ValueError);
}

TEST_CASE("is_held_out: FNV-1a of the source, mod 100, below the percentage") {
    // fnv1a64("Open") = 0x1f7698c061c208c9 = ... 93 (mod 100); fnv1a64("Save") mod 100 = 40.
    CHECK_FALSE(is_held_out("Open", 93));
    CHECK(is_held_out("Open", 94));
    CHECK_FALSE(is_held_out("Save", 40));
    CHECK(is_held_out("Save", 41));
    CHECK_FALSE(is_held_out("Save", 0));
    CHECK(is_held_out("Save", 100));
    // Near the asked share over many sources.
    int held = 0;
    for (int i = 0; i < 10000; ++i) held += is_held_out(fmt::format("message {}", i), 10);
    CHECK(held > 800);
    CHECK(held < 1200);
    CHECK_THROWS_WITH_AS(is_held_out("x", 101),
                         doctest::Contains("held_out_percent must be in [0, 100], got 101"), ValueError);
}

TEST_CASE("catalog_pairs reads every .mo of LANG/LC_MESSAGES and splits by source") {
    const testing::TempDir dir;
    const auto messages = dir.path() / "xx" / "LC_MESSAGES";
    std::filesystem::create_directories(messages);
    std::vector<std::pair<std::string, std::string>> first, second;
    for (int i = 0; i < 60; ++i)
        first.emplace_back(fmt::format("word {:03}", i), fmt::format("mot {:03}", i));
    for (int i = 40; i < 100; ++i)
        second.emplace_back(fmt::format("word {:03}", i), fmt::format("mot {:03}", i));
    testing::write_bytes(messages / "b.mo", testing::make_mo(first));
    testing::write_bytes(messages / "a.mo", testing::make_mo(second, true));
    testing::write_bytes(messages / "notes.txt", "not a catalog");
    const CatalogPairs pairs =
        catalog_pairs({.language = "xx", .locale_dir = dir.path(), .held_out_percent = 30});
    CHECK(pairs.catalogs == std::vector<std::filesystem::path>{messages / "a.mo", messages / "b.mo"});
    CHECK(pairs.train.size() + pairs.held_out.size() == 100);
    CHECK(pairs.held_out.size() > 10);
    CHECK(pairs.held_out.size() < 50);
    for (const auto& pair : pairs.held_out) CHECK(is_held_out(pair.source, 30));
    for (const auto& pair : pairs.train) CHECK_FALSE(is_held_out(pair.source, 30));
    CHECK(std::is_sorted(pairs.train.begin(), pairs.train.end(),
                         [](const auto& a, const auto& b) { return a.source < b.source; }));

    const std::string missing =
        "no gettext catalogs for language yy: " + (dir.path() / "yy" / "LC_MESSAGES").string() +
        " is not a directory";
    CHECK_THROWS_WITH_AS(catalog_pairs({.language = "yy", .locale_dir = dir.path()}),
                         doctest::Contains(missing.c_str()), IoError);
    std::filesystem::create_directories(dir.path() / "zz" / "LC_MESSAGES");
    CHECK_THROWS_WITH_AS(catalog_pairs({.language = "zz", .locale_dir = dir.path()}),
                         doctest::Contains("LC_MESSAGES holds no .mo file"), IoError);
    for (const char* language : {"", "..", "../xx", "fr/LC_MESSAGES"}) {
        CAPTURE(language);
        CHECK_THROWS_WITH_AS(catalog_pairs({.language = language, .locale_dir = dir.path()}),
                             doctest::Contains("is not a locale name"), ValueError);
    }
    CHECK_THROWS_WITH_AS(catalog_pairs({.language = "xx", .locale_dir = dir.path(), .max_tokens = 0}),
                         doctest::Contains("catalog_pairs: max_tokens must be >= 1"), ValueError);
    testing::write_bytes(messages / "c.mo", "A text file, long enough for the header, is not a catalog.");
    const std::string not_mo = (messages / "c.mo").string() + ": not a .mo file: magic number";
    CHECK_THROWS_WITH_AS(catalog_pairs({.language = "xx", .locale_dir = dir.path()}),
                         doctest::Contains(not_mo.c_str()), IoError);
}

TEST_CASE("translation_examples: word level by the 13a tokeniser, character level by character") {
    const std::vector<TranslationPair> pairs{
        {"Invalid argument.", {"Argument invalide.", "Mauvais argument."}}, {"Open", {"Ouvrir"}}};
    const std::vector<Example> words = translation_examples(pairs, TokenLevel::Word);
    REQUIRE(words.size() == 2);
    CHECK(words[0] == Example{{"Invalid", "argument", "."}, {"Argument", "invalide", "."}});
    CHECK(words[1] == Example{{"Open"}, {"Ouvrir"}});
    const std::vector<Example> chars = translation_examples({{"Où é", {"Where é"}}}, TokenLevel::Char);
    CHECK(chars == std::vector<Example>{{{"O", "ù", " ", "é"}, {"W", "h", "e", "r", "e", " ", "é"}}});
    CHECK_THROWS_WITH_AS(translation_examples({{"Open", {}}}, TokenLevel::Word),
                         doctest::Contains("translation_examples: \"Open\" has no reference"), ValueError);
}

TEST_CASE("catalog_pairs over this machine's French catalogs") {
    const std::filesystem::path french = "/usr/share/locale/fr/LC_MESSAGES";
    std::error_code error;
    bool any = false;
    for (std::filesystem::directory_iterator it(french, error), end; !error && it != end; it.increment(error))
        any = any || it->path().extension() == ".mo";
    if (!any) {
        MESSAGE("skipped: no .mo file in " << french.string());
        return;
    }
    const CatalogPairs pairs = catalog_pairs({.language = "fr"});
    const std::size_t total = pairs.train.size() + pairs.held_out.size();
    MESSAGE(pairs.catalogs.size() << " catalogs, " << pairs.train.size() << " training and "
                                  << pairs.held_out.size() << " held-out sources");
    CHECK(total >= 100);
    CHECK(pairs.held_out.size() * 100 > total * 5);  // about 10 %
    CHECK(pairs.held_out.size() * 100 < total * 15);
    std::set<std::string> sources;
    for (const auto* split : {&pairs.train, &pairs.held_out}) {
        for (const TranslationPair& pair : *split) {
            CHECK(sources.insert(pair.source).second);  // deduplicated, and in one split only
            CHECK(message_problem(pair.source, 8).empty());
            REQUIRE_FALSE(pair.references.empty());
            for (const std::string& reference : pair.references) {
                CHECK(message_problem(reference, 8).empty());
                CHECK(reference != pair.source);
            }
        }
    }
}
