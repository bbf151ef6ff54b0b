#include "planner/search_space.h"

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/testing/tiny_models.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::IsOk;
using ::moetune::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClusterSpec EightGpuNodes() {
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("h100-sxm");
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;  // 8-GPU NVLink domains
}

TEST(ParseFixSpecTest, ParsesEveryKey) {
  absl::StatusOr<FixedKnobs> f = ParseFixSpec(
      "tp=2, pp=4,vp=2,ep=64,etp=1,cp=2,dp=8,mbs=1,first_stage_layers=3,"
      "last_stage_layers=2,shard_params=on,recompute=core_attn+moe_act,offload=expert_fc1,"
      "dispatcher=alltoall,grouped_gemm=off,overlap=true,comm_streams=2,"
      "cuda_graphs=0,precision=FP8");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->tp, 2);
  EXPECT_EQ(f->pp, 4);
  EXPECT_EQ(f->vp, 2);
  EXPECT_EQ(f->ep, 64);
  EXPECT_EQ(f->etp, 1);
  EXPECT_EQ(f->cp, 2);
  EXPECT_EQ(f->dp, 8);
  EXPECT_EQ(f->mbs, 1);
  EXPECT_EQ(f->first_stage_layers, 3);
  EXPECT_EQ(f->last_stage_layers, 2);
  EXPECT_EQ(f->shard_params, true);
  ASSERT_TRUE(f->recompute.has_value());
  EXPECT_EQ(f->recompute->mode, RecomputeMode::kSelective);
  EXPECT_EQ(f->recompute->modules, kRecomputeCoreAttn | kRecomputeMoeAct);
  EXPECT_EQ(f->offload_modules, uint32_t{kOffloadExpertFc1});
  EXPECT_EQ(f->dispatcher, Dispatcher::kAllToAll);
  EXPECT_EQ(f->grouped_gemm, false);
  EXPECT_EQ(f->overlap, true);
  EXPECT_EQ(f->comm_streams, 2);
  EXPECT_EQ(f->cuda_graphs, false);
  EXPECT_EQ(f->precision, Precision::kFp8);
  // Round trip.
  EXPECT_EQ(ToString(*f),
            "tp=2,pp=4,vp=2,ep=64,etp=1,cp=2,dp=8,mbs=1,first_stage_layers=3,"
            "last_stage_layers=2,shard_params=true,recompute=core_attn+moe_act,"
            "offload=expert_fc1,dispatcher=alltoall,grouped_gemm=false,"
            "overlap=true,comm_streams=2,cuda_graphs=false,precision=fp8");
  absl::StatusOr<FixedKnobs> again = ParseFixSpec(ToString(*f));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(ToString(*again), ToString(*f));
}

