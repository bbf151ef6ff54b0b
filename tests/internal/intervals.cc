#include "tests/internal/intervals.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace moetune::tests {

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

ConformalRanks ConformalRanksFor(int n, double coverage) {
  ConformalRanks r;
  const double tail = (1 - coverage) / 2;
  // A small epsilon keeps products that are whole numbers from moving a
  // rank through rounding: with tail = (1 - 0.8) / 2 in doubles,
  // (9 + 1) x tail is 0.9999999999999998, whose floor would be 0.
  r.lo = int(std::floor((n + 1) * tail + 1e-9));
  r.hi = int(std::ceil((n + 1) * (1 - tail) - 1e-9));
  r.lo = std::clamp(r.lo, 1, std::max(1, n));
  r.hi = std::clamp(r.hi, 1, std::max(1, n));
  return r;
}

ErrorQuantiles QuantilesOf(const std::vector<double>& errors, double coverage) {
  ErrorQuantiles q;
  q.rows = int(errors.size());
  if (errors.empty()) return q;
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const ConformalRanks r = ConformalRanksFor(q.rows, coverage);
  q.q_lo = sorted[size_t(r.lo - 1)];
  q.q_hi = sorted[size_t(r.hi - 1)];
  return q;
}

std::pair<double, double> MeasuredInterval(double predicted, const ErrorQuantiles& q) {
  return {predicted / (1 + q.q_hi), predicted / (1 + q.q_lo)};
}

std::vector<ErrorQuantiles> ClassQuantiles(const std::vector<double>& errors,
                                           const std::vector<int>& classes, int num_classes,
                                           double coverage, int min_rows) {
  const ErrorQuantiles all = QuantilesOf(errors, coverage);
  std::vector<ErrorQuantiles> out(size_t(num_classes), all);
  for (int k = 0; k < num_classes; ++k) {
    std::vector<double> mine;
    for (size_t i = 0; i < errors.size(); ++i) {
      if (classes[i] == k) mine.push_back(errors[i]);
    }
    if (int(mine.size()) >= min_rows) out[size_t(k)] = QuantilesOf(mine, coverage);
  }
  return out;
}

Coverage NestedIntervalCoverage(const std::vector<FitParameter>& params,
                                const RowPredictor& predict,
                                const std::vector<double>& measured,
                                const std::vector<std::string>& groups,
                                const std::vector<int>& classes, int num_classes,
                                double coverage, int min_rows, int max_sweeps) {
  Coverage result;
  std::vector<std::string> order;
  for (const std::string& g : groups) {
    if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
  }
  for (const std::string& g : order) {
    std::vector<size_t> train, test;
    for (size_t i = 0; i < groups.size(); ++i) (groups[i] == g ? test : train).push_back(i);
    // Inner leave-one-group-out on the training rows (local indices).
    std::vector<double> m_train;
    std::vector<std::string> g_train;
    for (size_t i : train) {
      m_train.push_back(measured[i]);
      g_train.push_back(groups[i]);
    }
    const RowPredictor local = [&](const std::vector<double>& v,
                                   size_t row) -> std::optional<double> {
      return predict(v, train[row]);
    };
    const CrossValidation inner = LeaveOneGroupOut(params, local, m_train, g_train, max_sweeps);
    std::vector<double> errors;
    std::vector<int> error_classes;
    for (size_t j = 0; j < train.size(); ++j) {
      if (!inner.held_out_error[j]) continue;
      errors.push_back(*inner.held_out_error[j]);
      error_classes.push_back(classes[train[j]]);
    }
    CoverageFold fold;
    fold.held_out = g;
    if (errors.empty()) continue;
    const std::vector<ErrorQuantiles> q =
        ClassQuantiles(errors, error_classes, num_classes, coverage, min_rows);
    const std::vector<double> values = FitOnRows(params, predict, measured, train, max_sweeps);
    for (size_t i : test) {
      const std::optional<double> p = predict(values, i);
      if (!p) continue;
      const auto [lo, hi] = MeasuredInterval(*p, q[size_t(classes[i])]);
      ++fold.rows;
      fold.covered += measured[i] >= lo && measured[i] <= hi ? 1 : 0;
    }
    result.rows += fold.rows;
    result.covered += fold.covered;
    result.folds.push_back(fold);
  }
  return result;
}

}  // namespace moetune::tests
