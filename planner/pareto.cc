#include "planner/pareto.h"

#include <algorithm>

namespace moetune::planner {
namespace {

// a is at least as good as b on both axes (ties go to the smaller id).
bool Covers(const ParetoPoint& a, const ParetoPoint& b) {
  if (a.memory_bytes > b.memory_bytes || a.throughput < b.throughput) {
    return false;
  }
  if (a.memory_bytes == b.memory_bytes && a.throughput == b.throughput) {
    return a.id <= b.id;
  }
  return true;
}

}  // namespace

bool ParetoFront::Offer(const ParetoPoint& p) {
  // The front point with the largest memory <= p's has the highest
  // throughput among those; it alone decides whether p is covered.
  auto it = std::upper_bound(
      points_.begin(), points_.end(), p.memory_bytes,
      [](double m, const ParetoPoint& q) { return m < q.memory_bytes; });
  if (it != points_.begin() && Covers(*std::prev(it), p)) return false;
  // Points with memory >= p's and throughput <= p's are now covered by p;
  // they sit contiguously from the first point with memory >= p's.
  auto first = std::lower_bound(
      points_.begin(), points_.end(), p.memory_bytes,
      [](const ParetoPoint& q, double m) { return q.memory_bytes < m; });
  auto last = first;
  while (last != points_.end() && Covers(p, *last)) ++last;
  first = points_.erase(first, last);
  points_.insert(first, p);
  return true;
}

void ParetoFront::Merge(const ParetoFront& other) {
  for (const ParetoPoint& p : other.points_) Offer(p);
}

}  // namespace moetune::planner
