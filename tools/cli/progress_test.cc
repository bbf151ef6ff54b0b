#include "gtest/gtest.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

TEST(CampaignProgressLine, TasksRunningProbesAndElapsed) {
  v1::Campaign c;
  c.set_tasks_total(12);
  c.set_tasks_done(3);
  c.set_tasks_failed(1);
  c.set_tasks_running(2);
  v1::CampaignTaskStatus* a = c.add_tasks();
  a->set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  a->set_state("running");
  a->set_world_size(1);
  v1::CampaignTaskStatus* b = c.add_tasks();
  b->set_kind(v1::PROBE_KIND_COLLECTIVE);
  b->set_state("running");
  b->set_world_size(3);
  v1::CampaignTaskStatus* done = c.add_tasks();
  done->set_kind(v1::PROBE_KIND_OFFLOAD);
  done->set_state("done");
  // 4 of 12 = 10 of 30 columns.
  EXPECT_EQ(CampaignProgressLine(c, 65.4),
            "[##########....................] 4/12 tasks, 1 failed | running: grouped_gemm, collective (3 ranks) "
            "| 1m05s");
  c.clear_tasks();
  c.set_tasks_running(0);
  c.set_tasks_failed(0);
  EXPECT_EQ(CampaignProgressLine(c, 3725), "[#######.......................] 3/12 tasks | running: - | 1h02m05s");
}

}  // namespace
}  // namespace moetune::cli
