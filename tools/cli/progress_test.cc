#include "gtest/gtest.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

// A job's plans print with their interval under each (by hand).
TEST(JobSummary, PlanLinesCarryTheirInterval) {
  v1::Job job;
  job.set_job_id("job-1");
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  v1::Plan* p = job.add_plans();
  p->set_rank(1);
  v1::ParallelConfig* c = p->mutable_parallel();
  c->set_tensor_parallel(2);
  c->set_pipeline_parallel(1);
  c->set_virtual_pipeline_stages(1);
  c->set_expert_parallel(8);
  c->set_expert_tensor_parallel(1);
  c->set_context_parallel(1);
  c->set_data_parallel(4);
  c->set_micro_batch_size(1);
  v1::Prediction* pr = p->mutable_prediction();
  pr->set_step_time_seconds(10);
  pr->set_tokens_per_sec_per_gpu(1000);
  pr->set_tflops_per_gpu(300);
  pr->set_mfu(0.25);
  pr->set_peak_memory_bytes_per_gpu(100000000000);
  v1::PredictionInterval* iv = pr->mutable_interval();
  iv->set_coverage(0.8);
  iv->set_tokens_per_sec_per_gpu_low(900);
  iv->set_tokens_per_sec_per_gpu_high(1150);
  iv->set_basis("MoE rows");
  iv->add_unmeasured("natural routing");
  const std::string out = JobSummary(job);
  EXPECT_NE(out.find("  #1 tp=2 pp=1 vp=1 ep=8 etp=1 cp=1 dp=4 mbs=1: step "), std::string::npos)
      << out;
  EXPECT_NE(out.find("\n     80% interval 900.0 .. 1150.0 tokens/s/GPU "
                     "(MoE rows; natural routing)\n"),
            std::string::npos)
      << out;
  // Without an interval (coverage 0) no line is printed.
  pr->clear_interval();
  EXPECT_EQ(JobSummary(job).find("interval"), std::string::npos);
}

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
