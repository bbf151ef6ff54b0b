#include "planner/software_stack.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace moetune::planner {
namespace {

// The step model as the search's scorer (as Search() does internally).
class StackScorer : public CandidateScorer {
 public:
  explicit StackScorer(const StepModel& model) : model_(model) {}
  Estimate Quick(const ParallelConfig& parallel, const Knobs& knobs) const override {
    return model_.Quick(parallel, knobs);
  }
  bool Prepare(const ParallelConfig& parallel,
               StepModel::PreparedLayout* prepared) const override {
    model_.Prepare(parallel, prepared);
    return true;
  }
  Estimate QuickPrepared(StepModel::PreparedLayout& prepared,
                         const Knobs& knobs) const override {
    return model_.Quick(prepared, knobs);
  }
  absl::StatusOr<Prediction> Predict(const ParallelConfig& parallel,
                                     const Knobs& knobs) const override {
    return model_.Predict(parallel, knobs);
  }

 private:
  const StepModel& model_;
};

}  // namespace

absl::StatusOr<SoftwareStack> ParseSoftwareStack(std::string_view text) {
  SoftwareStack s;
  if (text.empty() || text == "latest") return s;
  absl::StatusOr<StackGeneration> g = StackGenerationForContainer(text);
  if (!g.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "software stack '", std::string(text),
        "' is not a container version YY.MM[.NN] (e.g. 26.02, 26.04.01, 26.06) or 'latest'"));
  }
  s.container = std::string(text);
  s.generation = *g;
  return s;
}

std::string ToString(const SoftwareStack& stack) {
  return absl::StrCat(stack.container, " (modelled as generation ",
                      std::string(StackGenerationName(stack.generation)), ")");
}

absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            const SearchOptions& options,
                                            StackGeneration generation) {
  absl::StatusOr<StepModel> model =
      StepModel::Create(problem.model, problem.cluster, problem.shape, std::move(cost_model),
                        StackConstantsFor(generation));
  if (!model.ok()) return model.status();
  StackScorer scorer(*model);
  return SearchWith(problem, scorer, options);
}

}  // namespace moetune::planner
