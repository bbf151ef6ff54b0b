#include "tools/cli/rpc_client.h"

#include <cctype>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "planner/prediction.h"
#include "tools/cli/command_registry.h"
#include "security/client_credentials.h"

namespace moetune::cli {

std::vector<FlagSpec> ServerFlags(std::vector<FlagSpec> own) {
  own.push_back({"server", false,
                 "moetune-server address HOST:PORT (default $MOETUNE_SERVER or 127.0.0.1:7070)"});
  own.push_back({"timeout_s", false, "deadline of each call in seconds (default 30)"});
  own.push_back({"token_file", false,
                 "file with the bearer token for the server (default $MOETUNE_TOKEN_FILE)"});
  own.push_back({"tls_ca", false, "PEM CA of the server's certificate: connect over TLS"});
  own.push_back({"tls_cert", false, "PEM client certificate (mutual TLS), with --tls_key"});
  own.push_back({"tls_key", false, "PEM private key of --tls_cert"});
  own.push_back({"tls_server_name", false, "name to verify in the server's certificate"});
  own.push_back({"help", true, "show this help"});
  return own;
}

std::unique_ptr<grpc::ClientContext> ServerCall::Context(double t) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  double s = t > 0 ? t : timeout_s;
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(s * 1000)));
  return ctx;
}

int ServerCall::Error(const grpc::Status& status) const {
  std::cerr << "moetune " << command << ": " << absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())) << ": "
            << status.error_message() << " (server " << server << ")" << std::endl;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::OUT_OF_RANGE:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

int BadInput(const std::string& command, const std::string& message) {
  std::cerr << "moetune " << command << ": " << message << std::endl;
  return kExitBadInput;
}

bool StartServerCommand(const std::string& command, const std::string& usage,
                        const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs,
                        Args* args, ServerCall* call, int* exit_code) {
  const std::vector<FlagSpec> all = ServerFlags(specs);
  absl::StatusOr<Args> parsed = Args::Parse(argv, all);
  if (!parsed.ok()) {
    *exit_code = BadInput(command, absl::StrCat(parsed.status().message(), " (see --help)"));
    return false;
  }
  if (parsed->Has("help")) {
    std::cout << "usage: moetune " << usage << "\n\nflags:\n" << Args::Usage(all);
    *exit_code = kExitOk;
    return false;
  }
  call->command = command;
  const char* env = std::getenv("MOETUNE_SERVER");
  call->server = parsed->GetOr("server", env && *env ? env : "127.0.0.1:7070");
  absl::StatusOr<std::optional<double>> timeout = parsed->GetDouble("timeout_s");
  if (!timeout.ok()) {
    *exit_code = BadInput(command, std::string(timeout.status().message()));
    return false;
  }
  if (*timeout) {
    if (**timeout <= 0) {
      *exit_code = BadInput(command, absl::StrCat("--timeout_s must be > 0, got ", **timeout));
      return false;
    }
    call->timeout_s = **timeout;
  }
  grpc::ChannelArguments ch;
  ch.SetMaxReceiveMessageSize(256 << 20);
  moetune::security::ClientSecurityOptions security;
  const char* token_env = std::getenv("MOETUNE_TOKEN_FILE");
  security.token_file = parsed->GetOr("token_file", token_env ? token_env : "");
  security.tls_ca = parsed->GetOr("tls_ca", "");
  security.tls_cert = parsed->GetOr("tls_cert", "");
  security.tls_key = parsed->GetOr("tls_key", "");
  security.tls_server_name = parsed->GetOr("tls_server_name", "");
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      moetune::security::MakeChannel(call->server, security, ch);
  if (!channel.ok()) {
    *exit_code = BadInput(command, std::string(channel.status().message()));
    return false;
  }
  call->stub = moetune::v1::PlannerService::NewStub(*channel);
  *args = std::move(*parsed);
  return true;
}

std::string ToJson(const google::protobuf::Message& m, bool multiline) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = multiline;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (b >= 1000 && i < 4) {
    b /= 1000;
    ++i;
  }
  return absl::StrFormat("%.2f %s", b, units[i]);
}

std::string HumanSeconds(double s) {
  if (s < 1e-3) return absl::StrFormat("%.1f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.2f ms", s * 1e3);
  return absl::StrFormat("%.3f s", s);
}

