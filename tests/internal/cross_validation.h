// Cross-validation of a model whose few global constants are set from data.
//
// The rule that sets constants from data (FitOnRows): every other constant
// is a prior with a public source and is never touched; each fitted constant
// has a prior value and a grid of allowed values spanning its physically
// plausible range. Starting from the priors, coordinate descent: for each
// constant in order, try every grid value with the others held and keep the
// one with the lowest mean absolute percentage error (MAPE) over the training
// rows (ties keep the current value, so the prior wins a tie); repeat until a
// whole sweep changes nothing or max_sweeps sweeps have run. Deterministic.
//
// LeaveOneGroupOut applies the rule to all rows but one group, predicts the
// held-out group with the constants so found, and repeats for every group:
// each row is predicted exactly once by constants that never saw it (nor any
// row of its group). The pooled held-out errors are the cross-validated
// figures.
//
// Nothing here knows about training steps: the model is a callback from
// (constant values, row index) to a predicted value.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace moetune::tests {

// One constant the rule may set from data.
struct FitParameter {
  std::string name;
  double prior = 0;          // the value when nothing is fitted
  std::vector<double> grid;  // allowed values; empty: held at the prior
};

// The model: the predicted value of row `row` under constant values
// `values` (one per FitParameter, same order); nullopt when it cannot
// predict the row (counted as a 100% error by the rule and as "failed" in
// summaries).
using RowPredictor =
    std::function<std::optional<double>(const std::vector<double>& values, size_t row)>;

// Signed relative errors (predicted - measured) / measured, summarized.
struct ErrorSummary {
  int rows = 0;     // rows predicted
  int failed = 0;   // rows the model could not predict
  double mape = 0;  // mean |error|
  double mean_signed = 0;
  int over_10 = 0;  // rows with |error| > 10%
  int over_25 = 0;  // rows with |error| > 25%
  double worst = 0;  // the error of largest magnitude (signed)
};
ErrorSummary Summarize(const std::vector<double>& errors, int failed = 0);

// MAPE of `rows` under `values`; a row the model cannot predict counts 1.0.
double TrainingLoss(const RowPredictor& predict, const std::vector<double>& measured,
                    const std::vector<size_t>& rows, const std::vector<double>& values);

// The rule above: constant values fitted on `rows`.
std::vector<double> FitOnRows(const std::vector<FitParameter>& params,
                              const RowPredictor& predict,
                              const std::vector<double>& measured,
                              const std::vector<size_t>& rows, int max_sweeps = 8);

// The priors, in parameter order.
std::vector<double> Priors(const std::vector<FitParameter>& params);

struct Fold {
  std::string held_out;       // the group left out
  std::vector<size_t> train;  // row indices
  std::vector<size_t> test;
  std::vector<double> values;  // fitted on train
  ErrorSummary train_error;
  ErrorSummary test_error;
};

struct CrossValidation {
  std::vector<Fold> folds;  // in order of first appearance of each group
  // Per row: its held-out signed error (nullopt: the model failed on it).
  std::vector<std::optional<double>> held_out_error;
  ErrorSummary pooled;  // over every row's held-out error
};

// groups[i]: the group key of row i (same length as measured). A group
// with every row held out leaves nothing to train on only if it is the
// sole group; then its fold keeps the priors.
CrossValidation LeaveOneGroupOut(const std::vector<FitParameter>& params,
                                 const RowPredictor& predict,
                                 const std::vector<double>& measured,
                                 const std::vector<std::string>& groups,
                                 int max_sweeps = 8);

}  // namespace moetune::tests
