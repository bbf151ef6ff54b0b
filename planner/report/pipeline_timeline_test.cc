#include "planner/report/pipeline_timeline.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::testing::HasSubstr;
using ::moetune::testing::StatusIs;

PipelineScheduleSpec Spec(int pp, int vp, int m, double f, double b,
                          double p2p = 0) {
  PipelineScheduleSpec s;
  s.pp = pp;
  s.vp = vp;
  s.micro_batches = m;
  s.forward_s = f;
  s.backward_s = b;
  s.p2p_s = p2p;
  return s;
}

// pp=2, m=2, F=1, B=2, no transfer time:
//   rank 0: F1 [0,1] F2 [1,2] .......... B1 [4,6] . B2 [7,9]
//   rank 1: ....... F1 [1,2] B1 [2,4] F2 [4,5] B2 [5,7]
// Step 9 = (m + pp - 1) x (F + B); rank-0 bubble 9 - 6 = 3 = (pp-1)(F+B).
TEST(PipelineTimelineTest, OneFOneBByHand) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl, SimulatePipeline(Spec(2, 1, 2, 1, 2)));
  EXPECT_DOUBLE_EQ(tl.step_s, 9);
  ASSERT_EQ(tl.bubble_s.size(), 2u);
  EXPECT_DOUBLE_EQ(tl.bubble_s[0], 3);
  EXPECT_DOUBLE_EQ(tl.bubble_s[1], 1);  // rank 1 ends at 7 after 6 busy
  std::vector<std::vector<double>> rank0;
  for (const PipelineOp& op : tl.compute) {
    if (op.rank == 0) rank0.push_back({static_cast<double>(op.kind),
                                       static_cast<double>(op.micro_batch),
                                       op.start_s, op.end_s});
  }
  const std::vector<std::vector<double>> want = {
      {0, 0, 0, 1}, {0, 1, 1, 2}, {1, 0, 4, 6}, {1, 1, 7, 9}};
  EXPECT_EQ(rank0, want);
}

// The 1F1B makespan (m + pp - 1)(F + B) for several shapes.
TEST(PipelineTimelineTest, OneFOneBMakespan) {
  for (int pp : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 16}) {
      MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl,
                           SimulatePipeline(Spec(pp, 1, m, 1, 2)));
      EXPECT_DOUBLE_EQ(tl.step_s, (m + pp - 1) * 3.0) << pp << " " << m;
      EXPECT_DOUBLE_EQ(tl.bubble_s[0], (pp - 1) * 3.0) << pp << " " << m;
    }
  }
}

// Interleaving divides the bubble by vp (Narayanan et al. 2021): with
// per-chunk F, B the rank-0 bubble is (pp - 1)(F + B), against m x vp x
// (F + B) of work: pp=4, vp=2, m=8, F=1, B=2 -> 48 + 9 = 57.
TEST(PipelineTimelineTest, InterleavedBubble) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl, SimulatePipeline(Spec(4, 2, 8, 1, 2)));
  EXPECT_DOUBLE_EQ(tl.bubble_s[0], 9);
  EXPECT_DOUBLE_EQ(tl.step_s, 57);
  int fwd = 0, bwd = 0;
  for (const PipelineOp& op : tl.compute) {
    if (op.rank != 0) continue;
    fwd += op.kind == PipelineOpKind::kForward;
    bwd += op.kind == PipelineOpKind::kBackward;
  }
  EXPECT_EQ(fwd, 16);
  EXPECT_EQ(bwd, 16);
}

// Micro-batch counts that are not a multiple of pp still schedule.
TEST(PipelineTimelineTest, InterleavedUnevenGroups) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl, SimulatePipeline(Spec(4, 2, 6, 1, 2)));
  EXPECT_GE(tl.step_s, 6 * 2 * 3.0);
}

