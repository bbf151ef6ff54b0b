// Prediction intervals from cross-validated errors, and a test of their
// coverage on held-out folds.
//
// A held-out row's signed error is e = (predicted - measured) / measured,
// so measured = predicted / (1 + e). An interval of coverage c from errors
// of comparable rows: the split-conformal order statistics of e
// (ConformalRanksFor: about the (1-c)/2 and (1+c)/2 quantiles, one rank
// further out), q_lo and q_hi, give measured in [predicted / (1 + q_hi), predicted /
// (1 + q_lo)].
//
// NestedIntervalCoverage checks that honestly: for each outer group, the
// quantiles come only from rows of the other groups, each of those rows
// predicted by constants fitted without its own group (an inner
// leave-one-group-out on the training rows); the outer group is predicted
// with constants fitted on all training rows; coverage = held-out rows whose
// measurement falls inside their interval.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/internal/cross_validation.h"

namespace moetune::tests {

// Empirical quantile, linear interpolation between order statistics
// (Hyndman-Fan type 7, as numpy's default). Requires a non-empty vector.
double Quantile(std::vector<double> values, double q);

// The order statistics of n held-out errors that bound an interval of
// coverage c (split conformal prediction; Vovk et al. 2005, Lei et al. 2018,
// "Distribution-free predictive inference for regression", JASA): with
// alpha = (1 - c) / 2 in each tail, the lower bound is the
// floor((n + 1) alpha)-th smallest error and the upper the
// ceil((n + 1)(1 - alpha))-th, 1-based, clamped to 1..n. If the new row's
// error is exchangeable with the n, each tail holds at most alpha of the
// probability, so the interval covers at least c whatever the error
// distribution -- which plain percentiles (Quantile at (1 -/+ c) / 2) miss
// by about (1 - c) / n at the sample sizes here. Example: n = 45, c = 0.8:
// ranks floor(4.6) = 4 and ceil(41.4) = 42 (percentiles: 5.4 and 40.6).
struct ConformalRanks {
  int lo = 1;
  int hi = 1;
};
ConformalRanks ConformalRanksFor(int n, double coverage);

struct ErrorQuantiles {
  double q_lo = 0;
  double q_hi = 0;
  int rows = 0;
};
// The errors at ConformalRanksFor(errors.size(), coverage).
ErrorQuantiles QuantilesOf(const std::vector<double>& errors, double coverage);

// [predicted / (1 + q_hi), predicted / (1 + q_lo)].
std::pair<double, double> MeasuredInterval(double predicted, const ErrorQuantiles& q);

// Per class quantiles: rows of class k use the errors of that class when it
// has at least min_rows of them, else the errors of all rows.
std::vector<ErrorQuantiles> ClassQuantiles(const std::vector<double>& errors,
                                           const std::vector<int>& classes, int num_classes,
                                           double coverage, int min_rows);

struct CoverageFold {
  std::string held_out;
  int rows = 0;
  int covered = 0;
};
struct Coverage {
  std::vector<CoverageFold> folds;
  int rows = 0;
  int covered = 0;
  double fraction() const { return rows > 0 ? double(covered) / rows : 0.0; }
};

// classes[i] in [0, num_classes).
Coverage NestedIntervalCoverage(const std::vector<FitParameter>& params,
                                const RowPredictor& predict,
                                const std::vector<double>& measured,
                                const std::vector<std::string>& groups,
                                const std::vector<int>& classes, int num_classes,
                                double coverage, int min_rows, int max_sweeps = 8);

}  // namespace moetune::tests
