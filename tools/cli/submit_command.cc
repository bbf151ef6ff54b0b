// moetune submit: submits a plan job to the server and prints its id (or,
// with --wait, follows it to the end and prints the best plans).
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "planner/request.h"
#include "planner/software_stack.h"
#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

constexpr char kUsage[] =
    "submit --model PRESET|config.json (--cluster PRESET | --cluster_file "
    "cluster.json)\n       --gpus N --seq N --gbs N [--calibration_cluster NAME] [--top_k K] "
    "[--precision bf16|fp8|mxfp8|nvfp4]\n       [--tp N --pp N --ep N --cp N --etp N --vp N "
    "--mbs N] [--framework megatron|maxtext] [--stack CONTAINER|latest] [--wait] [--format text|json]";

int RunSubmit(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  std::vector<FlagSpec> specs = {
      {"model", false, "model preset (deepseek-v3, ...) or a config.json / native model JSON file"},
      {"model_file", false, "deprecated: --model takes a file"},
      {"objective", false, "pretrain (default), finetune or lora"},
      {"cluster", false, "hardware preset (h100-sxm, h200, b200, gb200-nvl72, ...)"},
      {"cluster_file", false, "cluster JSON"},
      {"calibration_cluster", false, "use the fitted calibration of this agent cluster"},
      {"gpus", false, "GPUs of the training job"},
      {"seq", false, "sequence length"},
      {"gbs", false, "global batch size (sequences)"},
      {"top_k", false, "plans to keep (default 3)"},
      {"precision", false, "bf16 | fp8 | mxfp8 | nvfp4 (default: planner's choice)"},
      {"fix", false, "pin knobs as in `moetune plan --fix`, e.g. recompute=full,ep=64"},
      {"stack", false,
       "software stack: container version (26.02, 26.04.01, 26.06, ...; older ones are priced as 26.02) or latest (default)"},
      {"wait", true, "follow the job until it ends"},
      {"wait_timeout_s", false, "give up waiting after this long (default 3600)"},
      {"format", false, "text (default) or json"},
      {"framework", false, "megatron (default) or maxtext: whose rules and configs the job's plans follow"}};
  for (const char* k : {"tp", "pp", "vp", "ep", "etp", "cp", "dp", "mbs"}) {
    specs.push_back({k, false, "pin this parallel degree"});
  }
  if (!StartServerCommand("submit", kUsage, argv, specs, &args, &call, &code)) return code;
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("submit", "--format must be text or json, got '" + format + "'");
  }
  v1::SubmitPlanRequest req;
  // Checked by the server (planner_adapter ResolveStack), like the stack.
  if (args.Has("framework")) req.set_framework(*args.Get("framework"));
  // --model takes a preset or a file, as in `plan` and `predict`
  // (planner/request.h); --model_file is the old spelling.
  if (args.Has("model") == args.Has("model_file")) {
    return BadInput("submit", "give --model PRESET_OR_FILE");
  }
  if (args.Has("model_file")) {
    std::cerr << "moetune submit: --model_file is deprecated; --model takes a file too\n";
  }
  const std::string model_arg = args.Has("model") ? *args.Get("model") : *args.Get("model_file");
  absl::StatusOr<std::optional<std::string>> model_text = planner::ReadIfFile(model_arg);
  if (!model_text.ok()) return BadInput("submit", std::string(model_text.status().message()));
  if (!model_text->has_value()) {
    if (args.Has("model_file")) {
      return BadInput("submit", "cannot read --model_file '" + model_arg + "'");
    }
    req.mutable_model()->set_preset(model_arg);
  } else if (absl::StrContains(**model_text, "moetune.model.v1")) {
    req.mutable_model()->set_native_json(**model_text);
  } else {
    req.mutable_model()->set_hf_config_json(**model_text);
  }
  if (args.Has("objective")) req.mutable_shape()->set_objective(*args.Get("objective"));
  if (args.Has("cluster") == args.Has("cluster_file")) {
    return BadInput("submit", "give exactly one of --cluster PRESET or --cluster_file PATH");
  }
  if (args.Has("cluster")) {
    req.mutable_cluster()->set_preset(*args.Get("cluster"));
  } else {
    absl::StatusOr<std::optional<std::string>> text =
        planner::ReadIfFile(*args.Get("cluster_file"));
    if (!text.ok() || !text->has_value()) {
      return BadInput("submit", "cannot read --cluster_file '" + *args.Get("cluster_file") + "'");
    }
    req.mutable_cluster()->set_cluster_json(**text);
  }
  req.mutable_cluster()->set_calibration_cluster(args.GetOr("calibration_cluster", ""));
  struct IntFlag {
    const char* name;
    bool required;
    std::function<void(long long)> set;
  };
  v1::ParallelConfig* fixed = req.mutable_constraints()->mutable_fixed();
  const std::vector<IntFlag> ints = {
      {"gpus", true, [&](long long v) { req.mutable_shape()->set_gpus(v); }},
      {"seq", true, [&](long long v) { req.mutable_shape()->set_seq_len(v); }},
      {"gbs", true, [&](long long v) { req.mutable_shape()->set_global_batch_size(v); }},
      {"top_k", false, [&](long long v) { req.mutable_constraints()->set_top_k(static_cast<int>(v)); }},
      {"tp", false, [&](long long v) { fixed->set_tensor_parallel(static_cast<int>(v)); }},
      {"pp", false, [&](long long v) { fixed->set_pipeline_parallel(static_cast<int>(v)); }},
      {"vp", false, [&](long long v) { fixed->set_virtual_pipeline_stages(static_cast<int>(v)); }},
      {"ep", false, [&](long long v) { fixed->set_expert_parallel(static_cast<int>(v)); }},
      {"etp", false, [&](long long v) { fixed->set_expert_tensor_parallel(static_cast<int>(v)); }},
      {"cp", false, [&](long long v) { fixed->set_context_parallel(static_cast<int>(v)); }},
      {"dp", false, [&](long long v) { fixed->set_data_parallel(static_cast<int>(v)); }},
      {"mbs", false, [&](long long v) { fixed->set_micro_batch_size(static_cast<int>(v)); }}};
  for (const IntFlag& f : ints) {
    auto v = args.GetInt(f.name);
    if (!v.ok()) return BadInput("submit", std::string(v.status().message()));
    if (!*v) {
      if (f.required) return BadInput("submit", absl::StrCat("--", f.name, " N is required"));
      continue;
    }
    if (**v <= 0 || **v > (1LL << 31) - 1) {
      return BadInput("submit", absl::StrCat("--", f.name, " must be a positive integer, got ", **v));
    }
    f.set(**v);
  }
  req.mutable_constraints()->set_fix(args.GetOr("fix", ""));
  // --stack as in `plan` and `predict`: checked here for a clear error, sent
  // as given (the server resolves it the same way).
  const std::string stack_arg = args.GetOr("stack", "");
  absl::StatusOr<planner::Framework> framework = planner::ParseFramework(args.GetOr("framework", "megatron"));
  if (!framework.ok()) {
    return BadInput("submit", absl::StrCat("--framework: ", framework.status().message()));
  }
  absl::StatusOr<planner::SoftwareStack> stack = planner::ParseSoftwareStack(*framework, stack_arg);
  if (!stack.ok()) {
    return BadInput("submit", absl::StrCat("--stack: ", stack.status().message()));
  }
  req.set_software_stack(stack_arg);
  if (auto prec = args.Get("precision")) {
    v1::Precision p = v1::PRECISION_UNSPECIFIED;
    if (*prec == "bf16") p = v1::PRECISION_BF16;
    if (*prec == "fp8") p = v1::PRECISION_FP8;
    if (*prec == "mxfp8") p = v1::PRECISION_MXFP8;
    if (*prec == "nvfp4") p = v1::PRECISION_NVFP4;
    if (p == v1::PRECISION_UNSPECIFIED) {
      return BadInput("submit", "--precision must be bf16, fp8, mxfp8 or nvfp4, got '" + *prec + "'");
    }
    req.mutable_constraints()->set_precision(p);
  }

  v1::SubmitPlanResponse resp;
  grpc::Status s = call.stub->SubmitPlan(call.Context().get(), req, &resp);
  if (!s.ok()) return call.Error(s);
  if (!args.Has("wait")) {
    if (format == "json") {
      std::cout << ToJson(resp, false) << std::endl;
    } else {
      std::cout << resp.job_id() << std::endl;
    }
    return kExitOk;
  }
  auto wait_timeout = args.GetDouble("wait_timeout_s");
  if (!wait_timeout.ok()) return BadInput("submit", std::string(wait_timeout.status().message()));
  v1::WatchJobRequest watch;
  watch.set_job_id(resp.job_id());
  auto ctx = call.Context(wait_timeout->value_or(3600));
  auto reader = call.stub->WatchJob(ctx.get(), watch);
  v1::Job job;
  const bool tty = StderrIsTerminal() && format == "text";
  if (format == "text") std::cerr << "job " << resp.job_id() << " submitted" << std::endl;
  while (reader->Read(&job)) {
    if (tty && job.candidates_total() > 0) {
      std::cerr << "\r" << ProgressBar(job.candidates_done(), job.candidates_total())
                << " candidates   " << std::flush;
    }
  }
  if (tty) std::cerr << "\n";
  s = reader->Finish();
  if (!s.ok()) return call.Error(s);
  if (format == "json") {
    std::cout << ToJson(job) << std::endl;
  } else {
    std::cout << JobSummary(job);
  }
  return job.state() == v1::JOB_STATE_SUCCEEDED ? kExitOk
         : absl::StrContains(job.error_message(), "FAILED_PRECONDITION") ? kExitInfeasible
                                                                          : kExitFailure;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(submit, "submit a plan job to moetune-server", moetune::cli::RunSubmit);
