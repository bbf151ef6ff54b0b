// The Pareto front of throughput (higher is better) against memory (lower is
// better), kept incrementally: the search offers every feasible candidate and
// the front keeps those no other candidate beats on both.
#pragma once

#include <cstdint>
#include <vector>

namespace moetune::planner {

struct ParetoPoint {
  double memory_bytes = 0;
  double throughput = 0;
  uint64_t id = 0;  // caller's handle; the smaller id wins exact ties
};

class ParetoFront {
 public:
  // Adds p unless a point already on the front has memory <= p's and
  // throughput >= p's (with the smaller id on an exact tie); removes the
  // points p dominates. Returns whether p was added.
  bool Offer(const ParetoPoint& p);
  // Merges another front into this one.
  void Merge(const ParetoFront& other);
  // By increasing memory (and so increasing throughput).
  const std::vector<ParetoPoint>& points() const { return points_; }

 private:
  std::vector<ParetoPoint> points_;  // memory ascending, throughput ascending
};

}  // namespace moetune::planner
