// inspect::fraction_text: a fraction below 1 never reads as the whole, one above 0 never as none.
#include "inspect/fraction_text.hpp"

#include <doctest/doctest.h>

#include <cmath>

using attograd::inspect::fraction_text;

TEST_CASE("fraction_text rounds to nearest inside the range") {
    CHECK(fraction_text(0.5, 3) == "0.500");
    CHECK(fraction_text(0.12345, 3) == "0.123");
    CHECK(fraction_text(0.6789, 1, 100) == "67.9");
    CHECK(fraction_text(0.8765, 2) == "0.88");
}

TEST_CASE("fraction_text shows the bounds only for the bounds themselves") {
    CHECK(fraction_text(1.0, 1, 100) == "100.0");
    CHECK(fraction_text(0.0, 3) == "0.000");
    CHECK(fraction_text(0.9997, 1, 100) == "99.9");
    CHECK(fraction_text(0.997, 2) == "0.99");
    CHECK(fraction_text(0.99999, 3) == "0.999");
    CHECK(fraction_text(0.0004, 3) == "0.001");
    CHECK(fraction_text(0.00001, 1, 100) == "0.1");
}

TEST_CASE("fraction_text shows values outside [0, 1] and NaN as they are") {
    CHECK(fraction_text(1.5, 1) == "1.5");
    CHECK(fraction_text(-0.25, 2) == "-0.25");
    CHECK(fraction_text(std::nan(""), 2) == "nan");
}
