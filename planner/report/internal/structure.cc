#include "planner/report/internal/structure.h"

#include <cctype>
#include <string>

namespace moetune::planner::report_internal {
namespace {

bool IsVoid(const std::string& tag) {
  return tag == "meta" || tag == "br" || tag == "hr" || tag == "img" ||
         tag == "input" || tag == "link" || tag == "col";
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static const std::pair<const char*, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'},
        {"&quot;", '"'}, {"&#39;", '\''}};
    bool done = false;
    for (const auto& [name, c] : kEntities) {
      const std::string_view n(name);
      if (s.substr(i, n.size()) == n) {
        out += c;
        i += n.size() - 1;
        done = true;
        break;
      }
    }
    if (!done) out += '&';
  }
  return out;
}

}  // namespace

bool Element::Marked() const {
  for (const auto& [k, v] : attrs) {
    if (k == "id" || k.rfind("data-", 0) == 0) return true;
  }
  return false;
}

std::string Element::Attr(std::string_view name) const {
  for (const auto& [k, v] : attrs) {
    if (k == name) return v;
  }
  return "";
}

bool Element::Has(std::string_view name) const {
  for (const auto& [k, v] : attrs) {
    if (k == name) return true;
  }
  return false;
}

std::vector<Element> ParseElements(std::string_view html) {
  std::vector<Element> out;
  struct Open {
    std::string tag;
    bool marked;
  };
  std::vector<Open> stack;
  int marked_depth = 0;
  size_t i = 0;
  const size_t n = html.size();
  auto lower_name = [&](size_t* pos) {
    std::string name;
    while (*pos < n && (std::isalnum(static_cast<unsigned char>(html[*pos])) ||
                        html[*pos] == '-' || html[*pos] == ':' ||
                        html[*pos] == '_')) {
      name += static_cast<char>(
          std::tolower(static_cast<unsigned char>(html[*pos])));
      ++*pos;
    }
    return name;
  };
  while (i < n) {
    if (html[i] != '<') {
      ++i;
      continue;
    }
    if (html.substr(i, 4) == "<!--") {
      const size_t end = html.find("-->", i + 4);
      i = end == std::string_view::npos ? n : end + 3;
      continue;
    }
    if (i + 1 < n && (html[i + 1] == '!' || html[i + 1] == '?')) {
      const size_t end = html.find('>', i);
      i = end == std::string_view::npos ? n : end + 1;
      continue;
    }
    if (i + 1 < n && html[i + 1] == '/') {
      size_t p = i + 2;
      const std::string name = lower_name(&p);
      for (size_t k = stack.size(); k > 0; --k) {
        if (stack[k - 1].tag == name) {
          while (stack.size() >= k) {
            if (stack.back().marked) --marked_depth;
            stack.pop_back();
          }
          break;
        }
      }
      const size_t end = html.find('>', p);
      i = end == std::string_view::npos ? n : end + 1;
      continue;
    }
    size_t p = i + 1;
    Element e;
    e.tag = lower_name(&p);
    if (e.tag.empty()) {
      ++i;
      continue;
    }
    bool self_closing = false;
    while (p < n) {
      while (p < n && std::isspace(static_cast<unsigned char>(html[p]))) ++p;
      if (p >= n) break;
      if (html[p] == '>') {
        ++p;
        break;
      }
      if (html[p] == '/') {
        self_closing = true;
        ++p;
        continue;
      }
      std::string key = lower_name(&p);
      if (key.empty()) {  // junk: skip a character
        ++p;
        continue;
      }
      std::string value;
      if (p < n && html[p] == '=') {
        ++p;
        if (p < n && (html[p] == '"' || html[p] == '\'')) {
          const char q = html[p];
          const size_t end = html.find(q, p + 1);
          const size_t stop = end == std::string_view::npos ? n : end;
          value = Unescape(html.substr(p + 1, stop - p - 1));
          p = stop + 1;
        } else {
          const size_t start = p;
          while (p < n && !std::isspace(static_cast<unsigned char>(html[p])) &&
                 html[p] != '>') {
            ++p;
          }
          value = Unescape(html.substr(start, p - start));
        }
      }
      e.attrs.emplace_back(std::move(key), std::move(value));
    }
    i = p;
    e.depth = marked_depth;
    const bool marked = e.Marked();
    const std::string tag = e.tag;
    out.push_back(std::move(e));
    if (tag == "style" || tag == "script") {  // raw text: skip to its end
      const size_t end = html.find("</" + tag, i);
      i = end == std::string_view::npos ? n : end;
      continue;
    }
    if (!self_closing && !IsVoid(tag)) {
      stack.push_back({tag, marked});
      if (marked) ++marked_depth;
    }
  }
  return out;
}

std::string ExtractStructure(std::string_view html) {
  std::string out;
  for (const Element& e : ParseElements(html)) {
    if (!e.Marked()) continue;
    out.append(2 * static_cast<size_t>(e.depth), ' ');
    out += e.tag;
    const std::string id = e.Attr("id");
    if (e.Has("id")) out += "#" + id;
    for (const auto& [k, v] : e.attrs) {
      if (k.rfind("data-", 0) != 0) continue;
      out += " " + k + "=" + v;
    }
    out += "\n";
  }
  return out;
}

}  // namespace moetune::planner::report_internal
