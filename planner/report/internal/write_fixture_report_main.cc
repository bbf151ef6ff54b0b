// Writes the toy fixture's report to argv[1] (for the Chromium test).
#include <fstream>
#include <iostream>

#include "planner/report/internal/report_fixture.h"
#include "planner/report/report.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_fixture_report OUT.html\n";
    return 2;
  }
  auto html = moetune::planner::RenderPlanReport(
      moetune::planner::report_internal::ToyMoeReport());
  if (!html.ok()) {
    std::cerr << html.status().message() << "\n";
    return 1;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << *html;
  return out ? 0 : 1;
}
