#include "planner/report/internal/html.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/units.h"

namespace moetune::planner::report_internal {

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7f) {
          out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        } else {
          out += c;
        }
      }
    }
  }
  return out;
}

std::string DataNum(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";  // no "-0"
  return absl::StrFormat("%.6g", value);
}

std::string Px(double value) {
  if (!std::isfinite(value)) return "0";
  const double r = std::round(value * 100.0) / 100.0;
  if (r == 0) return "0";
  std::string s = absl::StrFormat("%.2f", r);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string HumanSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1.0) return absl::StrFormat("%.3f s", seconds);
  if (a >= units::kMillisecond) {
    return absl::StrFormat("%.1f ms", seconds / units::kMillisecond);
  }
  return absl::StrFormat("%.0f us", seconds / units::kMicrosecond);
}

std::string HumanGiB(double bytes) {
  return absl::StrFormat("%.1f GiB", bytes / units::kGiB);
}

std::string HumanCount(double value) {
  if (!std::isfinite(value)) return "n/a";
  const bool negative = value < 0;
  auto n = static_cast<uint64_t>(std::llround(std::fabs(value)));
  std::string digits = absl::StrCat(n);
  std::string out;
  const int len = static_cast<int>(digits.size());
  for (int i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string HumanPercent(double fraction, int decimals) {
  return absl::StrFormat("%.*f%%", decimals, fraction * 100.0);
}

}  // namespace moetune::planner::report_internal
