// read_metrics_csv: CSVLogger's file read back, and the rows no run could have written refused.
#include "core/error.hpp"
#include "train/metrics_csv.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace attograd;

namespace {

const std::string header = "step,loss,train_accuracy,val_accuracy,lr,seconds\n";

}  // namespace

TEST_CASE("read_metrics_csv reads CSVLogger's columns, empty fields as NaN") {
    const auto table = train::read_metrics_csv(
        header + "10,2.5,0.25,,0.001,1.5\n20,1.25,0.5,0.75,0.0005,3.0\n", 20, "metrics.csv");
    REQUIRE(table.header.size() == 6);
    REQUIRE(table.column("step") != nullptr);
    CHECK(*table.column("step") == std::vector<double>{10, 20});
    CHECK(std::isnan((*table.column("val_accuracy"))[0]));
    CHECK((*table.column("val_accuracy"))[1] == 0.75);
    CHECK(table.column("missing") == nullptr);
    CHECK(train::read_metrics_csv(header, 0, "metrics.csv").columns[0].empty());  // before the first log
}

TEST_CASE("read_metrics_csv refuses rows the run cannot have written, naming the line and field") {
    const auto refused = [](const std::string& rows, const std::string& message) {
        INFO(rows);
        CHECK_THROWS_WITH_AS(train::read_metrics_csv(header + rows, 20, "run/metrics.csv"),
                             doctest::Contains(message.c_str()), IoError);
    };
    refused("30,1,0.5,,0.1,1\n", "run/metrics.csv line 2: step '30' is not a step of this run");
    refused("0,1,0.5,,0.1,1\n",
            "step '0' is not a step of this run (whole, in digits without a leading 0, from 1,");
    refused("10,1,0.5,,0.1,1\n10,1,0.5,,0.1,1\n", "line 3: step '10'");
    refused("20,1,0.5,,0.1,1\n10,1,0.5,,0.1,1\n", "after the previous row's 20");
    refused("2.5,1,0.5,,0.1,1\n", "step '2.5'");
    refused("10,1,0.5,,0.1,1\r\n", "line 2: holds a carriage return");
    refused("10,1,0.5,,0.1,1", "its last line does not end with a newline");
    refused("\n10,1,0.5,,0.1,1\n", "line 2: is empty");
    refused("1e1,1,0.5,,0.1,1\n", "step '1e1'");
    refused("10.0,1,0.5,,0.1,1\n", "step '10.0'");
    refused("010,1,0.5,,0.1,1\n", "step '010'");
    refused(std::string("10,3\0003.5,0.5,,0.1,1\n", 20), "field 'loss' is not a decimal number: '3\\x003.5'");
    CHECK_THROWS_WITH_AS(train::read_metrics_csv("step,loss\r\n10,1\r\n", 20, "m.csv"),
                         doctest::Contains("m.csv line 1: holds a carriage return"), IoError);
    refused(",1,0.5,,0.1,1\n", "step ''");
    refused("10,-1,0.5,,0.1,1\n", "line 2: field 'loss' is -1, outside [0, inf]");
    refused("10,1,5,,0.1,1\n", "field 'train_accuracy' is 5, outside [0, 1]");
    refused("10,1,0.5,-0.1,0.1,1\n", "field 'val_accuracy' is -0.1");
    refused("10,1,0.5,,-0.1,1\n", "field 'lr' is -0.1");
    refused("10,1,0.5,,0.1,-1\n", "field 'seconds' is -1");
    refused("10,1,0.5,,0.1,inf\n", "field 'seconds' is not a decimal number: 'inf'");
    refused("10,1,0.5,,0.1\n", "line 2: holds 5 comma-separated fields, the header 6");
    refused("10,0x1p3,0.5,,0.1,1\n", "field 'loss' is not a decimal number: '0x1p3'");
    refused("10,nan,0.5,,0.1,1\n", "field 'loss' is not a decimal number: 'nan'");
    refused("10,1,0.5,,0.1,5\n20,1,0.5,,0.1,4\n", "line 3: seconds 4 is less than the previous row's 5");
    CHECK_THROWS_WITH_AS(train::read_metrics_csv("loss,step\n", 20, "m.csv"),
                         doctest::Contains("m.csv: the header's first column is 'loss', not 'step'"),
                         IoError);
    CHECK_THROWS_WITH_AS(train::read_metrics_csv("", 20, "m.csv"), doctest::Contains("m.csv: is empty"),
                         IoError);
}

TEST_CASE("read_metrics_csv refuses seconds past the run's, to the millisecond rows are rounded to") {
    const std::string rows = "10,1,0.5,,0.1,1.5\n20,1,0.5,,0.1,3.25\n";
    CHECK(train::read_metrics_csv(header + rows, 20, "m.csv", 3.25).columns[0].size() == 2);
    CHECK(train::read_metrics_csv(header + rows, 20, "m.csv", 3.2496).columns[0].size() == 2);
    CHECK_THROWS_WITH_AS(
        train::read_metrics_csv(header + rows, 20, "m.csv", 3.0),
        doctest::Contains("m.csv line 3: seconds 3.25 is past the run's 3 seconds of training"), IoError);
}
