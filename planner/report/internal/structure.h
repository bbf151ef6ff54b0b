// Test helper: reads the structure of a report page back, for golden tests
// and assertions. Not an HTML parser for arbitrary pages: it understands the
// subset the report writes (quoted attributes, void elements, <style>).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moetune::planner::report_internal {

struct Element {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attrs;  // unescaped
  int depth = 0;  // number of ancestors that have an id or data-* attribute
  bool Marked() const;  // has an id or a data-* attribute
  // The attribute's value, or "" when absent.
  std::string Attr(std::string_view name) const;
  bool Has(std::string_view name) const;
};

// Every element in document order.
std::vector<Element> ParseElements(std::string_view html);

// One line per marked element: two spaces per depth, then
// "tag#id data-a=value data-b=value" (id and data-* attributes in document
// order, other attributes omitted).
std::string ExtractStructure(std::string_view html);

}  // namespace moetune::planner::report_internal
