#include "tests/internal/cross_validation.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace moetune::tests {

ErrorSummary Summarize(const std::vector<double>& errors, int failed) {
  ErrorSummary s;
  s.rows = int(errors.size());
  s.failed = failed;
  if (errors.empty()) return s;
  double sum_abs = 0, sum = 0;
  for (double e : errors) {
    sum_abs += std::abs(e);
    sum += e;
    s.over_10 += std::abs(e) > 0.10 ? 1 : 0;
    s.over_25 += std::abs(e) > 0.25 ? 1 : 0;
    if (std::abs(e) > std::abs(s.worst)) s.worst = e;
  }
  s.mape = sum_abs / errors.size();
  s.mean_signed = sum / errors.size();
  return s;
}

double TrainingLoss(const RowPredictor& predict, const std::vector<double>& measured,
                    const std::vector<size_t>& rows, const std::vector<double>& values) {
  if (rows.empty()) return 0;
  double sum = 0;
  for (size_t r : rows) {
    const std::optional<double> p = predict(values, r);
    sum += p ? std::abs(*p - measured[r]) / measured[r] : 1.0;
  }
  return sum / rows.size();
}

std::vector<double> Priors(const std::vector<FitParameter>& params) {
  std::vector<double> v;
  v.reserve(params.size());
  for (const FitParameter& p : params) v.push_back(p.prior);
  return v;
}

std::vector<double> FitOnRows(const std::vector<FitParameter>& params,
                              const RowPredictor& predict,
                              const std::vector<double>& measured,
                              const std::vector<size_t>& rows, int max_sweeps) {
  std::vector<double> values = Priors(params);
  if (rows.empty()) return values;
  double best = TrainingLoss(predict, measured, rows, values);
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool changed = false;
    for (size_t i = 0; i < params.size(); ++i) {
      const double current = values[i];
      double chosen = current;
      for (double v : params[i].grid) {
        if (v == current) continue;
        values[i] = v;
        const double loss = TrainingLoss(predict, measured, rows, values);
        // Strictly better only (by more than rounding): ties keep the
        // current value.
        if (loss < best - 1e-12) {
          best = loss;
          chosen = v;
        }
      }
      values[i] = chosen;
      changed = changed || chosen != current;
    }
    if (!changed) break;
  }
  return values;
}

namespace {

ErrorSummary RowsSummary(const RowPredictor& predict, const std::vector<double>& measured,
                         const std::vector<size_t>& rows, const std::vector<double>& values,
                         std::vector<std::optional<double>>* per_row) {
  std::vector<double> errors;
  int failed = 0;
  for (size_t r : rows) {
    const std::optional<double> p = predict(values, r);
    std::optional<double> e;
    if (p) {
      e = (*p - measured[r]) / measured[r];
      errors.push_back(*e);
    } else {
      ++failed;
    }
    if (per_row != nullptr) (*per_row)[r] = e;
  }
  return Summarize(errors, failed);
}

}  // namespace

CrossValidation LeaveOneGroupOut(const std::vector<FitParameter>& params,
                                 const RowPredictor& predict,
                                 const std::vector<double>& measured,
                                 const std::vector<std::string>& groups, int max_sweeps) {
  CrossValidation cv;
  cv.held_out_error.assign(measured.size(), std::nullopt);
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (members.find(groups[i]) == members.end()) order.push_back(groups[i]);
    members[groups[i]].push_back(i);
  }
  for (const std::string& g : order) {
    Fold f;
    f.held_out = g;
    f.test = members[g];
    for (size_t i = 0; i < groups.size(); ++i) {
      if (groups[i] != g) f.train.push_back(i);
    }
    f.values = FitOnRows(params, predict, measured, f.train, max_sweeps);
    f.train_error = RowsSummary(predict, measured, f.train, f.values, nullptr);
    f.test_error = RowsSummary(predict, measured, f.test, f.values, &cv.held_out_error);
    cv.folds.push_back(std::move(f));
  }
  std::vector<double> pooled;
  int failed = 0;
  for (const std::optional<double>& e : cv.held_out_error) {
    if (e) pooled.push_back(*e);
    else ++failed;
  }
  cv.pooled = Summarize(pooled, failed);
  return cv;
}

}  // namespace moetune::tests
