// Small helpers for writing HTML and SVG text: escaping and number
// formatting. Private to planner/report.
#pragma once

#include <string>
#include <string_view>

namespace moetune::planner::report_internal {

// Escapes text for an HTML text node or a quoted attribute value: & < > " '
// become entities; control characters other than tab/newline become U+FFFD
// (they are invalid in HTML and could break the page).
std::string Escape(std::string_view text);

// A number for a data-* attribute: shortest round-trip-stable form with 6
// significant digits ("%.6g"), so golden files do not depend on the last
// bits of a double. Non-finite values print as "nan"/"inf".
std::string DataNum(double value);

// A coordinate in SVG user units, two decimals ("12.5", "0", "-3.25").
std::string Px(double value);

// Human-readable figures for the page text.
std::string HumanSeconds(double seconds);  // "1.234 s", "85.2 ms", "420 us"
std::string HumanGiB(double bytes);        // "71.3 GiB"
std::string HumanCount(double value);      // "12,345" (rounded)
std::string HumanPercent(double fraction, int decimals = 1);  // "41.2%"

}  // namespace moetune::planner::report_internal