std::string ProgressBar(int64_t done, int64_t total, int width) {
  int filled = total > 0 ? static_cast<int>(width * std::min<int64_t>(done, total) / total) : 0;
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "] ", done,
                      "/", total);
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace moetune::cli

namespace moetune::cli {

std::string JobSummary(const moetune::v1::Job& job) {
  namespace v1 = ::moetune::v1;
  std::string out = absl::StrFormat("job %s: %s", job.job_id(),
                                    v1::JobState_Name(job.state()).substr(10));
  if (job.candidates_total() > 0) {
    absl::StrAppend(&out, absl::StrFormat(" (%d/%d candidates)", job.candidates_done(),
                                          job.candidates_total()));
  }
  absl::StrAppend(&out, "\n");
  if (!job.error_message().empty()) absl::StrAppend(&out, "  error: ", job.error_message(), "\n");
  if (!job.method().empty()) absl::StrAppend(&out, "  method: ", job.method(), "\n");
  if (!job.calibration_note().empty()) {
    absl::StrAppend(&out, "  cost model: ", job.calibration_note(), "\n");
  }
  for (const v1::Plan& p : job.plans()) {
    const v1::ParallelConfig& c = p.parallel();
    const v1::Prediction& pr = p.prediction();
    absl::StrAppend(
        &out,
        absl::StrFormat("  #%d tp=%d pp=%d vp=%d ep=%d etp=%d cp=%d dp=%d mbs=%d: step %s, "
                        "%.0f tokens/s/GPU, %.1f TFLOPS/GPU, MFU %.1f%%, peak %s/GPU\n",
                        p.rank(), c.tensor_parallel(), c.pipeline_parallel(),
                        c.virtual_pipeline_stages(), c.expert_parallel(),
                        c.expert_tensor_parallel(), c.context_parallel(), c.data_parallel(),
                        c.micro_batch_size(), HumanSeconds(pr.step_time_seconds()),
                        pr.tokens_per_sec_per_gpu(), pr.tflops_per_gpu(), 100 * pr.mfu(),
                        HumanBytes(static_cast<double>(pr.peak_memory_bytes_per_gpu()))));
    if (pr.has_interval() && pr.interval().coverage() > 0) {
      const v1::PredictionInterval& iv = pr.interval();
      moetune::planner::PredictionInterval interval;
      interval.coverage = iv.coverage();
      interval.tokens_per_sec_per_gpu_low = iv.tokens_per_sec_per_gpu_low();
      interval.tokens_per_sec_per_gpu_high = iv.tokens_per_sec_per_gpu_high();
      interval.basis = iv.basis();
      interval.unmeasured.assign(iv.unmeasured().begin(), iv.unmeasured().end());
      absl::StrAppend(&out, "     ", moetune::planner::IntervalText(interval), "\n");
    }
  }
  return out;
}

std::string CampaignProgressLine(const moetune::v1::Campaign& c, double elapsed_seconds) {
  namespace v1 = ::moetune::v1;
  std::string line = ProgressBar(c.tasks_done() + c.tasks_failed(), c.tasks_total()) + " tasks";
  if (c.tasks_failed() > 0) absl::StrAppend(&line, ", ", c.tasks_failed(), " failed");
  std::string running;
  for (const v1::CampaignTaskStatus& t : c.tasks()) {
    if (t.state() != "running") continue;
    std::string kind = v1::ProbeKind_Name(t.kind());
    if (kind.rfind("PROBE_KIND_", 0) == 0) kind = kind.substr(11);
    for (char& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (t.world_size() > 1) absl::StrAppend(&kind, " (", t.world_size(), " ranks)");
    absl::StrAppend(&running, running.empty() ? "" : ", ", kind);
  }
  if (running.empty() && c.tasks_running() > 0) running = absl::StrCat(c.tasks_running(), " tasks");
  absl::StrAppend(&line, " | running: ", running.empty() ? "-" : running);
  const int64_t s = static_cast<int64_t>(elapsed_seconds);
  absl::StrAppend(&line, " | ", s >= 3600 ? absl::StrFormat("%dh%02dm%02ds", s / 3600, s / 60 % 60, s % 60)
                                          : s >= 60 ? absl::StrFormat("%dm%02ds", s / 60, s % 60)
                                                    : absl::StrFormat("%ds", s));
  return line;
}

}  // namespace moetune::cli
