// moetune calibrate --cluster NAME [--profile quick|standard] [--wait]:
// starts a calibration campaign on the cluster's live agents (or follows one
// with --campaign ID), optionally waiting for it to finish.
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

void PrintCampaign(const v1::Campaign& c, const std::string& format) {
  if (format == "json") {
    std::cout << ToJson(c) << std::endl;
    return;
  }
  std::cout << absl::StrFormat("campaign %s on cluster %s: %s, %d/%d tasks done, %d failed, %d running\n",
                               c.campaign_id(), c.cluster(),
                               v1::CampaignState_Name(c.state()).substr(15), c.tasks_done(),
                               c.tasks_total(), c.tasks_failed(), c.tasks_running());
  for (const auto& t : c.tasks()) {
    if (t.state() == "failed") {
      std::cout << "  failed: " << t.task_id() << ": " << t.last_error() << "\n";
    }
  }
}

int RunCalibrate(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand(
          "calibrate",
          "calibrate --cluster NAME [--profile standard|quick] [--wait [--wait_timeout_s S]] "
          "[--format text|json]\n       moetune calibrate --campaign ID [--wait]",
          argv,
          {{"cluster", false, "cluster label of the agents to calibrate"},
           {"campaign", false, "follow an existing campaign instead of starting one"},
           {"profile", false, "standard (GPU sizes, default) or quick (small, CPU/CI)"},
           {"wait", true, "wait until the campaign ends; exit 1 if it failed"},
           {"wait_timeout_s", false, "give up waiting after this long (default 3600)"},
           {"format", false, "text (default) or json"}},
          &args, &call, &code)) {
    return code;
  }
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("calibrate", "--format must be text or json, got '" + format + "'");
  }
  std::string campaign_id = args.GetOr("campaign", "");
  v1::Campaign campaign;
  if (campaign_id.empty()) {
    const std::string cluster = args.GetOr("cluster", "");
    if (cluster.empty()) return BadInput("calibrate", "--cluster NAME (or --campaign ID) is required");
    const std::string profile = args.GetOr("profile", "standard");
    v1::StartCalibrationRequest req;
    req.set_cluster(cluster);
    if (profile == "quick") {
      req.set_profile(v1::CAMPAIGN_PROFILE_QUICK);
    } else if (profile == "standard") {
      req.set_profile(v1::CAMPAIGN_PROFILE_STANDARD);
    } else {
      return BadInput("calibrate", "--profile must be standard or quick, got '" + profile + "'");
    }
    v1::StartCalibrationResponse resp;
    grpc::Status s = call.stub->StartCalibration(call.Context().get(), req, &resp);
    if (!s.ok()) return call.Error(s);
    campaign = resp.campaign();
    campaign_id = campaign.campaign_id();
    if (format == "text") {
      std::cerr << "started campaign " << campaign_id << " with " << campaign.tasks_total()
                << " probe tasks" << std::endl;
    }
  }
  auto wait_timeout = args.GetDouble("wait_timeout_s");
  if (!wait_timeout.ok()) return BadInput("calibrate", std::string(wait_timeout.status().message()));
  const absl::Time give_up = absl::Now() + absl::Seconds(wait_timeout->value_or(3600));
  const bool tty = StderrIsTerminal() && format == "text";
  const absl::Time wait_start = absl::Now();
  size_t last_width = 0;
  std::string summary;
  while (true) {
    v1::GetCalibrationRequest req;
    req.set_campaign_id(campaign_id);
    v1::GetCalibrationResponse resp;
    grpc::Status s = call.stub->GetCalibration(call.Context().get(), req, &resp);
    if (!s.ok()) {
      // The server may be restarting; keep waiting while --wait allows.
      if (args.Has("wait") && s.error_code() == grpc::StatusCode::UNAVAILABLE &&
          absl::Now() < give_up) {
        absl::SleepFor(absl::Milliseconds(500));
        continue;
      }
      return call.Error(s);
    }
    campaign = resp.campaign();
    summary = resp.calibration_json();
    if (!args.Has("wait") || campaign.state() != v1::CAMPAIGN_STATE_RUNNING) break;
    if (tty) {  // progress on a terminal only; --format json and pipes stay quiet
      const std::string line = CampaignProgressLine(campaign, absl::ToDoubleSeconds(absl::Now() - wait_start));
      // Pad over a longer previous line; "\r" returns to its start.
      std::cerr << "\r" << line << std::string(line.size() < last_width ? last_width - line.size() : 0, ' ')
                << std::flush;
      last_width = line.size();
    }
    if (absl::Now() > give_up) {
      std::cerr << (tty ? "\n" : "") << "moetune calibrate: campaign " << campaign_id
                << " still running after --wait_timeout_s" << std::endl;
      return kExitFailure;
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  if (tty) std::cerr << "\n";
  PrintCampaign(campaign, format);
  if (format == "text" && !summary.empty()) std::cout << "calibration: " << summary << "\n";
  return campaign.state() == v1::CAMPAIGN_STATE_FAILED ? kExitFailure : kExitOk;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(calibrate, "run a calibration campaign on a cluster's agents",
                         moetune::cli::RunCalibrate);
