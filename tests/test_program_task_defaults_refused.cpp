// A program's task whose defaults the settings table refuses: `attograd` reports it in one
// line, naming the task and the key, and exits 2, whatever the command (--help included).
// Its own executable: the registry keeps the task for the rest of the process, and only the
// program running in this process sees it (run_in_process).
#include "cli_helpers.hpp"
#include "program_in_process.hpp"

#include "data/task.hpp"

using namespace cli_test;

TEST_CASE("a registered task with a default that is not a setting: one line and exit 2, naming it") {
    attograd::data::register_task({.name = "broken",
                                   .make = [] { return attograd::data::make_task("copy"); },
                                   .target_accuracy = 0.5,
                                   .defaults = {{"model.head", 2}}});
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"train", "--help"}, {"--help"}, {"tasks"}, {"train", "--task", "copy"}}) {
        const Outcome o = run_in_process(args);
        CHECK(o.out.empty());
        check_refused(o, {"task 'broken' defaults: 'model.head' is not a setting of attograd train"});
    }
}
