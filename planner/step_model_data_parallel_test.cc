// Where the data-parallel groups lie under each Megatron rank order, and
// what the distributed optimizer leaves exposed in an interleaved pipeline
// (planner/internal/step_model_data_parallel.h), by hand.
#include "gtest/gtest.h"
#include "planner/internal/step_model_data_parallel.h"

namespace moetune::planner {
namespace {

using step_model_internal::DistOptDpExposedSeconds;
using step_model_internal::DpGroupPlacement;
using step_model_internal::DpPlacement;
using step_model_internal::EmbeddingMatricesOnRank;

ParallelConfig Layout(int tp, int pp, int vp, int cp, int dp, bool dp_outermost) {
  ParallelConfig p;
  p.tp = tp;
  p.pp = pp;
  p.vp = vp;
  p.cp = cp;
  p.dp = dp;
  p.dp_outermost = dp_outermost;
  return p;
}

// Megatron-Core GPTModel: the first stage holds the input embedding, the
// last the output layer (one matrix with the embedding when tied and pp 1),
// and a last stage that runs the MTP modules its own input embedding too.
TEST(EmbeddingMatricesOnRankTest, MtpStageHoldsItsOwnEmbedding) {
  // DeepSeek-V3 (untied, 1 MTP module), pp 8: 1 on rank 0, none in the
  // middle, output layer + MTP embedding on rank 7.
  EXPECT_EQ(EmbeddingMatricesOnRank(0, 8, false, 1, true), 1);
  EXPECT_EQ(EmbeddingMatricesOnRank(3, 8, false, 1, true), 0);
  EXPECT_EQ(EmbeddingMatricesOnRank(7, 8, false, 1, true), 2);
  // Without MTP, or under MaxText: the output layer only.
  EXPECT_EQ(EmbeddingMatricesOnRank(7, 8, false, 0, true), 1);
  EXPECT_EQ(EmbeddingMatricesOnRank(7, 8, false, 1, false), 1);
  // pp 1: the MTP block uses the one input embedding; untied, embedding +
  // output layer; tied, one matrix.
  EXPECT_EQ(EmbeddingMatricesOnRank(0, 1, false, 1, true), 2);
  EXPECT_EQ(EmbeddingMatricesOnRank(0, 1, true, 0, true), 1);
  // Tied with pp > 1: the last stage keeps its own copy of the embedding.
  EXPECT_EQ(EmbeddingMatricesOnRank(3, 4, true, 0, true), 1);
}

// The MLPerf Llama 3.1 405B layout TP4 PP8 CP2 on 72-GPU NVLink domains.
TEST(DpGroupPlacementTest, DefaultOrderKeepsSmallDpInsideTheDomain) {
  // tp-cp-ep-dp-pp, dp 8: tp x cp x dp = 64 <= 72, inside one domain; the
  // dense DP x CP group (16) strides over tp = 4: min(16, 72 / 4) = 16.
  const DpPlacement d = DpGroupPlacement(Layout(4, 8, 8, 2, 8, false), 72);
  EXPECT_EQ(d.span, LinkSpan::kNvlinkDomain);
  EXPECT_EQ(d.dense_per_domain, 16);
  // dp 80: 640 > 72, across domains, 18 members per domain.
  const DpPlacement e = DpGroupPlacement(Layout(4, 8, 8, 2, 80, false), 72);
  EXPECT_EQ(e.span, LinkSpan::kScaleOut);
  EXPECT_EQ(e.dense_per_domain, 18);
}

TEST(DpGroupPlacementTest, DpOutermostPutsOneReplicaPerDomain) {
  // tp-cp-ep-pp-dp: a replica is 4 x 2 x 8 = 64 GPUs, one per 72-GPU
  // domain (72 / 64 = 1); dp 8 x 64 = 512 > 72: across domains, and a
  // domain holds only the replica's cp = 2 members of each DP x CP group.
  const DpPlacement d = DpGroupPlacement(Layout(4, 8, 8, 2, 8, true), 72);
  EXPECT_EQ(d.span, LinkSpan::kScaleOut);
  EXPECT_EQ(d.dense_per_domain, 2);
  EXPECT_EQ(DpGroupPlacement(Layout(4, 8, 8, 2, 80, true), 72).dense_per_domain, 2);
  // Replicas of 2 x 1 x 4 = 8 GPUs: 72 / 8 = 9 per domain; dp 4 x 8 = 32
  // <= 72: inside the domain, all 4 members there.
  const DpPlacement s = DpGroupPlacement(Layout(2, 4, 1, 1, 4, true), 72);
  EXPECT_EQ(s.span, LinkSpan::kNvlinkDomain);
  EXPECT_EQ(s.dense_per_domain, 4);
}

TEST(DistOptDpExposedTest, NonInterleavedIsOneStageWindow) {
  // vp 1: rs + ag - t_max = 0.3 + 0.2 - 0.12 = 0.38 s; never negative.
  EXPECT_DOUBLE_EQ(DistOptDpExposedSeconds(0.3, 0.2, 0.12, 8, 1), 0.3 + 0.2 - 0.12);
  EXPECT_DOUBLE_EQ(DistOptDpExposedSeconds(0.05, 0.05, 0.12, 8, 1), 0.0);
}

TEST(DistOptDpExposedTest, InterleavedChunksHideBehindTheCooldown) {
  // pp 8, vp 8, t_max 0.12 s: t_b = 0.08, t_f = 0.04; chunk spacing
  // 8 x 0.08 / 8 = 0.08 s backward, 0.04 s forward. rs = ag = 0.24 s:
  // pieces of 0.03 s, each shorter than its spacing, so only the last
  // (first) chunk's piece shows, less its own pass: (0.03 - 0.01) +
  // (0.03 - 0.005) = 0.045 s (the vp = 1 rule: 0.36 s).
  EXPECT_NEAR(DistOptDpExposedSeconds(0.24, 0.24, 0.12, 8, 8), 0.045, 1e-12);
  // rs = 1.2 s: pieces of 0.15 s outrun the 0.08 s spacing and queue:
  // 1.2 - 7 x 0.08 - 0.01 = 0.63 s; ag 0 leaves the forward window
  // unused, -0.005: 0.625 s.
  EXPECT_NEAR(DistOptDpExposedSeconds(1.2, 0.0, 0.12, 8, 8), 0.625, 1e-12);
}

}  // namespace
}  // namespace moetune::planner