// Layer-wise offload: a count (0 = off), round-tripped when set, and the
// space it leaves: pp 1, no recompute, no fine-grained offload, CUDA graphs
// off.
TEST(ParseFixSpecTest, OffloadLayers) {
  absl::StatusOr<FixedKnobs> f = ParseFixSpec("shard_params=true,offload_layers=40");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->offload_layers, 40);
  EXPECT_EQ(ToString(*f), "shard_params=true,offload_layers=40");
  EXPECT_EQ(ToString(*ParseFixSpec("offload_layers=0")), "");
  EXPECT_THAT(ParseFixSpec("offload_layers=-1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix offload_layers=-1: expected a non-negative integer")));
  EXPECT_THAT(ParseFixSpec("offload_layers=many"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offload_layers=many")));

  const ModelSpec llama = *LoadModelPreset("llama3-70b");
  const ClusterSpec gb200 = *LoadClusterPreset("gb200-nvl72");
  SpaceConstraints c;
  c.fixed = *f;
  absl::StatusOr<KnobAxes> axes = BuildKnobAxes(llama, gb200, c);
  ASSERT_THAT(axes, IsOk());
  EXPECT_EQ(axes->offload_layers, 40);
  ASSERT_EQ(axes->recompute.size(), 1u);
  EXPECT_EQ(axes->recompute[0].recompute.mode, RecomputeMode::kNone);
  ASSERT_EQ(axes->offload.size(), 1u);
  EXPECT_EQ(axes->offload[0].modules, 0u);
  EXPECT_EQ(axes->cuda_graphs, std::vector<bool>{false});
  const KnobSet set = BuildKnobSet(*axes, llama, false, 0, 0);
  for (const Knobs& k : set.combos) EXPECT_EQ(k.offload_layers, 40);
  const std::vector<ParallelConfig> layouts =
      EnumerateLayouts(llama, gb200, {64, 8192, 256}, c.fixed, nullptr);
  ASSERT_FALSE(layouts.empty());
  for (const ParallelConfig& p : layouts) EXPECT_EQ(p.pp, 1) << ToString(p);

  // Pins that contradict it stay as pinned: the framework rules name them
  // (framework_rules.h kLayerOffload*).
  c.fixed = *ParseFixSpec("offload_layers=4,recompute=full,cuda_graphs=true");
  axes = BuildKnobAxes(llama, gb200, c);
  ASSERT_THAT(axes, IsOk());
  EXPECT_EQ(axes->recompute[0].recompute.mode, RecomputeMode::kFull);
  EXPECT_EQ(axes->cuda_graphs, std::vector<bool>{true});
}

TEST(ParseFixSpecTest, DpOutermost) {
  absl::StatusOr<FixedKnobs> on = ParseFixSpec("pp=8,dp_outermost=true");
  ASSERT_THAT(on, IsOk());
  EXPECT_EQ(on->dp_outermost, true);
  EXPECT_EQ(ToString(*on), "pp=8,dp_outermost=true");
  absl::StatusOr<FixedKnobs> off = ParseFixSpec("dp_outermost=off");
  ASSERT_THAT(off, IsOk());
  EXPECT_EQ(off->dp_outermost, false);
  EXPECT_EQ(ToString(*off), "dp_outermost=false");
  EXPECT_EQ(ParseFixSpec("tp=2")->dp_outermost, std::nullopt);  // not pinned
  EXPECT_THAT(ParseFixSpec("dp_outermost=maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix dp_outermost=maybe: expected true/false")));
  EXPECT_THAT(ParseFixSpec("dp_outermst=true"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dp_outermost")));
}

// The rank order is never searched: every layout has the pinned order, or
// Megatron's default.
TEST(EnumerateLayoutsTest, RankOrderIsThePinOrTheDefault) {
  const ModelSpec model = *LoadModelPreset("llama3-8b");
  const TrainingShape shape{16, 4096, 64};
  FixedKnobs fixed;
  const std::vector<ParallelConfig> plain =
      EnumerateLayouts(model, EightGpuNodes(), shape, fixed, nullptr);
  ASSERT_FALSE(plain.empty());
  for (const ParallelConfig& p : plain) EXPECT_FALSE(p.dp_outermost) << ToString(p);
  fixed.dp_outermost = true;
  const std::vector<ParallelConfig> outer =
      EnumerateLayouts(model, EightGpuNodes(), shape, fixed, nullptr);
  ASSERT_EQ(outer.size(), plain.size());
  for (const ParallelConfig& p : outer) EXPECT_TRUE(p.dp_outermost) << ToString(p);
}

TEST(ParseFixSpecTest, EmptyFixesNothing) {
  absl::StatusOr<FixedKnobs> f = ParseFixSpec("");
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(ToString(*f), "");
  absl::StatusOr<FixedKnobs> full = ParseFixSpec("recompute=full,offload=none");
  ASSERT_THAT(full, IsOk());
  EXPECT_EQ(full->recompute->mode, RecomputeMode::kFull);
  EXPECT_EQ(full->offload_modules, 0u);
}

TEST(ParseFixSpecTest, ErrorsNameTheBadKeyOrValue) {
  EXPECT_THAT(ParseFixSpec("tpp=2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown key 'tpp' (known: tp, pp,")));
  EXPECT_THAT(ParseFixSpec("tp=two"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix tp=two: expected a positive integer")));
  EXPECT_THAT(ParseFixSpec("ep=0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix ep=0: expected a positive integer")));
  EXPECT_THAT(ParseFixSpec("first_stage_layers=-1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a non-negative integer")));
  EXPECT_THAT(ParseFixSpec("tp"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix 'tp': expected key=value")));
  EXPECT_THAT(ParseFixSpec("tp=1,,pp=2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("empty entry")));
  EXPECT_THAT(ParseFixSpec("tp=1,tp=2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix tp=2: key given twice")));
  EXPECT_THAT(ParseFixSpec("pp="),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix pp=: empty value")));
  EXPECT_THAT(ParseFixSpec("dispatcher=nccl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix dispatcher=nccl")));
  EXPECT_THAT(ParseFixSpec("precision=fp16"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix precision=fp16")));
  EXPECT_THAT(ParseFixSpec("recompute=everything"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix recompute=everything")));
  EXPECT_THAT(ParseFixSpec("offload=weights"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix offload=weights")));
  EXPECT_THAT(ParseFixSpec("cuda_graphs=maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fix cuda_graphs=maybe: expected true/false")));
  EXPECT_THAT(ParseFixSpec("comm_streams=9"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected an integer from 1 to 8")));
}

TEST(DivisorsTest, ByHand) {
  EXPECT_THAT(Divisors(12), ElementsAre(1, 2, 3, 4, 6, 12));
  EXPECT_THAT(Divisors(1), ElementsAre(1));
  EXPECT_THAT(Divisors(7), ElementsAre(1, 7));
  // A square (its root once), and every divisor of a large count ascending.
  EXPECT_THAT(Divisors(36), ElementsAre(1, 2, 3, 4, 6, 9, 12, 18, 36));
  EXPECT_THAT(Divisors(8192), ElementsAre(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,
                                          4096, 8192));
  for (int n : {360, 1000, 1536, 9973}) {
    std::vector<int> slow;
    for (int d = 1; d <= n; ++d) {
      if (n % d == 0) slow.push_back(d);
    }
    EXPECT_EQ(Divisors(n), slow) << n;
  }
}

// The model's part of the floor, taken once, gives the same bound as the
// per-layout form: DeepSeek-V3 (routed experts, MTP) at a sharded and an
// unsharded layout.
TEST(WeightsFloorTest, ModelPartOnceEqualsPerLayoutForm) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset("deepseek-v3");
  ASSERT_THAT(m, IsOk());
  const WeightsFloorParams w = WeightsFloorParamsOf(*m);
  EXPECT_GT(w.expert, 5e11);  // 58 MoE layers x 256 experts x 44 M
  EXPECT_GT(w.non_expert, 0.0);
  ParallelConfig p;
  p.tp = 2;
  p.pp = 8;
  p.ep = 32;
  p.dp = 64;
  for (bool shard : {false, true}) {
    p.shard_params = shard;
    for (bool lora : {false, true}) {
      EXPECT_DOUBLE_EQ(WeightsFloorBytes(w, p, lora), WeightsFloorBytes(*m, p, lora));
    }
  }
  // By hand: (non-expert / tp + expert / (ep x etp)) / pp x (2 + 2) bytes.
  p.shard_params = false;
  EXPECT_DOUBLE_EQ(WeightsFloorBytes(w, p, false),
                   (w.non_expert / 2 + w.expert / 32) / 8 * 4.0);
}

TEST(SupportedPrecisionsTest, HopperHasNoBlockScaledModes) {
  EXPECT_THAT(SupportedPrecisions(EightGpuNodes().gpu),
              ElementsAre(Precision::kBf16, Precision::kFp8));
  absl::StatusOr<ClusterSpec> gb200 = LoadClusterPreset("gb200-nvl72");
  ASSERT_THAT(gb200, IsOk());
  EXPECT_THAT(SupportedPrecisions(gb200->gpu),
              ElementsAre(Precision::kBf16, Precision::kFp8, Precision::kMxfp8,
                          Precision::kNvfp4));
}

// 4 GPUs, 2 layers, 4 heads, seq 1024, gbs 4. By hand:
//   tp=1 cp=1: pp=1 (dp=4, mbs 1)            -> 1
//              pp=2 (dp=2, mbs 1,2)          -> 2   (pp=4 > 2 layers)
//   tp=1 cp=2: pp=1 (dp=2, mbs 1,2)          -> 2
//              pp=2 (dp=1, mbs 1,2,4)        -> 3   (cp=4: 256 tokens < 512)
//   tp=2 cp=1: pp=1 (dp=2) 2, pp=2 (dp=1) 3  -> 5
//   tp=2 cp=2: pp=1 (dp=1, mbs 1,2,4)        -> 3
//   tp=4 cp=1: pp=1 (dp=1, mbs 1,2,4)        -> 3
// Total 19 layouts; vp = 1 everywhere (2 layers / pp=2 = 1 per stage).
TEST(EnumerateLayoutsTest, SmallDenseSpaceByHand) {
  const ModelSpec model = TinyDense();
  TrainingShape shape{4, 1024, 4};
  int rejected = 0;
  std::vector<ParallelConfig> layouts = EnumerateLayouts(
      model, EightGpuNodes(), shape, FixedKnobs{},
      [&](const LayoutRejection&) { ++rejected; });
  EXPECT_EQ(rejected, 0);
  ASSERT_EQ(layouts.size(), 19u);
  std::set<std::tuple<int, int, int, int, int>> seen;
  for (const ParallelConfig& p : layouts) {
    EXPECT_EQ(p.tp * p.cp * p.pp * p.dp, 4);
    EXPECT_EQ(p.ep, 1);
    EXPECT_EQ(p.etp, 1);
    EXPECT_EQ(p.vp, 1);
    EXPECT_EQ(CheckLayout(model, shape, p), Infeasibility::kNone);
    seen.insert({p.tp, p.cp, p.pp, p.dp, p.mbs});
  }
  EXPECT_EQ(seen.size(), 19u);
  EXPECT_TRUE(seen.count({4, 1, 1, 1, 4}));
  EXPECT_FALSE(seen.count({1, 4, 1, 1, 1}));  // cp=4 below 512 tokens/rank
}

TEST(EnumerateLayoutsTest, FixedValuesAreHonouredAndInvalidOnesReported) {
  const ModelSpec model = TinyDense();
  TrainingShape shape{4, 1024, 4};
  FixedKnobs fixed;
  fixed.tp = 2;
  fixed.pp = 2;
  std::vector<ParallelConfig> layouts =
      EnumerateLayouts(model, EightGpuNodes(), shape, fixed, nullptr);
  ASSERT_EQ(layouts.size(), 3u);  // dp=1, mbs 1, 2, 4
  for (const ParallelConfig& p : layouts) {
    EXPECT_EQ(p.tp, 2);
    EXPECT_EQ(p.pp, 2);
  }
  // tp=3 divides neither 4 GPUs nor 4 heads: one rejected layout.
  fixed = FixedKnobs{};
  fixed.tp = 3;
  std::vector<LayoutRejection> rejections;
  layouts = EnumerateLayouts(model, EightGpuNodes(), shape, fixed,
                             [&](const LayoutRejection& r) {
                               rejections.push_back(r);
                             });
  EXPECT_TRUE(layouts.empty());
  ASSERT_EQ(rejections.size(), 1u);
  EXPECT_EQ(rejections[0].reason, Infeasibility::kGpusNotDivisible);
  // A fixed tp beyond the NVLink domain is still enumerated (user's choice).
  fixed.tp = 16;
  shape.gpus = 16;
  absl::StatusOr<ModelSpec> wide = ParseNativeModelJson(R"({
      "format": "moetune.model.v1", "name": "wide", "num_layers": 2,
      "hidden_size": 2048, "vocab_size": 1024, "num_attention_heads": 16,
      "num_kv_heads": 16, "head_dim": 128, "ffn_hidden_size": 4096})");
  ASSERT_THAT(wide, IsOk());
  shape.seq_len = 4096;
  layouts = EnumerateLayouts(*wide, EightGpuNodes(), shape, fixed, nullptr);
  EXPECT_FALSE(layouts.empty());
}

TEST(EnumerateLayoutsTest, ExpertLayoutsDivideTheExpertGroup) {
  const ModelSpec model = TinyMoe();
  TrainingShape shape{8, 1024, 8};
  std::vector<ParallelConfig> layouts =
      EnumerateLayouts(model, EightGpuNodes(), shape, FixedKnobs{}, nullptr);
  ASSERT_FALSE(layouts.empty());
  bool saw_ep8 = false;
  for (const ParallelConfig& p : layouts) {
    EXPECT_EQ((p.tp * p.cp * p.dp) % (p.ep * p.etp), 0) << ToString(p);
    EXPECT_EQ(8 % p.ep, 0);
    saw_ep8 |= p.ep == 8;
  }
  EXPECT_TRUE(saw_ep8);
}

TEST(KnobAxesTest, DefaultAxesAndSetSizes) {
  const ModelSpec moe = TinyMoe();
  absl::StatusOr<KnobAxes> axes =
      BuildKnobAxes(moe, EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(axes, IsOk());
  EXPECT_THAT(axes->precisions, ElementsAre(Precision::kBf16));
  ASSERT_EQ(axes->recompute.size(), 5u);
  EXPECT_EQ(axes->recompute.front().recompute.mode, RecomputeMode::kNone);
  EXPECT_EQ(axes->recompute.back().recompute.mode, RecomputeMode::kFull);
  ASSERT_EQ(axes->offload.size(), 3u);
  EXPECT_EQ(axes->offload.front().modules, 0u);
  // Overlap levels: all on (1 stream), all on (2 streams), all but the EP
  // A2A overlap (a MoE model's), none; the TP overlap on / off apart.
  ASSERT_EQ(axes->overlap.size(), 4u);
  EXPECT_EQ(axes->overlap[2].name, "all_but_ep");
  EXPECT_FALSE(axes->overlap[2].overlap.ep_comm);
  EXPECT_TRUE(axes->overlap[2].overlap.dp_comm);
  EXPECT_TRUE(axes->overlap[2].overlap.pp_comm);
  EXPECT_EQ(axes->tp_overlap.size(), 2u);
  // MoE at ep > 1: one group per precision of 5 recompute x 3 offload
  // subgroups of 4 overlap x 2 TP-overlap blocks of 2 dispatchers x 2
  // grouped x 2 graphs.
  KnobSet ep = BuildKnobSet(*axes, moe, /*expert_parallel=*/true);
  EXPECT_EQ(ep.num_groups(), 1);
  EXPECT_EQ(ep.group_size, 960);
  EXPECT_EQ(ep.subgroup_size, 64);
  EXPECT_EQ(ep.subgroups_per_group(), 15);
  EXPECT_EQ(ep.block_size, 8);
  EXPECT_EQ(ep.blocks_per_subgroup(), 8);
  // Every member of a block differs from its head in neutral axes only.
  for (size_t b = 0; b < ep.combos.size(); b += 8) {
    const Knobs& head = ep.combos[b];
    for (size_t i = b; i < b + 8; ++i) {
      EXPECT_EQ(ep.combos[i].recompute.mode, head.recompute.mode);
      EXPECT_EQ(ep.combos[i].offload_modules, head.offload_modules);
      EXPECT_EQ(ep.combos[i].overlap.tp_comm, head.overlap.tp_comm);
      EXPECT_EQ(ep.combos[i].overlap.num_comm_streams, head.overlap.num_comm_streams);
    }
  }
  // At ep = 1 one dispatcher: 480.
  KnobSet no_ep = BuildKnobSet(*axes, moe, /*expert_parallel=*/false);
  EXPECT_EQ(no_ep.group_size, 480);
  // Dense: no grouped-GEMM or dispatcher axis: 5 x 3 x 3 x 2 x 2 = 180.
  const ModelSpec dense = TinyDense();
  absl::StatusOr<KnobAxes> dense_axes =
      BuildKnobAxes(dense, EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(dense_axes, IsOk());
  KnobSet d = BuildKnobSet(*dense_axes, dense, true);
  EXPECT_EQ(d.group_size, 180);
  EXPECT_EQ(d.subgroup_size, 12);
  EXPECT_EQ(d.block_size, 2);  // CUDA graphs on/off
  // Every subgroup's head uses the fastest value of every member axis, and
  // the group's head the fastest of every axis.
  for (int s = 0; s < ep.subgroups_per_group(); ++s) {
    const Knobs& head = ep.combos[static_cast<size_t>(s * ep.subgroup_size)];
    EXPECT_EQ(head.dispatcher, Dispatcher::kFusedDedup);
    EXPECT_TRUE(head.grouped_gemm);
    EXPECT_TRUE(head.cuda_graphs);
    EXPECT_EQ(head.overlap.num_comm_streams, 1);
    EXPECT_TRUE(head.overlap.tp_comm);
  }
  EXPECT_EQ(ep.combos[0].recompute.mode, RecomputeMode::kNone);
  EXPECT_FALSE(ep.combos[0].offload_activations);
  // All combinations are distinct.
  std::set<std::string> seen;
  for (const Knobs& k : ep.combos) seen.insert(ToString(k));
  EXPECT_EQ(seen.size(), ep.combos.size());
  // Overlap moved to the group level: 4 groups of 240, subgroups of
  // 2 (TP overlap) x 2 x 2 x 2.
  KnobSet by_overlap = BuildKnobSet(*axes, moe, true, AxisBit(KnobAxis::kOverlap));
  EXPECT_EQ(by_overlap.num_groups(), 4);
  EXPECT_EQ(by_overlap.group_size, 240);
  EXPECT_EQ(by_overlap.subgroup_size, 16);
  EXPECT_EQ(by_overlap.block_size, 8);
  // Nothing neutral: blocks of one.
  KnobSet no_neutral = BuildKnobSet(*axes, moe, true, 0, 0);
  EXPECT_EQ(no_neutral.block_size, 1);
  EXPECT_EQ(no_neutral.subgroup_size, 64);
  for (int g = 0; g < 4; ++g) {
    const Knobs& head = by_overlap.combos[static_cast<size_t>(g * 240)];
    EXPECT_EQ(head.recompute.mode, RecomputeMode::kNone);
    EXPECT_EQ(head.dispatcher, Dispatcher::kFusedDedup);
  }
}

// Where the overlap is searched value by value, each level's upper bound
// among the others: a second stream is bounded by one stream, "none" by
// "all_but_ep" (a MoE model's) or, without it, by all on; "all_1_stream"
// and "all_but_ep" have none (either can be the faster). The group level
// says which axes it holds, so a group's neighbour along one axis is found
// by index.
TEST(KnobAxesTest, OverlapChainPredecessor) {
  const ModelSpec moe = TinyMoe();
  absl::StatusOr<KnobAxes> axes = BuildKnobAxes(moe, EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(axes, IsOk());
  ASSERT_EQ(axes->overlap.size(), 4u);  // all_1_stream, all_2_streams, all_but_ep, none
  EXPECT_EQ(OverlapChainPredecessor(*axes, 0), -1);
  EXPECT_EQ(OverlapChainPredecessor(*axes, 1), 0);
  EXPECT_EQ(OverlapChainPredecessor(*axes, 2), -1);
  EXPECT_EQ(OverlapChainPredecessor(*axes, 3), 2);
  EXPECT_EQ(OverlapChainPredecessor(*axes, 4), -1);
  EXPECT_EQ(OverlapChainPredecessor(*axes, -1), -1);
  absl::StatusOr<KnobAxes> dense =
      BuildKnobAxes(TinyDense(), EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(dense, IsOk());
  ASSERT_EQ(dense->overlap.size(), 3u);  // all_1_stream, all_2_streams, none
  EXPECT_EQ(OverlapChainPredecessor(*dense, 2), 0);
  // Streams pinned: one "all" level.
  SpaceConstraints pinned;
  pinned.fixed.comm_streams = 2;
  absl::StatusOr<KnobAxes> one = BuildKnobAxes(TinyDense(), EightGpuNodes(), pinned);
  ASSERT_THAT(one, IsOk());
  ASSERT_EQ(one->overlap.size(), 2u);  // all, none
  EXPECT_EQ(OverlapChainPredecessor(*one, 1), 0);

  KnobSet by_overlap = BuildKnobSet(*axes, moe, true, AxisBit(KnobAxis::kOverlap));
  EXPECT_THAT(by_overlap.group_axes, ElementsAre(KnobAxis::kPrecision, KnobAxis::kOverlap));
  EXPECT_THAT(by_overlap.group_axis_sizes, ElementsAre(1, 4));
  for (int g = 0; g < by_overlap.num_groups(); ++g) {
    const Knobs& head = by_overlap.combos[static_cast<size_t>(g * by_overlap.group_size)];
    EXPECT_EQ(head.overlap.num_comm_streams, axes->overlap[size_t(g)].overlap.num_comm_streams);
    EXPECT_EQ(head.overlap.ep_comm, axes->overlap[size_t(g)].overlap.ep_comm);
  }
}

// The TP overlap is its own axis: on and off by default; the overlap
// levels set the other overlaps and leave it alone. Fixed overlap off: TP
// off with the rest; fixed exactly: TP as given.
TEST(KnobAxesTest, TpOverlapAxis) {
  absl::StatusOr<KnobAxes> axes = BuildKnobAxes(TinyDense(), EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(axes, IsOk());
  EXPECT_THAT(axes->tp_overlap, ElementsAre(true, false));
  Knobs k = WithAxisValue(*axes, Knobs{}, KnobAxis::kTpOverlap, 1);
  EXPECT_FALSE(k.overlap.tp_comm);
  k = WithAxisValue(*axes, k, KnobAxis::kOverlap, 0);  // all_1_stream
  EXPECT_FALSE(k.overlap.tp_comm);
  EXPECT_TRUE(k.overlap.ep_comm);
  EXPECT_TRUE(k.overlap.dp_comm);
  k = WithAxisValue(*axes, k, KnobAxis::kTpOverlap, 0);
  EXPECT_TRUE(k.overlap.tp_comm);
  SpaceConstraints off;
  off.fixed.overlap = false;
  absl::StatusOr<KnobAxes> fixed_off = BuildKnobAxes(TinyDense(), EightGpuNodes(), off);
  ASSERT_THAT(fixed_off, IsOk());
  EXPECT_THAT(fixed_off->tp_overlap, ElementsAre(false));
  SpaceConstraints exact;
  exact.fixed = *ParseFixSpec("overlap=tp+dp");
  absl::StatusOr<KnobAxes> fixed_exact = BuildKnobAxes(TinyDense(), EightGpuNodes(), exact);
  ASSERT_THAT(fixed_exact, IsOk());
  EXPECT_THAT(fixed_exact->tp_overlap, ElementsAre(true));
  const Knobs e = BuildKnobSet(*fixed_exact, TinyDense(), false).combos.front();
  EXPECT_TRUE(e.overlap.tp_comm);
  EXPECT_TRUE(e.overlap.dp_comm);
  EXPECT_FALSE(e.overlap.ep_comm);
}

TEST(KnobAxesTest, WithAxisValueChangesOneAxis) {
  absl::StatusOr<KnobAxes> axes =
      BuildKnobAxes(TinyMoe(), EightGpuNodes(), SpaceConstraints{});
  ASSERT_THAT(axes, IsOk());
  Knobs base;
  Knobs k = WithAxisValue(*axes, base, KnobAxis::kRecompute, 4);
  EXPECT_EQ(k.recompute.mode, RecomputeMode::kFull);
  EXPECT_EQ(k.dispatcher, base.dispatcher);
  k = WithAxisValue(*axes, base, KnobAxis::kOffload, 2);
  EXPECT_TRUE(k.offload_activations);
  k = WithAxisValue(*axes, base, KnobAxis::kDispatcher, 1);
  EXPECT_EQ(k.dispatcher, Dispatcher::kAllToAll);
  EXPECT_EQ(AxisSize(*axes, TinyMoe(), false, KnobAxis::kDispatcher), 1);
  EXPECT_EQ(AxisSize(*axes, TinyMoe(), true, KnobAxis::kDispatcher), 2);
  EXPECT_EQ(KnobAxisName(KnobAxis::kCudaGraphs), "cuda_graphs");
}

TEST(KnobAxesTest, ConstraintsNarrowTheAxes) {
  SpaceConstraints c;
  absl::StatusOr<FixedKnobs> f =
      ParseFixSpec("recompute=full,dispatcher=alltoall,overlap=false");
  ASSERT_THAT(f, IsOk());
  c.fixed = *f;
  absl::StatusOr<KnobAxes> axes = BuildKnobAxes(TinyMoe(), EightGpuNodes(), c);
  ASSERT_THAT(axes, IsOk());
  ASSERT_EQ(axes->recompute.size(), 1u);
  EXPECT_EQ(axes->recompute[0].recompute.mode, RecomputeMode::kFull);
  EXPECT_THAT(axes->dispatchers, ElementsAre(Dispatcher::kAllToAll));
  ASSERT_EQ(axes->overlap.size(), 1u);
  EXPECT_FALSE(axes->overlap[0].overlap.tp_comm);
}

TEST(KnobAxesTest, PrecisionTheGpuLacksIsUnimplemented) {
  SpaceConstraints c;
  c.precisions = {Precision::kBf16, Precision::kNvfp4};
  EXPECT_THAT(BuildKnobAxes(TinyMoe(), EightGpuNodes(), c),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("has no nvfp4 tensor-core mode")));
  c.precisions = {Precision::kBf16};
  c.fixed.precision = Precision::kFp8;
  EXPECT_THAT(BuildKnobAxes(TinyMoe(), EightGpuNodes(), c),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("precision=fp8 is not among the allowed")));
}

// Weights floor by hand for the dense model: every parameter is non-expert,
// split over tp * pp = 4, at 2 B weights + 2 B gradients.
TEST(WeightsFloorBytesTest, DenseSplitsOverTpAndPp) {
  const ModelSpec m = TinyDense();
  ParallelConfig p;
  p.tp = 2;
  p.pp = 2;
  EXPECT_DOUBLE_EQ(WeightsFloorBytes(m, p, /*lora=*/false),
                   m.TotalParams() * 4.0 / 4.0);
  // LoRA trains adapters only: no base-weight gradients.
  EXPECT_DOUBLE_EQ(WeightsFloorBytes(m, p, /*lora=*/true),
                   m.TotalParams() * 2.0 / 4.0);
}

// MoE: 4 MoE layers x 8 experts x ExpertParams() split over ep * etp = 4;
// the rest over tp = 1; everything over pp = 1; 4 bytes each.
TEST(WeightsFloorBytesTest, ExpertsSplitOverEpTimesEtp) {
  const ModelSpec m = TinyMoe();
  ParallelConfig p;
  p.ep = 4;
  const double experts = m.ExpertParams() * 8 * m.NumMoeLayers();
  const double rest = m.TotalParams() - experts;
  EXPECT_DOUBLE_EQ(WeightsFloorBytes(m, p, false), 4 * (rest + experts / 4));
  // FSDP also splits over the data-parallel group: dp = 2 halves both parts
  // (experts: ep x etp x expert-dp = tp x cp x dp = 2).
  p.shard_params = true;
  p.dp = 2;
  p.ep = 1;
  EXPECT_DOUBLE_EQ(WeightsFloorBytes(m, p, false), 4 * (rest / 2 + experts / 2));
}

}  // namespace
}  // namespace moetune::planner
