// Dates: a proleptic Gregorian calendar, many human date formats, and the `dates` task
// (human date -> ISO YYYY-MM-DD, character level).
#pragma once

#include "data/task.hpp"

#include <memory>
#include <optional>
#include <string>

namespace attograd::data {

/// A calendar date.
struct Date {
    int year = 2000;  ///< e.g. 2024
    int month = 1;    ///< 1-12
    int day = 1;      ///< 1-31
    /// Same year, month and day.
    bool operator==(const Date&) const = default;
};

/// Whether `year` is a Gregorian leap year.
bool is_leap_year(int year);
/// Days in `month` of `year`.
int days_in_month(int year, int month);
/// Whether the date exists.
bool is_valid(const Date& date);
/// Day of the week, 0 = Monday ... 6 = Sunday (from the day count since 1970-01-01, which was
/// a Thursday; Hinnant's days_from_civil).
int weekday(const Date& date);
/// "1999-03-25".
std::string to_iso(const Date& date);

/// Number of human formats format_date knows.
int date_format_count();
/// `date` written in human format `format` (0 <= format < date_format_count()), e.g.
/// "thursday, march 25 1999", "25/03/99", "Mar 25 1999", "1999.03.25", "25 March 1999".
/// Two-digit years stand for 1950-2049.
std::string format_date(const Date& date, int format);
/// Reads any text format_date writes (case-insensitive; weekday names are checked against the
/// date). nullopt when the text is not such a date or names the wrong weekday.
std::optional<Date> parse_date(const std::string& text);

/// The `dates` task: a date in 1950-2049 in one of the human formats -> its ISO form.
std::unique_ptr<Task> make_dates_task();
/// dates' registry entry: target 95 %; two encoder and two decoder layers of 4 heads, 4000 steps.
TaskEntry dates_task_entry();

}  // namespace attograd::data
