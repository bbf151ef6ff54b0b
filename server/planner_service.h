// PlannerService (proto/planner_service.proto): a thin gRPC layer over the
// JobRunner, the Scheduler, the AgentRegistry and the Store. The planner
// itself is reached through injected functions (server/planner_adapter.h),
// so this layer builds and tests without it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "proto/planner_service.grpc.pb.h"
#include "server/agent_registry.h"
#include "server/job_runner.h"
#include "server/scheduler.h"
#include "server/store.h"

namespace moetune::server {

using PredictFn =
    std::function<absl::StatusOr<moetune::v1::Prediction>(const moetune::v1::PredictRequest&)>;
// JSON summary of the fitted calibration of a cluster.
using CalibrationSummaryFn = std::function<std::string(const std::string& cluster)>;
// agent_id -> straggler flags for the agents of a cluster.
using StragglersFn = std::function<std::map<std::string, std::vector<moetune::v1::StragglerFlag>>(
    const std::string& cluster)>;

class PlannerServiceImpl final : public moetune::v1::PlannerService::Service {
 public:
  PlannerServiceImpl(Store* store, AgentRegistry* registry, Scheduler* scheduler,
                     JobRunner* jobs, PredictFn predict, CalibrationSummaryFn calibration,
                     StragglersFn stragglers)
      : store_(store),
        registry_(registry),
        scheduler_(scheduler),
        jobs_(jobs),
        predict_(std::move(predict)),
        calibration_(std::move(calibration)),
        stragglers_(std::move(stragglers)) {}

  grpc::Status Predict(grpc::ServerContext*, const moetune::v1::PredictRequest*,
                       moetune::v1::PredictResponse*) override;
  grpc::Status SubmitPlan(grpc::ServerContext*, const moetune::v1::SubmitPlanRequest*,
                          moetune::v1::SubmitPlanResponse*) override;
  grpc::Status GetJob(grpc::ServerContext*, const moetune::v1::GetJobRequest*,
                      moetune::v1::Job*) override;
  grpc::Status WatchJob(grpc::ServerContext*, const moetune::v1::WatchJobRequest*,
                        grpc::ServerWriter<moetune::v1::Job>*) override;
  grpc::Status GetTunedConfig(grpc::ServerContext*, const moetune::v1::GetTunedConfigRequest*,
                              moetune::v1::GetTunedConfigResponse*) override;
  grpc::Status ListAgents(grpc::ServerContext*, const moetune::v1::ListAgentsRequest*,
                          moetune::v1::ListAgentsResponse*) override;
  grpc::Status StartCalibration(grpc::ServerContext*,
                                const moetune::v1::StartCalibrationRequest*,
                                moetune::v1::StartCalibrationResponse*) override;
  grpc::Status GetCalibration(grpc::ServerContext*, const moetune::v1::GetCalibrationRequest*,
                              moetune::v1::GetCalibrationResponse*) override;
  grpc::Status ListMeasurements(grpc::ServerContext*,
                                const moetune::v1::ListMeasurementsRequest*,
                                moetune::v1::ListMeasurementsResponse*) override;
  // Validates every result (server/measurement_validator.h; collective
  // results only), labels it with the cluster and stores all in one
  // transaction.
  grpc::Status ImportMeasurements(grpc::ServerContext*,
                                  const moetune::v1::ImportMeasurementsRequest*,
                                  moetune::v1::ImportMeasurementsResponse*) override;

 private:
  Store* store_;
  AgentRegistry* registry_;
  Scheduler* scheduler_;
  JobRunner* jobs_;
  PredictFn predict_;
  CalibrationSummaryFn calibration_;
  StragglersFn stragglers_;
};

}  // namespace moetune::server
