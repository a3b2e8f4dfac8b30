// Dates: a proleptic Gregorian calendar, many human date formats, and the `dates` task.
#include "data/dates.hpp"

#include "data/text.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>

namespace attograd::data {

namespace {

constexpr std::array<const char*, 12> month_names = {"january",   "february", "march",    "april",
                                                     "may",       "june",     "july",     "august",
                                                     "september", "october",  "november", "december"};
constexpr std::array<const char*, 7> weekday_names = {"monday", "tuesday",  "wednesday", "thursday",
                                                      "friday", "saturday", "sunday"};

std::string capitalize(std::string word) {
    if (!word.empty()) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    return word;
}

std::string upper(std::string word) {
    for (auto& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return word;
}

std::string lower(std::string word) {
    for (auto& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return word;
}

std::string ordinal_suffix(int day) {
    if (day % 100 >= 11 && day % 100 <= 13) return "th";
    switch (day % 10) {
        case 1:
            return "st";
        case 2:
            return "nd";
        case 3:
            return "rd";
        default:
            return "th";
    }
}

/// The pieces a format is written from.
struct Parts {
    std::string month, mon, weekday, wd, d, dd, mm, yyyy, yy, ord;
};

Parts parts_of(const Date& date) {
    Parts p;
    p.month = month_names[static_cast<std::size_t>(date.month - 1)];
    p.mon = p.month.substr(0, 3);
    p.weekday = weekday_names[static_cast<std::size_t>(weekday(date))];
    p.wd = p.weekday.substr(0, 3);
    p.d = std::to_string(date.day);
    p.dd = fmt::format("{:02}", date.day);
    p.mm = fmt::format("{:02}", date.month);
    p.yyyy = std::to_string(date.year);
    p.yy = fmt::format("{:02}", date.year % 100);
    p.ord = ordinal_suffix(date.day);
    return p;
}

using Formatter = std::string (*)(const Parts&);

constexpr std::array<Formatter, 15> formats = {
    [](const Parts& p) {
        return p.weekday + ", " + p.month + " " + p.d + " " + p.yyyy;
    },                                                                              // thursday, march 25 1999
    [](const Parts& p) { return p.dd + "/" + p.mm + "/" + p.yy; },                  // 25/03/99
    [](const Parts& p) { return capitalize(p.mon) + " " + p.d + " " + p.yyyy; },    // Mar 25 1999
    [](const Parts& p) { return p.yyyy + "." + p.mm + "." + p.dd; },                // 1999.03.25
    [](const Parts& p) { return p.d + " " + capitalize(p.month) + " " + p.yyyy; },  // 25 March 1999
    [](const Parts& p) { return p.month + " " + p.d + ", " + p.yyyy; },             // march 25, 1999
    [](const Parts& p) { return p.dd + "." + p.mm + "." + p.yyyy; },                // 25.03.1999
    [](const Parts& p) { return p.wd + " " + p.d + " " + p.mon + " " + p.yyyy; },   // thu 25 mar 1999
    [](const Parts& p) {
        return capitalize(p.month) + " " + p.d + p.ord + ", " + p.yyyy;
    },                                                              // March 25th, 1999
    [](const Parts& p) { return p.d + " " + p.mon + " " + p.yy; },  // 25 mar 99
    [](const Parts& p) {
        return capitalize(p.weekday) + " " + p.d + " " + capitalize(p.month) + " " + p.yyyy;
    },                                                                // Thursday 25 March 1999
    [](const Parts& p) { return p.yyyy + "/" + p.mm + "/" + p.dd; },  // 1999/03/25
    [](const Parts& p) {
        return "the " + p.d + p.ord + " of " + p.month + " " + p.yyyy;
    },                                                                        // the 25th of march 1999
    [](const Parts& p) { return p.dd + "-" + upper(p.mon) + "-" + p.yyyy; },  // 25-MAR-1999
    [](const Parts& p) {
        return capitalize(p.wd) + ", " + p.d + " " + capitalize(p.mon) + " " + p.yyyy;
    },  // Thu, 25 Mar 1999
};

/// Index of a full or three-letter name in `names`, or -1.
template <std::size_t N>
int find_name(const std::array<const char*, N>& names, const std::string& word) {
    for (std::size_t i = 0; i < N; ++i) {
        const std::string name = names[i];
        if (word == name || word == name.substr(0, 3)) return static_cast<int>(i);
    }
    return -1;
}

class DatesTask final : public GeneratedTask {
public:
    DatesTask() {
        info_.name = "dates";
        info_.description = "normalise a human date (15 formats, 1950-2049) to ISO, character level";
        info_.example = "thursday, march 25 1999 -> 1999-03-25";
        info_.metric = Metric::Sequence;
        info_.char_level = true;
        info_.max_source_len = 32;  // "wednesday, september 30 2049" and the like
        info_.max_target_len = 10;
        info_.min_source_len = 8;  // "1 mar 99", "25/03/99"
        make_held_out(1005);
    }

    std::vector<std::string> symbols() const override {
        std::vector<std::string> out;
        for (const char* chars :
             {" ,./-", "0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}) {
            for (const char* c = chars; *c != '\0'; ++c) out.emplace_back(1, *c);
        }
        return out;
    }

    std::optional<std::vector<std::string>> solve(const std::vector<std::string>& source) const override {
        const auto date = parse_date(join(source, ""));
        if (!date) return std::nullopt;
        return split_chars(to_iso(*date));
    }

protected:
    Example generate(Generator& generator) const override {
        Date date;
        date.year = static_cast<int>(generator.randint(1950, 2050));
        date.month = static_cast<int>(generator.randint(1, 13));
        date.day = static_cast<int>(generator.randint(1, days_in_month(date.year, date.month) + 1));
        const auto format = static_cast<int>(generator.randint(0, date_format_count()));
        return Example{split_chars(format_date(date, format)), split_chars(to_iso(date))};
    }
};

}  // namespace

bool is_leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
    constexpr std::array<int, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && is_leap_year(year)) return 29;
    return days[static_cast<std::size_t>(month - 1)];
}

bool is_valid(const Date& date) {
    return date.month >= 1 && date.month <= 12 && date.day >= 1 &&
           date.day <= days_in_month(date.year, date.month);
}

int weekday(const Date& date) {
    // days_from_civil (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    const int y = date.year - (date.month <= 2 ? 1 : 0);
    const int era = (y >= 0 ? y : y - 399) / 400;
    const int yoe = y - era * 400;
    const int mp = (date.month + 9) % 12;
    const int doy = (153 * mp + 2) / 5 + date.day - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const long days = static_cast<long>(era) * 146097 + doe - 719468;  // since 1970-01-01, a Thursday
    return static_cast<int>(((days + 3) % 7 + 7) % 7);
}

std::string to_iso(const Date& date) {
    return fmt::format("{:04}-{:02}-{:02}", date.year, date.month, date.day);
}

int date_format_count() { return static_cast<int>(formats.size()); }

std::string format_date(const Date& date, int format) {
    return formats.at(static_cast<std::size_t>(format))(parts_of(date));
}

std::optional<Date> parse_date(const std::string& text) {
    // Split into lower-case words and digit runs; punctuation separates.
    std::vector<std::string> words;
    std::vector<std::string> numbers;
    int month = -1;
    int named_weekday = -1;
    const std::string s = lower(text);
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (std::isdigit(c)) {
            std::size_t j = i;
            while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
            numbers.push_back(s.substr(i, j - i));
            std::size_t k = j;  // an ordinal suffix right after the digits
            while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
            if (k > j) {
                const std::string suffix = s.substr(j, k - j);
                if (suffix != ordinal_suffix(std::stoi(numbers.back()) % 100)) return std::nullopt;
            }
            i = k;
        } else if (std::isalpha(c)) {
            std::size_t j = i;
            while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
            const std::string word = s.substr(i, j - i);
            i = j;
            if (word == "the" || word == "of") continue;
            if (const int m = find_name(month_names, word); m >= 0 && month < 0) {
                month = m + 1;
            } else if (const int w = find_name(weekday_names, word); w >= 0 && named_weekday < 0) {
                named_weekday = w;
            } else {
                return std::nullopt;
            }
        } else if (c == ' ' || c == ',' || c == '.' || c == '/' || c == '-') {
            ++i;
        } else {
            return std::nullopt;
        }
    }
    const auto year_of = [](const std::string& digits) -> int {
        if (digits.size() == 4) return std::stoi(digits);
        if (digits.size() == 2) {
            const int yy = std::stoi(digits);
            return yy >= 50 ? 1900 + yy : 2000 + yy;
        }
        return -1;
    };
    Date date;
    for (const auto& number : numbers) {
        if (number.size() > 4) return std::nullopt;
    }
    if (month > 0) {
        if (numbers.size() != 2 || numbers[0].size() > 2) return std::nullopt;
        date = {year_of(numbers[1]), month, std::stoi(numbers[0])};
    } else {
        if (numbers.size() != 3 || named_weekday >= 0) return std::nullopt;
        if (numbers[0].size() == 4) {
            date = {std::stoi(numbers[0]), std::stoi(numbers[1]), std::stoi(numbers[2])};
        } else {
            date = {year_of(numbers[2]), std::stoi(numbers[1]), std::stoi(numbers[0])};
        }
    }
    if (date.year < 0 || !is_valid(date)) return std::nullopt;
    if (named_weekday >= 0 && named_weekday != weekday(date)) return std::nullopt;
    return date;
}

std::unique_ptr<Task> make_dates_task() { return std::make_unique<DatesTask>(); }

TaskEntry dates_task_entry() {
    return {.name = "dates",
            .make = make_dates_task,
            .target_accuracy = 0.95,
            .defaults = {
                {"model.layers", 2}, {"model.decoder_layers", 2}, {"model.heads", 4}, {"train.steps", 4000}}};
}

}  // namespace attograd::data