// pp=2, m=1, F=B=1, p2p=0.5: F [0,1] -> rank 1 F [1.5,2.5] B [2.5,3.5] ->
// rank 0 B [4,5]; one send each way.
TEST(PipelineTimelineTest, TransfersDelayTheNextStage) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl,
                       SimulatePipeline(Spec(2, 1, 1, 1, 1, 0.5)));
  EXPECT_DOUBLE_EQ(tl.step_s, 5);
  EXPECT_EQ(tl.comm.size(), 2u);
}

TEST(PipelineTimelineTest, TailOps) {
  PipelineScheduleSpec s = Spec(1, 1, 2, 1, 2);
  s.tail_comm_s = 0.5;
  s.optimizer_s = 0.25;
  MOETUNE_ASSERT_OK_AND_ASSIGN(PipelineTimeline tl, SimulatePipeline(s));
  EXPECT_DOUBLE_EQ(tl.step_s, 6.75);  // 2 x 3 + 0.5 + 0.25
  EXPECT_EQ(tl.compute.back().kind, PipelineOpKind::kOptimizer);
  EXPECT_DOUBLE_EQ(tl.compute.back().start_s, 6.5);
  EXPECT_EQ(tl.comm.back().kind, PipelineOpKind::kTailComm);
}

TEST(PipelineTimelineTest, RejectsBadSpecs) {
  EXPECT_THAT(SimulatePipeline(Spec(0, 1, 1, 1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pp=0")));
  EXPECT_THAT(SimulatePipeline(Spec(1, 2, 1, 1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vp=2 needs pp > 1")));
  EXPECT_THAT(SimulatePipeline(Spec(2, 1, 1, -1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -1")));
}

// Derivation from a prediction: pp=2, vp=1, gbs 16 / (dp 2 x mbs 1) = 8
// micro-batches; compute 0.6 s -> forward 0.2, backward 0.4 + recompute 0.12;
// exposed EP 0.08 -> 0.04 each way; over 8 passes.
TEST(DeriveScheduleSpecTest, ByHand) {
  Prediction p;
  p.shape.gpus = 4;
  p.shape.seq_len = 1024;
  p.shape.global_batch = 16;
  p.parallel.pp = 2;
  p.parallel.dp = 2;
  p.breakdown = {
      {"a", TermKind::kComputeAttention, 0.2, CostSource::kDatasheetPrior},
      {"g", TermKind::kComputeGroupedGemm, 0.4, CostSource::kDatasheetPrior},
      {"r", TermKind::kRecompute, 0.12, CostSource::kDatasheetPrior},
      {"e", TermKind::kCommEpExposed, 0.08, CostSource::kDatasheetPrior},
      {"eh", TermKind::kCommEpHidden, 0.16, CostSource::kDatasheetPrior},
      {"p", TermKind::kCommPpExposed, 0.016, CostSource::kDatasheetPrior},
      {"d", TermKind::kCommDpExposed, 0.05, CostSource::kDatasheetPrior},
      {"o", TermKind::kOptimizer, 0.03, CostSource::kDatasheetPrior},
      {"b", TermKind::kPipelineBubble, 0.1, CostSource::kDatasheetPrior},
  };
  const PipelineScheduleSpec s = DeriveScheduleSpec(p);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.vp, 1);
  EXPECT_EQ(s.micro_batches, 8);
  EXPECT_NEAR(s.forward_s, (0.2 + 0.04) / 8, 1e-12);
  EXPECT_NEAR(s.backward_s, (0.4 + 0.12 + 0.04) / 8, 1e-12);
  EXPECT_NEAR(s.forward_hidden_comm_s, 0.08 / 8, 1e-12);
  EXPECT_NEAR(s.p2p_s, 0.016 / 16, 1e-12);  // 2 messages per micro-batch
  EXPECT_NEAR(s.tail_comm_s, 0.05, 1e-12);
  EXPECT_NEAR(s.optimizer_s, 0.03, 1e-12);
  // LoRA: backward computes input gradients only, 1:1.
  p.shape.objective = Objective::kLora;
  EXPECT_NEAR(DeriveScheduleSpec(p).forward_s, (0.3 + 0.04) / 8, 1e-12);
}

}  // namespace
}  // namespace moetune::planner
