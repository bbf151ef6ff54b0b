#include "planner/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "planner/report/internal/html.h"
#include "planner/report/pipeline_timeline.h"
#include "planner/training_config.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using report_internal::DataNum;
using report_internal::Escape;
using report_internal::HumanCount;
using report_internal::HumanGiB;
using report_internal::HumanPercent;
using report_internal::HumanSeconds;
using report_internal::Px;

std::string Esc(std::string_view s) { return Escape(s); }

// ---------------------------------------------------------------------------
// Term categories: each TermKind is drawn in its category's colour; hidden
// communication is the same colour, lighter, on the "hidden" bar.

struct Category {
  const char* id;     // data-kind of the legend entry
  const char* label;  // legend text
  const char* color;
};

// Colour-blind-friendly palette (Tableau 10 order), print-safe on white.
constexpr Category kCategories[] = {
    {"attention", "attention (core)", "#4e79a7"},
    {"dense_gemm", "dense GEMM", "#59a14f"},
    {"grouped_gemm", "grouped GEMM (experts)", "#8cd17d"},
    {"other_compute", "other compute", "#a0a0a0"},
    {"recompute", "recompute", "#b07aa1"},
    {"tp", "TP comm", "#f28e2b"},
    {"ep", "EP comm", "#e15759"},
    {"cp", "CP comm", "#ff9da7"},
    {"pp", "PP comm", "#edc948"},
    {"dp", "DP comm", "#76b7b2"},
    {"bubble", "pipeline bubble", "#d4d4d4"},
    {"optimizer", "optimizer", "#9c755f"},
    {"offload", "offload", "#bab0ac"},
};
constexpr int kNumCategories = sizeof(kCategories) / sizeof(kCategories[0]);

int CategoryOf(TermKind kind) {
  switch (kind) {
    case TermKind::kComputeAttention: return 0;
    case TermKind::kComputeDenseGemm: return 1;
    case TermKind::kComputeGroupedGemm: return 2;
    case TermKind::kComputeOther: return 3;
    case TermKind::kRecompute: return 4;
    case TermKind::kCommTpExposed:
    case TermKind::kCommTpHidden: return 5;
    case TermKind::kCommEpExposed:
    case TermKind::kCommEpHidden: return 6;
    case TermKind::kCommCpExposed:
    case TermKind::kCommCpHidden: return 7;
    case TermKind::kCommPpExposed:
    case TermKind::kCommPpHidden: return 8;
    case TermKind::kCommDpExposed:
    case TermKind::kCommDpHidden: return 9;
    case TermKind::kPipelineBubble: return 10;
    case TermKind::kOptimizer: return 11;
    case TermKind::kOffloadExposed:
    case TermKind::kOffloadHidden: return 12;
  }
  return 3;
}

// Ticks at 1, 2 or 5 x 10^k, about `n` of them over [0, max].
double NiceStep(double max, int n) {
  if (!(max > 0)) return 1;
  const double raw = max / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string TickLabel(double v, double step) {
  if (step >= 1) return HumanCount(v);
  const int decimals =
      std::max(0, static_cast<int>(std::ceil(-std::log10(step))));
  return absl::StrFormat("%.*f", decimals, v);
}

// A horizontal axis with ticks from 0 to `max` in `unit`, at y, for x in
// [x0, x0 + width]; values are divided by `scale` before labelling.
void XAxis(std::string* out, double x0, double y, double width, double max,
           double scale, const std::string& unit) {
  const double step = NiceStep(max / scale, 6);
  absl::StrAppend(out, "<g class=\"axis\">");
  absl::StrAppend(out, "<line x1=\"", Px(x0), "\" y1=\"", Px(y), "\" x2=\"",
                  Px(x0 + width), "\" y2=\"", Px(y), "\"/>");
  for (double v = 0; v <= max / scale * (1 + 1e-9); v += step) {
    const double x = x0 + width * (v * scale) / max;
    absl::StrAppend(out, "<line x1=\"", Px(x), "\" y1=\"", Px(y), "\" x2=\"",
                    Px(x), "\" y2=\"", Px(y + 4), "\"/>");
    absl::StrAppend(out, "<text x=\"", Px(x), "\" y=\"", Px(y + 15),
                    "\" text-anchor=\"middle\">", Esc(TickLabel(v, step)),
                    "</text>");
  }
  absl::StrAppend(out, "<text x=\"", Px(x0 + width), "\" y=\"", Px(y + 30),
                  "\" text-anchor=\"end\">", Esc(unit), "</text></g>");
}

const char* CostSourceLabel(const Prediction& p, int* calibrated_terms,
                            double* calibrated_seconds) {
  int cal = 0;
  double cal_s = 0;
  for (const Term& t : p.breakdown) {
    if (t.source == CostSource::kCalibrated) {
      ++cal;
      if (!IsHidden(t.kind)) cal_s += t.seconds;  // share of the step time
    }
  }
  *calibrated_terms = cal;
  *calibrated_seconds = cal_s;
  if (cal == 0) return "datasheet_prior";
  if (cal == static_cast<int>(p.breakdown.size())) return "calibrated";
  return "mixed";
}

std::optional<absl::Time> ParseRfc3339(const std::string& s) {
  absl::Time t;
  std::string err;
  if (s.empty() || !absl::ParseTime(absl::RFC3339_full, s, &t, &err)) {
    return std::nullopt;
  }
  return t;
}

std::string ObjectiveLabel(Objective o) { return std::string(ObjectiveName(o)); }

// ---------------------------------------------------------------------------
// Sections.

void Metric(std::string* out, const char* key, double value,
            const std::string& label, const std::string& text) {
  absl::StrAppend(out, "<div class=\"metric\" data-metric=\"", key,
                  "\" data-value=\"", DataNum(value), "\"><div class=\"v\">",
                  Esc(text), "</div><div class=\"l\">", Esc(label),
                  "</div></div>");
}

// A key/value row; data_text (default: the value) goes to data-text.
void Row(std::string* out, const std::string& key, const std::string& value,
         const char* data_key = nullptr,
         const std::string* data_text = nullptr) {
  absl::StrAppend(out, "<tr");
  if (data_key != nullptr) {
    absl::StrAppend(out, " data-field=\"", data_key, "\" data-text=\"",
                    Esc(data_text != nullptr ? *data_text : value), "\"");
  }
  absl::StrAppend(out, "><th>", Esc(key), "</th><td>", Esc(value),
                  "</td></tr>");
}

void Summary(const ReportInput& in, std::string* out) {
  const SearchResult& r = in.result;
  const Prediction& p = r.best.prediction;
  const SearchProblem& pb = r.problem;
  const double total_tps = p.tokens_per_sec_per_gpu * pb.shape.gpus;
  int cal_terms = 0;
  double cal_s = 0;
  const char* source = CostSourceLabel(p, &cal_terms, &cal_s);
  absl::StrAppend(out, "<section id=\"summary\" data-model=\"",
                  Esc(pb.model.name), "\" data-cluster=\"",
                  Esc(pb.cluster.name), "\" data-gpus=\"", pb.shape.gpus,
                  "\" data-seq=\"", pb.shape.seq_len, "\" data-gbs=\"",
                  pb.shape.global_batch, "\" data-cost-source=\"", source,
                  "\">\n<h2>Summary</h2>\n<div class=\"metrics\">");
  Metric(out, "step_time_s", p.step_time_s, "step time",
         HumanSeconds(p.step_time_s));
  Metric(out, "tokens_per_sec_per_gpu", p.tokens_per_sec_per_gpu,
         "tokens/s per GPU", HumanCount(p.tokens_per_sec_per_gpu));
  const PredictionInterval& iv = p.interval;
  if (iv.coverage > 0) {
    // The range measured runs are expected in (prediction_interval.h).
    absl::StrAppend(out, "<div class=\"metric\" data-metric=\"tokens_per_sec_per_gpu_interval\" "
                         "data-coverage=\"", DataNum(iv.coverage), "\" data-low=\"",
                    DataNum(iv.tokens_per_sec_per_gpu_low), "\" data-high=\"",
                    DataNum(iv.tokens_per_sec_per_gpu_high), "\"><div class=\"v\">",
                    Esc(absl::StrCat(HumanCount(iv.tokens_per_sec_per_gpu_low), " \u2013 ",
                                     HumanCount(iv.tokens_per_sec_per_gpu_high))),
                    "</div><div class=\"l\">",
                    Esc(absl::StrFormat("%.0f%% interval, tokens/s per GPU", 100 * iv.coverage)),
                    "</div></div>");
  }
  Metric(out, "tokens_per_sec", total_tps, "tokens/s, all GPUs",
         HumanCount(total_tps));
  Metric(out, "model_tflops_per_gpu", p.model_tflops_per_gpu, "TFLOPS per GPU",
         p.model_tflops_per_gpu >= 100
             ? HumanCount(p.model_tflops_per_gpu)
             : absl::StrFormat("%.1f", p.model_tflops_per_gpu));
  Metric(out, "mfu", p.mfu, absl::StrCat("MFU (", std::string(PrecisionName(p.knobs.precision)),
                                         " dense peak)"),
         HumanPercent(p.mfu));
  Metric(out, "peak_memory_bytes", p.peak_memory_bytes,
         absl::StrCat("peak memory of ", HumanGiB(p.hbm_bytes), " HBM"),
         HumanGiB(p.peak_memory_bytes));
  absl::StrAppend(out, "</div>\n<div class=\"cols\"><table class=\"kv\">"
                       "<caption>Problem</caption>");
  Row(out, "model",
      absl::StrFormat("%s (%.1fB parameters, %.1fB active per token)",
                      pb.model.name, pb.model.TotalParams() / 1e9,
                      pb.model.ActiveParamsPerToken() / 1e9),
      "model", &pb.model.name);
  Row(out, "cluster",
      absl::StrCat(pb.cluster.name, ": ", pb.cluster.gpu.name, ", NVLink domain ",
                   pb.cluster.nvlink_domain_gpus, " GPUs"),
      "cluster");
  Row(out, "GPUs", HumanCount(pb.shape.gpus), "gpus");
  Row(out, "shape",
      absl::StrCat("sequence ", pb.shape.seq_len, ", global batch ",
                   pb.shape.global_batch, " sequences (",
                   HumanCount(static_cast<double>(pb.shape.seq_len) *
                              pb.shape.global_batch),
                   " tokens/step), ", ObjectiveLabel(pb.shape.objective)),
      "shape");
  absl::StrAppend(out, "</table><table class=\"kv\"><caption>Chosen plan"
                       "</caption>");
  Row(out, "layout", ToString(p.parallel), "layout");
  Row(out, "micro-batches",
      absl::StrCat(NumMicroBatches(p.shape, p.parallel), " per DP rank"),
      "micro_batches");
  Row(out, "knobs", ToString(p.knobs), "knobs");
  if (iv.coverage > 0) {
    std::string basis = iv.basis;
    if (!iv.unmeasured.empty()) {
      basis += absl::StrCat(" (wider: ", absl::StrJoin(iv.unmeasured, ", "), ")");
    }
    Row(out, "interval basis", basis, "interval_basis");
  }
  Row(out, "fits",
      absl::StrCat(p.fits ? "yes" : "NO", " (limit ",
                   HumanGiB(r.memory_limit_bytes), ")"),
      "fits");
  absl::StrAppend(out, "</table></div>\n");

  // Provenance of the numbers.
  std::string src_text;
  if (std::string(source) == "datasheet_prior") {
    src_text =
        "Datasheet priors: no term of this prediction comes from calibration "
        "data. The numbers are the roofline model's, not measurements.";
  } else if (std::string(source) == "calibrated") {
    src_text = "Calibrated: every term of this prediction comes from measured "
               "tables.";
  } else {
    src_text = absl::StrCat(
        "Mixed: ", cal_terms, " of ", p.breakdown.size(),
        " terms come from calibration data (",
        HumanPercent(p.step_time_s > 0 ? cal_s / p.step_time_s : 0),
        " of the step time); the rest from datasheet priors.");
  }
  absl::StrAppend(out, "<div class=\"provenance ", source,
                  "\" data-calibrated-terms=\"", cal_terms,
                  "\" data-terms=\"", p.breakdown.size(),
                  "\" data-calibration-cluster=\"",
                  Esc(in.calibration.cluster), "\"");
  const std::optional<absl::Time> fitted = ParseRfc3339(in.calibration.fitted_at);
  const std::optional<absl::Time> now = ParseRfc3339(in.generated_at);
  std::string age;
  if (fitted && now) {
    const double days = absl::ToDoubleHours(*now - *fitted) / 24.0;
    absl::StrAppend(out, " data-calibration-age-days=\"", DataNum(days), "\"");
    age = absl::StrFormat(", %.1f days before this report", days);
  }
  absl::StrAppend(out, "><strong>Cost source.</strong> ", Esc(src_text));
  if (!in.calibration.cluster.empty()) {
    absl::StrAppend(out, " Calibration of cluster <code>",
                    Esc(in.calibration.cluster), "</code>");
    if (!in.calibration.fitted_at.empty()) {
      absl::StrAppend(out, ", fitted ", Esc(in.calibration.fitted_at),
                      Esc(age));
    } else {
      absl::StrAppend(out, " (fitting time unknown)");
    }
    absl::StrAppend(out, ".");
  }
  if (!in.calibration.note.empty()) {
    absl::StrAppend(out, " <span class=\"note\">", Esc(in.calibration.note),
                    "</span>");
  }
  absl::StrAppend(out, "</div>\n</section>\n");
}

void Breakdown(const ReportInput& in, std::string* out) {
  const Prediction& p = in.result.best.prediction;
  double exposed[kNumCategories] = {};
  double hidden[kNumCategories] = {};
  double exposed_total = 0, hidden_total = 0;
  for (const Term& t : p.breakdown) {
    const int c = CategoryOf(t.kind);
    if (IsHidden(t.kind)) {
      hidden[c] += t.seconds;
      hidden_total += t.seconds;
    } else {
      exposed[c] += t.seconds;
      exposed_total += t.seconds;
    }
  }
  absl::StrAppend(out, "<section id=\"breakdown\" data-step-time-s=\"",
                  DataNum(p.step_time_s), "\" data-exposed-sum-s=\"",
                  DataNum(exposed_total), "\" data-hidden-sum-s=\"",
                  DataNum(hidden_total), "\">\n<h2>Where the step time goes</h2>\n"
                  "<p class=\"lead\">The top bar is the critical path of one "
                  "optimizer step on the slowest pipeline rank: its segments "
                  "add up to the step time. The bar below it is communication "
                  "that runs on other streams, hidden behind the compute above "
                  "(it costs SMs and HBM bandwidth, which the compute terms "
                  "include, but no time of its own).</p>\n");
  const double W = 900, x0 = 150;
  const double max = std::max({exposed_total, hidden_total, 1e-12});
  absl::StrAppend(out, "<svg class=\"chart\" viewBox=\"0 0 1080 170\" "
                       "role=\"img\" aria-label=\"step time breakdown\">");
  auto bar = [&](const double* values, double y, double h, bool is_hidden) {
    double x = x0;
    absl::StrAppend(out, "<g data-bar=\"", is_hidden ? "hidden" : "exposed",
                    "\">");
    for (int c = 0; c < kNumCategories; ++c) {
      if (values[c] <= 0) continue;
      const double w = W * values[c] / max;
      absl::StrAppend(
          out, "<rect x=\"", Px(x), "\" y=\"", Px(y), "\" width=\"", Px(w),
          "\" height=\"", Px(h), "\" fill=\"", kCategories[c].color, "\"",
          is_hidden ? " fill-opacity=\"0.55\" stroke-dasharray=\"3 2\"" : "",
          " class=\"seg\" data-kind=\"", kCategories[c].id,
          "\" data-seconds=\"", DataNum(values[c]), "\"><title>",
          Esc(kCategories[c].label), is_hidden ? " (hidden)" : "", ": ",
          Esc(HumanSeconds(values[c])), "</title></rect>");
      if (w > 46) {
        absl::StrAppend(out, "<text class=\"in\" x=\"", Px(x + w / 2),
                        "\" y=\"", Px(y + h / 2 + 4),
                        "\" text-anchor=\"middle\">",
                        Esc(HumanPercent(values[c] / p.step_time_s, 0)),
                        "</text>");
      }
      x += w;
    }
    absl::StrAppend(out, "</g>");
  };
  absl::StrAppend(out, "<text x=\"", Px(x0 - 8), "\" y=\"44\" "
                  "text-anchor=\"end\">critical path</text>"
                  "<text x=\"", Px(x0 - 8), "\" y=\"86\" "
                  "text-anchor=\"end\">hidden</text>");
  bar(exposed, 22, 38, false);
  bar(hidden, 72, 22, true);
  XAxis(out, x0, 110, W, max, units::kMillisecond, "ms");
  absl::StrAppend(out, "</svg>\n<ul class=\"legend\">");
  for (int c = 0; c < kNumCategories; ++c) {
    if (exposed[c] <= 0 && hidden[c] <= 0) continue;
    absl::StrAppend(out, "<li data-kind=\"", kCategories[c].id,
                    "\" data-exposed-s=\"", DataNum(exposed[c]),
                    "\" data-hidden-s=\"", DataNum(hidden[c]),
                    "\"><span class=\"sw\" style=\"background:",
                    kCategories[c].color, "\"></span>",
                    Esc(kCategories[c].label), " ");
    if (exposed[c] > 0) absl::StrAppend(out, Esc(HumanSeconds(exposed[c])));
    if (hidden[c] > 0) {
      absl::StrAppend(out, exposed[c] > 0 ? " + " : "",
                      Esc(HumanSeconds(hidden[c])),
                      exposed[c] > 0 ? " hidden" : " (all hidden)");
    }
    absl::StrAppend(out, "</li>");
  }
  absl::StrAppend(out, "</ul>\n<details><summary>All ", p.breakdown.size(),
                  " terms</summary><table class=\"grid terms\"><thead><tr>"
                  "<th>term</th><th>kind</th><th>time</th><th>share of step"
                  "</th><th>source</th></tr></thead><tbody>");
  for (const Term& t : p.breakdown) {
    absl::StrAppend(out, "<tr class=\"", IsHidden(t.kind) ? "hidden" : "",
                    "\" data-term=\"", Esc(t.name), "\" data-kind=\"",
                    std::string(TermKindName(t.kind)), "\" data-seconds=\"",
                    DataNum(t.seconds), "\" data-source=\"",
                    std::string(CostSourceName(t.source)), "\"><td>", Esc(t.name),
                    "</td><td>", Esc(std::string(TermKindName(t.kind))), "</td><td class=\"n\">",
                    Esc(HumanSeconds(t.seconds)), "</td><td class=\"n\">",
                    IsHidden(t.kind)
                        ? std::string("(hidden)")
                        : Esc(HumanPercent(t.seconds / p.step_time_s)),
                    "</td><td>",
                    t.source == CostSource::kCalibrated ? "calibrated"
                                                        : "datasheet prior",
                    "</td></tr>");
  }
  absl::StrAppend(out, "</tbody></table></details>\n</section>\n");
}

void Memory(const ReportInput& in, std::string* out) {
  const Prediction& p = in.result.best.prediction;
  const MemoryBreakdown& m = p.memory;
  struct Part {
    const char* id;
    const char* label;
    double bytes;
    const char* color;
  };
  const Part parts[] = {
      {"weights", "weights", m.weights_bytes, "#4e79a7"},
      {"grads", "gradients", m.grads_bytes, "#f28e2b"},
      {"optimizer", "optimizer states", m.optimizer_bytes, "#9c755f"},
      {"activations", "activations", m.activations_bytes, "#59a14f"},
      {"comm_buffers", "communication buffers", m.comm_buffers_bytes,
       "#e15759"},
      {"reserve", "reserve (allocator, context, workspaces)", m.reserve_bytes,
       "#bab0ac"},
  };
  const double limit = in.result.memory_limit_bytes;
  absl::StrAppend(out, "<section id=\"memory\" data-peak-bytes=\"",
                  DataNum(p.peak_memory_bytes), "\" data-parts-sum-bytes=\"",
                  DataNum(m.Total()), "\" data-hbm-bytes=\"",
                  DataNum(p.hbm_bytes), "\" data-limit-bytes=\"",
                  DataNum(limit), "\">\n<h2>Memory per GPU</h2>\n"
                  "<p class=\"lead\">On the most loaded pipeline rank, against "
                  "the GPU's HBM capacity",
                  limit > 0 && limit < p.hbm_bytes * (1 - 1e-9)
                      ? " and the search's memory limit"
                      : "",
                  ".</p>\n");
  const double W = 900, x0 = 150;
  const double max = std::max({m.Total(), p.hbm_bytes, limit, 1.0}) * 1.04;
  absl::StrAppend(out, "<svg class=\"chart\" viewBox=\"0 0 1080 130\" "
                       "role=\"img\" aria-label=\"memory per GPU\">"
                       "<text x=\"", Px(x0 - 8), "\" y=\"48\" "
                       "text-anchor=\"end\">peak</text>");
  double x = x0;
  for (const Part& part : parts) {
    if (part.bytes <= 0) continue;
    const double w = W * part.bytes / max;
    absl::StrAppend(out, "<rect x=\"", Px(x), "\" y=\"26\" width=\"", Px(w),
                    "\" height=\"36\" fill=\"", part.color,
                    "\" class=\"seg\" data-part=\"", part.id,
                    "\" data-bytes=\"", DataNum(part.bytes), "\"><title>",
                    Esc(part.label), ": ", Esc(HumanGiB(part.bytes)),
                    "</title></rect>");
    if (w > 50) {
      absl::StrAppend(out, "<text class=\"in\" x=\"", Px(x + w / 2),
                      "\" y=\"48\" text-anchor=\"middle\">",
                      Esc(HumanGiB(part.bytes)), "</text>");
    }
    x += w;
  }
  const double hx = x0 + W * p.hbm_bytes / max;
  absl::StrAppend(out, "<g data-line=\"hbm\"><line class=\"cap\" x1=\"",
                  Px(hx), "\" y1=\"12\" x2=\"", Px(hx),
                  "\" y2=\"76\"/><text x=\"", Px(hx), "\" y=\"9\" "
                  "text-anchor=\"middle\" class=\"cap\">HBM ",
                  Esc(HumanGiB(p.hbm_bytes)), "</text></g>");
  if (limit > 0 && limit < p.hbm_bytes * (1 - 1e-9)) {
    const double lx = x0 + W * limit / max;
    absl::StrAppend(out, "<g data-line=\"limit\"><line class=\"limit\" x1=\"",
                    Px(lx), "\" y1=\"20\" x2=\"", Px(lx),
                    "\" y2=\"76\"/><text x=\"", Px(lx), "\" y=\"88\" "
                    "text-anchor=\"middle\" class=\"limit\">limit ",
                    Esc(HumanGiB(limit)), "</text></g>");
  }
  XAxis(out, x0, 80, W, max, units::kGiB, "GiB");
  absl::StrAppend(out, "</svg>\n<ul class=\"legend\">");
  for (const Part& part : parts) {
    absl::StrAppend(out, "<li data-part=\"", part.id, "\" data-bytes=\"",
                    DataNum(part.bytes), "\"><span class=\"sw\" style=\""
                    "background:", part.color, "\"></span>", Esc(part.label),
                    " ", Esc(HumanGiB(part.bytes)), "</li>");
  }
  absl::StrAppend(out, "</ul>\n</section>\n");
}

bool SamePlan(const Plan& a, const Plan& b) {
  return ToString(a) == ToString(b);
}

void Pareto(const ReportInput& in, std::string* out) {
  const SearchResult& r = in.result;
  const Prediction& best = r.best.prediction;
  absl::StrAppend(out, "<section id=\"pareto\" data-points=\"",
                  r.pareto.size(), "\" data-top=\"", r.top.size(),
                  "\">\n<h2>Throughput vs. peak memory</h2>\n"
                  "<p class=\"lead\">The Pareto front over the ",
                  HumanCount(static_cast<double>(r.candidates_feasible)),
                  " feasible candidates the search scored (",
                  r.exhaustive ? "exhaustive" : "branch-and-bound",
                  " search): no other plan is both faster and smaller. "
                  "Numbered squares are the top ",
                  r.top.size(), " layouts; the ring is the chosen plan.</p>\n");
  double max_mem = std::max(best.hbm_bytes, r.memory_limit_bytes);
  double max_tps = 0;
  auto consider = [&](const Prediction& p) {
    max_mem = std::max(max_mem, p.peak_memory_bytes);
    max_tps = std::max(max_tps, p.tokens_per_sec_per_gpu);
  };
  for (const RankedPlan& rp : r.pareto) consider(rp.prediction);
  for (const RankedPlan& rp : r.top) consider(rp.prediction);
  consider(best);
  max_mem *= 1.05;
  max_tps = std::max(max_tps * 1.1, 1.0);
  const double x0 = 90, y0 = 20, W = 940, H = 330;
  auto X = [&](double bytes) { return x0 + W * bytes / max_mem; };
  auto Y = [&](double tps) { return y0 + H - H * tps / max_tps; };
  absl::StrAppend(out, "<svg class=\"chart\" viewBox=\"0 0 1080 410\" "
                       "role=\"img\" aria-label=\"Pareto front\">");
  // Y grid and labels.
  const double ystep = NiceStep(max_tps, 5);
  absl::StrAppend(out, "<g class=\"axis\">");
  for (double v = 0; v <= max_tps; v += ystep) {
    absl::StrAppend(out, "<line class=\"grid\" x1=\"", Px(x0), "\" y1=\"",
                    Px(Y(v)), "\" x2=\"", Px(x0 + W), "\" y2=\"", Px(Y(v)),
                    "\"/><text x=\"", Px(x0 - 6), "\" y=\"", Px(Y(v) + 4),
                    "\" text-anchor=\"end\">", Esc(HumanCount(v)), "</text>");
  }
  absl::StrAppend(out, "<text x=\"14\" y=\"", Px(y0 + H / 2),
                  "\" transform=\"rotate(-90 14 ", Px(y0 + H / 2),
                  ")\" text-anchor=\"middle\">tokens/s per GPU</text></g>");
  XAxis(out, x0, y0 + H, W, max_mem, units::kGiB, "peak memory per GPU, GiB");
  // Capacity.
  absl::StrAppend(out, "<g data-line=\"hbm\"><line class=\"cap\" x1=\"",
                  Px(X(best.hbm_bytes)), "\" y1=\"", Px(y0), "\" x2=\"",
                  Px(X(best.hbm_bytes)), "\" y2=\"", Px(y0 + H),
                  "\"/><text class=\"cap\" x=\"", Px(X(best.hbm_bytes) - 4),
                  "\" y=\"", Px(y0 + H - 6), "\" text-anchor=\"end\">HBM ",
                  Esc(HumanGiB(best.hbm_bytes)), "</text></g>");
  // Front as a staircase.
  if (!r.pareto.empty()) {
    std::string path;
    for (size_t i = 0; i < r.pareto.size(); ++i) {
      const Prediction& q = r.pareto[i].prediction;
      if (i == 0) {
        absl::StrAppend(&path, "M", Px(X(q.peak_memory_bytes)), " ",
                        Px(Y(q.tokens_per_sec_per_gpu)));
      } else {
        absl::StrAppend(&path, " H", Px(X(q.peak_memory_bytes)), " V",
                        Px(Y(q.tokens_per_sec_per_gpu)));
      }
    }
    absl::StrAppend(out, "<path class=\"front\" d=\"", path, "\"/>");
  }
  absl::StrAppend(out, "<g data-series=\"pareto\">");
  for (const RankedPlan& rp : r.pareto) {
    const Prediction& q = rp.prediction;
    absl::StrAppend(out, "<circle class=\"pf\" cx=\"",
                    Px(X(q.peak_memory_bytes)), "\" cy=\"",
                    Px(Y(q.tokens_per_sec_per_gpu)), "\" r=\"4.5\" "
                    "data-memory-bytes=\"", DataNum(q.peak_memory_bytes),
                    "\" data-tokens-per-sec-per-gpu=\"",
                    DataNum(q.tokens_per_sec_per_gpu), "\"><title>",
                    Esc(ToString(rp.plan)), ": ",
                    Esc(HumanCount(q.tokens_per_sec_per_gpu)),
                    " tok/s/GPU, ", Esc(HumanGiB(q.peak_memory_bytes)),
                    "</title></circle>");
  }
  absl::StrAppend(out, "</g><g data-series=\"top\">");
  // Rank labels: first free slot among a few offsets around the mark, so
  // that plans with nearly equal figures stay readable.
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> placed;
  auto place = [&](double cx, double cy, const std::string& text,
                   double* lx, double* ly) {
    const double w = 7.0 * text.size() + 2, h = 12;
    const double offsets[][2] = {
        {14, -6},       {14, 14},       {-14 - w, -6}, {-14 - w, 14},
        {14, -20},      {14, 28},       {-14 - w, -20}, {-14 - w, 28},
        {28, -6},       {28, 14},       {-28 - w, -6}, {-28 - w, 14}};
    for (const auto& o : offsets) {
      const Box b{cx + o[0], cy + o[1] - h + 2, cx + o[0] + w, cy + o[1] + 2};
      bool clash = false;
      for (const Box& p : placed) {
        if (b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1) {
          clash = true;
          break;
        }
      }
      if (!clash || &o == &offsets[11]) {
        placed.push_back(b);
        *lx = b.x0;
        *ly = cy + o[1];
        return;
      }
    }
  };
  placed.push_back({X(best.peak_memory_bytes) - 12,
                    Y(best.tokens_per_sec_per_gpu) - 12,
                    X(best.peak_memory_bytes) + 12,
                    Y(best.tokens_per_sec_per_gpu) + 12});
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Prediction& q = r.top[i].prediction;
    placed.push_back({X(q.peak_memory_bytes) - 6, Y(q.tokens_per_sec_per_gpu) - 6,
                      X(q.peak_memory_bytes) + 6, Y(q.tokens_per_sec_per_gpu) + 6});
  }
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Prediction& q = r.top[i].prediction;
    const double cx = X(q.peak_memory_bytes), cy = Y(q.tokens_per_sec_per_gpu);
    double lx = cx + 8, ly = cy - 7;
    place(cx, cy, absl::StrCat(i + 1), &lx, &ly);
    absl::StrAppend(out, "<rect class=\"tk\" x=\"", Px(cx - 5), "\" y=\"",
                    Px(cy - 5), "\" width=\"10\" height=\"10\" data-rank=\"",
                    i + 1, "\" data-memory-bytes=\"",
                    DataNum(q.peak_memory_bytes),
                    "\" data-tokens-per-sec-per-gpu=\"",
                    DataNum(q.tokens_per_sec_per_gpu), "\"><title>#", i + 1,
                    " ", Esc(ToString(r.top[i].plan)), "</title></rect>"
                    "<text class=\"tkl\" x=\"", Px(lx), "\" y=\"",
                    Px(ly), "\">", i + 1, "</text>");
  }
  absl::StrAppend(out, "</g><circle class=\"chosen\" cx=\"",
                  Px(X(best.peak_memory_bytes)), "\" cy=\"",
                  Px(Y(best.tokens_per_sec_per_gpu)),
                  "\" r=\"11\" data-series=\"chosen\" data-memory-bytes=\"",
                  DataNum(best.peak_memory_bytes),
                  "\" data-tokens-per-sec-per-gpu=\"",
                  DataNum(best.tokens_per_sec_per_gpu),
                  "\"><title>chosen: ", Esc(ToString(in.result.best.plan)),
                  "</title></circle></svg>\n"
                  "<ul class=\"legend\"><li><span class=\"sw dot\"></span>"
                  "Pareto front</li><li><span class=\"sw sq\"></span>top-K "
                  "layout (rank)</li><li><span class=\"sw ring\"></span>chosen"
                  "</li><li><span class=\"sw capk\"></span>HBM capacity</li>"
                  "</ul>\n</section>\n");
}

void Pipeline(const ReportInput& in, std::string* out) {
  const Prediction& p = in.result.best.prediction;
  const PipelineScheduleSpec spec = DeriveScheduleSpec(p);
  absl::StatusOr<PipelineTimeline> tl = SimulatePipeline(spec);
  double model_bubble = 0;
  for (const Term& t : p.breakdown) {
    if (t.kind == TermKind::kPipelineBubble) model_bubble += t.seconds;
  }
  absl::StrAppend(out, "<section id=\"pipeline\" data-pp=\"", spec.pp,
                  "\" data-vp=\"", spec.vp, "\" data-micro-batches=\"",
                  spec.micro_batches, "\" data-forward-s=\"",
                  DataNum(spec.forward_s), "\" data-backward-s=\"",
                  DataNum(spec.backward_s), "\" data-p2p-s=\"",
                  DataNum(spec.p2p_s), "\" data-model-step-s=\"",
                  DataNum(p.step_time_s), "\" data-model-bubble-s=\"",
                  DataNum(model_bubble), "\"");
  if (!tl.ok()) {
    absl::StrAppend(out, ">\n<h2>Pipeline schedule</h2><p class=\"warn\">",
                    Esc(std::string(tl.status().message())), "</p></section>\n");
    return;
  }
  const int ranks = std::min(spec.pp, std::max(1, in.timeline_ranks));
  absl::StrAppend(out, " data-timeline-step-s=\"", DataNum(tl->step_s),
                  "\" data-timeline-bubble-s=\"", DataNum(tl->bubble_s[0]),
                  "\" data-ranks-drawn=\"", ranks, "\">\n<h2>Pipeline schedule"
                  ", one step</h2>\n<p class=\"lead\">",
                  spec.vp > 1 ? "Interleaved 1F1B" : "1F1B", ", pp=", spec.pp,
                  spec.vp > 1 ? absl::StrCat(" with ", spec.vp,
                                             " model chunks per rank")
                              : std::string(),
                  ", ", spec.micro_batches, " micro-batches per step; ranks 0-",
                  ranks - 1, " of ", spec.pp,
                  " drawn. Blocks are forward (F) and backward (B) passes "
                  "labelled by micro-batch; hatched gaps are the bubble. "
                  "Timings are derived from the prediction's terms (compute "
                  "split 1:2 between forward and backward, recompute in "
                  "backward) and the schedule is simulated; simulated step ",
                  Esc(HumanSeconds(tl->step_s)), " and rank-0 bubble ",
                  Esc(HumanSeconds(tl->bubble_s[0])),
                  " vs. the step model's ", Esc(HumanSeconds(p.step_time_s)),
                  " and ", Esc(HumanSeconds(model_bubble)), ".</p>\n");
  const double x0 = 90, W = 970, lane_h = 22, comm_h = 9, gap = 12;
  const double rank_h = lane_h + 2 + comm_h + gap;
  const double panel_h = 22 + ranks * rank_h + 36;
  // The second panel zooms into the start of the step (warm-up and the first
  // steady 1F1B passes), where the passes are wide enough to label.
  double zoom_s = tl->step_s;
  {
    std::vector<double> rank0_ends;
    for (const PipelineOp& op : tl->compute) {
      if (op.rank == 0) rank0_ends.push_back(op.end_s);
    }
    const size_t k = static_cast<size_t>(3 * spec.pp * spec.vp + 2);
    if (k < rank0_ends.size()) zoom_s = rank0_ends[k];
  }
  const bool zoom = zoom_s < 0.6 * tl->step_s;
  const double height = zoom ? 2 * panel_h + 24 : panel_h;
  absl::StrAppend(out, "<svg class=\"chart timeline\" viewBox=\"0 0 1080 ",
                  Px(height), "\" role=\"img\" aria-label=\"pipeline schedule"
                  "\"><defs><pattern id=\"hatch\" width=\"6\" height=\"6\" "
                  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate"
                  "(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
                  "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#b0b0b0"
                  "\" stroke-width=\"2\"/></pattern></defs>");
  // Per-rank ends of the last backward pass, for the bubble background.
  std::vector<double> last_bwd(ranks, 0.0);
  std::vector<int> fwd_count(ranks, 0), bwd_count(ranks, 0);
  for (const PipelineOp& op : tl->compute) {
    if (op.rank >= ranks) continue;
    if (op.kind == PipelineOpKind::kBackward) {
      last_bwd[op.rank] = std::max(last_bwd[op.rank], op.end_s);
      ++bwd_count[op.rank];
    } else if (op.kind == PipelineOpKind::kForward) {
      ++fwd_count[op.rank];
    }
  }
  const double min_label_w = 13;
  // Draws ranks [0, ranks) over [0, t1] with its top at y_top; the full
  // panel carries the data-* attributes.
  auto panel = [&](double t1, double y_top, bool full) {
    const double scale = W / std::max(t1, 1e-12);
    for (int r = 0; r < ranks; ++r) {
      const double y = y_top + 22 + r * rank_h;
      absl::StrAppend(out, "<g");
      if (full) {
        absl::StrAppend(out, " data-rank=\"", r, "\" data-forward-passes=\"",
                        fwd_count[r], "\" data-backward-passes=\"",
                        bwd_count[r], "\" data-bubble-s=\"",
                        DataNum(tl->bubble_s[r]), "\"");
      }
      absl::StrAppend(out, "><text x=\"", Px(x0 - 6), "\" y=\"", Px(y + 15),
                      "\" text-anchor=\"end\">rank ", r, "</text><text x=\"",
                      Px(x0 - 6), "\" y=\"", Px(y + lane_h + 2 + 8),
                      "\" text-anchor=\"end\" class=\"small\">comm</text>"
                      "<rect x=\"", Px(x0), "\" y=\"", Px(y), "\" width=\"",
                      Px(std::min(last_bwd[r], t1) * scale), "\" height=\"",
                      Px(lane_h), "\" fill=\"url(#hatch)\" class=\"bubble\"/>"
                      "<rect x=\"", Px(x0), "\" y=\"", Px(y + lane_h + 2),
                      "\" width=\"", Px(W), "\" height=\"", Px(comm_h),
                      "\" fill=\"#fafafa\" stroke=\"#e0e0e0\" "
                      "stroke-width=\"0.5\"/>");
      // Too many passes to draw one by one (narrower than 2 px): adjacent
      // passes merge into runs; the zoomed panel shows them one by one.
      const bool dense =
          std::min(spec.forward_s, spec.backward_s) * scale < 2.0;
      if (dense) {
        const double pass_s = spec.forward_s + spec.backward_s;
        const double hidden_share =
            pass_s > 0 ? std::min(1.0, (spec.forward_hidden_comm_s +
                                        spec.backward_hidden_comm_s) /
                                           pass_s)
                       : 0.0;
        auto runs = [&](const std::vector<PipelineOp>& ops, bool passes,
                        auto&& draw) {
          double run_start = -1, run_end = -1;
          int count = 0;
          for (const PipelineOp& op : ops) {
            const bool is_pass = op.kind == PipelineOpKind::kForward ||
                                 op.kind == PipelineOpKind::kBackward;
            if (op.rank != r || op.start_s >= t1 || is_pass != passes ||
                (!passes && op.kind != PipelineOpKind::kSend)) {
              continue;
            }
            const double end = std::min(op.end_s, t1);
            if (count > 0 && (op.start_s - run_end) * scale < 0.75) {
              run_end = std::max(run_end, end);
              ++count;
              continue;
            }
            if (count > 0) draw(run_start, run_end, count);
            run_start = op.start_s;
            run_end = end;
            count = 1;
          }
          if (count > 0) draw(run_start, run_end, count);
        };
        runs(tl->compute, true, [&](double a, double b, int n) {
          absl::StrAppend(out, "<rect x=\"", Px(x0 + a * scale), "\" y=\"",
                          Px(y), "\" width=\"", Px((b - a) * scale),
                          "\" height=\"", Px(lane_h),
                          "\" fill=\"#5b8c85\"><title>", n,
                          " passes</title></rect>");
          if (hidden_share > 0) {
            absl::StrAppend(out, "<rect x=\"", Px(x0 + a * scale), "\" y=\"",
                            Px(y + lane_h + 2), "\" width=\"",
                            Px((b - a) * scale), "\" height=\"", Px(comm_h),
                            "\" fill=\"#e15759\" fill-opacity=\"",
                            DataNum(0.45 * hidden_share), "\"/>");
          }
        });
        runs(tl->comm, false, [&](double a, double b, int) {
          absl::StrAppend(out, "<rect x=\"", Px(x0 + a * scale), "\" y=\"",
                          Px(y + lane_h + 2), "\" width=\"",
                          Px(std::max((b - a) * scale, 0.5)), "\" height=\"",
                          Px(comm_h / 2), "\" fill=\"#edc948\"/>");
        });
      }
      for (const PipelineOp& op : tl->compute) {
        if (op.rank != r || op.start_s >= t1) continue;
        if (dense && op.kind != PipelineOpKind::kOptimizer) continue;
        const double end = std::min(op.end_s, t1);
        const double bx = x0 + op.start_s * scale;
        const double bw = std::max((end - op.start_s) * scale, 0.3);
        const char* fill;
        std::string label;
        double hidden = 0;
        switch (op.kind) {
          case PipelineOpKind::kForward:
            fill = op.chunk % 2 == 0 ? "#4e79a7" : "#7fa6cf";
            label = absl::StrCat(op.micro_batch + 1);
            hidden = spec.forward_hidden_comm_s;
            break;
          case PipelineOpKind::kBackward:
            fill = op.chunk % 2 == 0 ? "#59a14f" : "#8cc47f";
            label = absl::StrCat(op.micro_batch + 1);
            hidden = spec.backward_hidden_comm_s;
            break;
          default:
            fill = "#9c755f";
            label = "opt";
            break;
        }
        absl::StrAppend(out, "<rect x=\"", Px(bx), "\" y=\"", Px(y),
                        "\" width=\"", Px(bw), "\" height=\"", Px(lane_h),
                        "\" fill=\"", fill, "\" class=\"op\"/>");
        if (bw >= min_label_w * label.size() * 0.6 + 4) {
          absl::StrAppend(out, "<text class=\"in small\" x=\"",
                          Px(bx + bw / 2), "\" y=\"", Px(y + 15),
                          "\" text-anchor=\"middle\">", label, "</text>");
        }
        if (hidden > 0) {
          const double hw = std::min(hidden, end - op.start_s) * scale;
          absl::StrAppend(out, "<rect x=\"", Px(bx), "\" y=\"",
                          Px(y + lane_h + 2), "\" width=\"", Px(hw),
                          "\" height=\"", Px(comm_h),
                          "\" fill=\"#e15759\" fill-opacity=\"0.45\"/>");
        }
      }
      for (const PipelineOp& op : tl->comm) {
        if (op.rank != r || op.start_s >= t1) continue;
        if (dense && op.kind == PipelineOpKind::kSend) continue;
        const double bx = x0 + op.start_s * scale;
        const double bw =
            std::max((std::min(op.end_s, t1) - op.start_s) * scale, 0.5);
        absl::StrAppend(out, "<rect x=\"", Px(bx), "\" y=\"",
                        Px(y + lane_h + 2), "\" width=\"", Px(bw),
                        "\" height=\"", Px(comm_h), "\" fill=\"",
                        op.kind == PipelineOpKind::kSend ? "#edc948"
                                                         : "#76b7b2",
                        "\"/>");
      }
      absl::StrAppend(out, "</g>");
    }
    XAxis(out, x0, y_top + 22 + ranks * rank_h, W, t1, units::kMillisecond,
          "ms");
  };
  absl::StrAppend(out, "<text x=\"", Px(x0), "\" y=\"12\" class=\"small\">"
                  "whole step</text>");
  panel(tl->step_s, 0, true);
  if (zoom) {
    const double y2 = panel_h + 24;
    absl::StrAppend(out, "<g data-panel=\"zoom\" data-until-s=\"",
                    DataNum(zoom_s), "\"><text x=\"", Px(x0), "\" y=\"",
                    Px(y2 + 12), "\" class=\"small\">first ",
                    Esc(HumanSeconds(zoom_s)),
                    " zoomed: warm-up, then one forward and one backward pass "
                    "in turn; numbers are micro-batches</text>");
    panel(zoom_s, y2, false);
    absl::StrAppend(out, "</g>");
  }
  absl::StrAppend(out, "</svg>\n<ul class=\"legend\">"
                  "<li><span class=\"sw\" style=\"background:#4e79a7\"></span>"
                  "forward (lighter: odd model chunk)</li>"
                  "<li><span class=\"sw\" style=\"background:#59a14f\"></span>"
                  "backward</li>"
                  "<li><span class=\"sw hatch\"></span>bubble (idle)</li>"
                  "<li><span class=\"sw\" style=\"background:#edc948\"></span>"
                  "PP send/recv</li>"
                  "<li><span class=\"sw\" style=\"background:#e15759;opacity:"
                  ".45\"></span>TP/EP/CP communication hidden behind the pass"
                  "</li><li><span class=\"sw\" style=\"background:#76b7b2\">"
                  "</span>exposed DP gradient sync / offload</li>"
                  "<li><span class=\"sw\" style=\"background:#9c755f\"></span>"
                  "optimizer</li>",
                  std::min(spec.forward_s, spec.backward_s) *
                              (W / std::max(tl->step_s, 1e-12)) <
                          2.0
                      ? "<li><span class=\"sw\" style=\"background:#5b8c85\">"
                        "</span>passes too narrow to draw one by one (whole "
                        "step)</li>"
                      : "",
                  "</ul>\n</section>\n");
}

std::vector<std::pair<std::string, std::string>> PlanColumns(const Plan& plan);

// "pp=4 vp=7 mbs=8": the columns of `other` that differ from `base`.
std::string PlanDiff(const Plan& base, const Plan& other) {
  const auto a = PlanColumns(base);
  const auto b = PlanColumns(other);
  std::vector<std::string> parts;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].second != b[i].second) {
      parts.push_back(absl::StrCat(b[i].first, "=", b[i].second));
    }
  }
  return absl::StrJoin(parts, " ");
}

std::string PlanKey(const Prediction& p) {
  return absl::StrCat(ToString(p.parallel), " ", ToString(p.knobs));
}

void WhatIf(const ReportInput& in, std::string* out) {
  const Prediction& base = in.result.best.prediction;
  const int base_gpus = in.result.problem.shape.gpus;
  absl::StrAppend(out, "<section id=\"what-if\" data-scenarios=\"",
                  in.what_ifs.size(), "\" data-base-tokens-per-sec-per-gpu=\"",
                  DataNum(base.tokens_per_sec_per_gpu),
                  "\">\n<h2>What if</h2>\n");
  if (in.what_ifs.empty()) {
    absl::StrAppend(out, "<p class=\"lead\">No what-if scenarios were "
                         "computed for this report.</p></section>\n");
    return;
  }
  absl::StrAppend(out, "<p class=\"lead\">Each row changes one property of "
                       "the cluster (or the GPU count, with the same global "
                       "batch) and runs the search again from scratch. Bars: "
                       "best tokens/s per GPU relative to the chosen plan's "
                       "(1.0 = unchanged).</p>\n");
  // Chart: ratio per scenario, axis centred on 1.
  double max_dev = 0.05;
  for (const WhatIfResult& w : in.what_ifs) {
    if (w.best) {
      max_dev = std::max(max_dev, std::fabs(w.best->prediction.tokens_per_sec_per_gpu /
                                                base.tokens_per_sec_per_gpu -
                                            1.0));
    }
  }
  max_dev = std::ceil(max_dev * 1.1 * 20) / 20;  // to the next 5%
  const double row_h = 22, x_mid = 560, half = 300;
  const double height = 30 + in.what_ifs.size() * row_h + 30;
  absl::StrAppend(out, "<svg class=\"chart\" viewBox=\"0 0 1080 ",
                  Px(height), "\" role=\"img\" aria-label=\"what-if\">"
                  "<line class=\"cap\" x1=\"", Px(x_mid), "\" y1=\"14\" x2=\"",
                  Px(x_mid), "\" y2=\"", Px(height - 26), "\"/>");
  for (int s : {-1, 1}) {
    absl::StrAppend(out, "<text x=\"", Px(x_mid + s * half), "\" y=\"",
                    Px(height - 10), "\" text-anchor=\"middle\" class=\"small"
                    "\">", Esc(absl::StrFormat("%.2f", 1 + s * max_dev)),
                    "</text><line class=\"grid\" x1=\"", Px(x_mid + s * half),
                    "\" y1=\"14\" x2=\"", Px(x_mid + s * half), "\" y2=\"",
                    Px(height - 26), "\"/>");
  }
  absl::StrAppend(out, "<text x=\"", Px(x_mid), "\" y=\"", Px(height - 10),
                  "\" text-anchor=\"middle\" class=\"small\">1.00</text>");
  for (size_t i = 0; i < in.what_ifs.size(); ++i) {
    const WhatIfResult& w = in.what_ifs[i];
    const double y = 18 + i * row_h;
    absl::StrAppend(out, "<text x=\"", Px(x_mid - half - 12), "\" y=\"",
                    Px(y + 14), "\" text-anchor=\"end\">",
                    Esc(ToString(w.scenario)), "</text>");
    if (!w.best) {
      absl::StrAppend(out, "<text x=\"", Px(x_mid + 6), "\" y=\"", Px(y + 14),
                      "\" class=\"warn\">no feasible plan</text>");
      continue;
    }
    const double ratio =
        w.best->prediction.tokens_per_sec_per_gpu / base.tokens_per_sec_per_gpu;
    const double len = half * (ratio - 1) / max_dev;
    absl::StrAppend(out, "<rect x=\"", Px(len >= 0 ? x_mid : x_mid + len),
                    "\" y=\"", Px(y + 3), "\" width=\"", Px(std::fabs(len)),
                    "\" height=\"", Px(row_h - 7), "\" fill=\"",
                    ratio >= 1 ? "#59a14f" : "#e15759",
                    "\"/><text x=\"", Px(len >= 0 ? x_mid + len + 5 : x_mid + len - 5),
                    "\" y=\"", Px(y + 14), "\" text-anchor=\"",
                    len >= 0 ? "start" : "end", "\" class=\"small\">",
                    Esc(absl::StrFormat("%.3f", ratio)), "</text>");
  }
  absl::StrAppend(out, "</svg>\n<table class=\"grid\"><thead><tr><th>scenario"
                       "</th><th>GPUs</th><th>tokens/s/GPU</th><th>vs. chosen"
                       "</th><th>tokens/s, all GPUs</th><th>step time</th>"
                       "<th>best plan there: what differs from the chosen plan</th></tr>"
                       "</thead><tbody>");
  const std::string base_key = PlanKey(base);
  for (const WhatIfResult& w : in.what_ifs) {
    absl::StrAppend(out, "<tr data-scenario=\"", std::string(WhatIfKnobName(w.scenario.knob)),
                    "\" data-factor=\"", DataNum(w.scenario.factor),
                    "\" data-gpus=\"", w.gpus, "\"");
    if (!w.best) {
      absl::StrAppend(out, " data-feasible=\"0\"><td>",
                      Esc(ToString(w.scenario)), "</td><td class=\"n\">",
                      w.gpus, "</td><td colspan=\"5\" class=\"warn\">",
                      Esc(w.error.empty() ? "no feasible plan" : w.error),
                      "</td></tr>");
      continue;
    }
    const Prediction& q = w.best->prediction;
    const double ratio = q.tokens_per_sec_per_gpu / base.tokens_per_sec_per_gpu;
    const bool same = PlanKey(q) == base_key;
    absl::StrAppend(
        out, " data-feasible=\"1\" data-tokens-per-sec-per-gpu=\"",
        DataNum(q.tokens_per_sec_per_gpu), "\" data-ratio=\"", DataNum(ratio),
        "\" data-step-time-s=\"", DataNum(q.step_time_s),
        "\" data-same-plan=\"", same ? 1 : 0, "\"><td class=\"nw\">",
        Esc(ToString(w.scenario)), "</td><td class=\"n\">", HumanCount(w.gpus),
        "</td><td class=\"n\">", HumanCount(q.tokens_per_sec_per_gpu),
        "</td><td class=\"n ", ratio >= 1 ? "up" : "down", "\">",
        Esc(absl::StrFormat("%+.1f%%", (ratio - 1) * 100)),
        "</td><td class=\"n\">",
        HumanCount(q.tokens_per_sec_per_gpu * w.gpus), "</td><td class=\"n\">",
        Esc(HumanSeconds(q.step_time_s)), "</td><td class=\"plan\" title=\"",
        Esc(ToString(w.best->plan)), "\">",
        same ? std::string("same plan")
             : Esc(PlanDiff(in.result.best.plan, w.best->plan)),
        "</td></tr>");
  }
  absl::StrAppend(out, "</tbody></table>\n<p class=\"small\">Base: ",
                  HumanCount(base_gpus), " GPUs, ",
                  HumanCount(base.tokens_per_sec_per_gpu),
                  " tokens/s per GPU.</p>\n</section>\n");
}

// Flattens a plan into named columns for the top-K table.
std::vector<std::pair<std::string, std::string>> PlanColumns(const Plan& plan) {
  std::vector<std::pair<std::string, std::string>> cols;
  const ParallelConfig& pc = plan.parallel;
  for (auto [name, v] : {std::pair<const char*, int>{"tp", pc.tp},
                         {"pp", pc.pp}, {"vp", pc.vp}, {"ep", pc.ep},
                         {"etp", pc.etp}, {"cp", pc.cp}, {"dp", pc.dp},
                         {"mbs", pc.mbs}}) {
    cols.emplace_back(name, absl::StrCat(v));
  }
  cols.emplace_back("shard_params", pc.shard_params ? "true" : "false");
  cols.emplace_back("rank_order", std::string(RankOrderName(pc)));
  cols.emplace_back("first_stage_layers",
                    pc.first_stage_layers ? absl::StrCat(*pc.first_stage_layers)
                                          : "auto");
  cols.emplace_back("last_stage_layers",
                    pc.last_stage_layers ? absl::StrCat(*pc.last_stage_layers)
                                         : "auto");
  const nlohmann::json knobs = ToJson(plan.knobs);
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    cols.emplace_back(it.key(), it->is_string() ? it->get<std::string>()
                                                : it->dump());
  }
  return cols;
}

void TopK(const ReportInput& in, std::string* out) {
  const SearchResult& r = in.result;
  const Prediction& best = r.best.prediction;
  const auto best_cols = PlanColumns(r.best.plan);
  // Columns shown: the layout always, knobs only where some plan differs.
  std::vector<bool> show(best_cols.size(), false);
  for (size_t c = 0; c < best_cols.size(); ++c) {
    show[c] = c < 8;  // tp .. mbs
  }
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  for (const RankedPlan& rp : r.top) {
    rows.push_back(PlanColumns(rp.plan));
    for (size_t c = 0; c < best_cols.size() && c < rows.back().size(); ++c) {
      if (rows.back()[c].second != best_cols[c].second) show[c] = true;
    }
  }
  absl::StrAppend(out, "<section id=\"top-k\" data-plans=\"", r.top.size(),
                  "\">\n<h2>Top ", r.top.size(), " layouts</h2>\n<p class=\""
                  "lead\">Best plan per layout, fastest first. Highlighted "
                  "cells differ from the chosen plan.</p>\n<div class=\"scroll"
                  "\"><table class=\"grid topk\"><thead><tr><th>#</th>"
                  "<th>tokens/s/GPU</th><th>vs. best</th><th>step time</th>"
                  "<th>MFU</th><th>peak memory</th>");
  for (size_t c = 0; c < best_cols.size(); ++c) {
    if (show[c]) absl::StrAppend(out, "<th>", Esc(best_cols[c].first), "</th>");
  }
  absl::StrAppend(out, "</tr></thead><tbody>");
  auto metric_cell = [&](const char* col, double v, double b,
                         const std::string& text) {
    const bool diff = std::fabs(v - b) > 1e-9 * std::max(1.0, std::fabs(b));
    absl::StrAppend(out, "<td class=\"n", diff ? " diff" : "",
                    "\" data-col=\"", col, "\" data-value=\"", DataNum(v),
                    "\" data-diff=\"", diff ? 1 : 0, "\">", Esc(text),
                    "</td>");
  };
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Prediction& q = r.top[i].prediction;
    const bool chosen = SamePlan(r.top[i].plan, r.best.plan);
    absl::StrAppend(out, "<tr data-rank=\"", i + 1, "\"",
                    chosen ? " class=\"chosen\" data-chosen=\"1\"" : "",
                    "><td>", i + 1, "</td>");
    metric_cell("tokens_per_sec_per_gpu", q.tokens_per_sec_per_gpu,
                best.tokens_per_sec_per_gpu,
                HumanCount(q.tokens_per_sec_per_gpu));
    const double rel = q.tokens_per_sec_per_gpu / best.tokens_per_sec_per_gpu - 1;
    absl::StrAppend(out, "<td class=\"n\">",
                    Esc(absl::StrFormat("%+.1f%%", rel * 100)), "</td>");
    metric_cell("step_time_s", q.step_time_s, best.step_time_s,
                HumanSeconds(q.step_time_s));
    metric_cell("mfu", q.mfu, best.mfu, HumanPercent(q.mfu));
    metric_cell("peak_memory_bytes", q.peak_memory_bytes,
                best.peak_memory_bytes, HumanGiB(q.peak_memory_bytes));
    for (size_t c = 0; c < best_cols.size() && c < rows[i].size(); ++c) {
      if (!show[c]) continue;
      const bool diff = rows[i][c].second != best_cols[c].second;
      absl::StrAppend(out, "<td class=\"", diff ? "diff" : "",
                      "\" data-col=\"", Esc(rows[i][c].first),
                      "\" data-value=\"", Esc(rows[i][c].second),
                      "\" data-diff=\"", diff ? 1 : 0, "\">",
                      Esc(rows[i][c].second), "</td>");
    }
    absl::StrAppend(out, "</tr>");
  }
  absl::StrAppend(out, "</tbody></table></div>\n");
  std::vector<std::string> common;
  for (size_t c = 0; c < best_cols.size(); ++c) {
    if (!show[c]) {
      common.push_back(absl::StrCat(best_cols[c].first, "=",
                                    best_cols[c].second));
    }
  }
  if (!common.empty()) {
    absl::StrAppend(out, "<p class=\"small\" data-common=\"",
                    common.size(), "\">Same in every row: <code>",
                    Esc(absl::StrJoin(common, " ")), "</code></p>\n");
  }
  absl::StrAppend(out, "</section>\n");
}

void SearchSection(const ReportInput& in, std::string* out) {
  const SearchResult& r = in.result;
  absl::StrAppend(out, "<section id=\"search\" data-candidates-total=\"",
                  r.candidates_total, "\" data-candidates-evaluated=\"",
                  r.candidates_evaluated, "\" data-candidates-feasible=\"",
                  r.candidates_feasible, "\" data-mode=\"",
                  r.exhaustive ? "exhaustive" : "default",
                  "\">\n<h2>Search</h2>\n<p>",
                  r.exhaustive ? "Exhaustive" : "Branch-and-bound",
                  " search: ", HumanCount(static_cast<double>(r.candidates_total)),
                  " candidates, ",
                  HumanCount(static_cast<double>(r.candidates_evaluated)),
                  " scored, ",
                  HumanCount(static_cast<double>(r.candidates_feasible)),
                  " feasible, in ",
                  Esc(absl::StrFormat("%.2f s", r.search_seconds)), ".</p>\n");
  if (!r.pruned.empty()) {
    absl::StrAppend(out, "<table class=\"grid\"><thead><tr><th>rule</th>"
                         "<th>candidates</th><th>why</th><th>example</th>"
                         "</tr></thead><tbody>");
    for (const PruneCount& pc : r.pruned) {
      absl::StrAppend(out, "<tr data-rule=\"", std::string(PruneRuleName(pc.rule)),
                      "\" data-detail=\"", Esc(pc.detail),
                      "\" data-candidates=\"", pc.candidates, "\"><td>",
                      Esc(std::string(PruneRuleName(pc.rule))),
                      pc.detail.empty() ? "" : " / ", Esc(pc.detail),
                      "</td><td class=\"n\">",
                      HumanCount(static_cast<double>(pc.candidates)),
                      "</td><td>", Esc(std::string(PruneRuleText(pc.rule))),
                      "</td><td class=\"small\">", Esc(pc.example),
                      "</td></tr>");
    }
    absl::StrAppend(out, "</tbody></table>\n");
  }
  absl::StrAppend(out, "</section>\n");
}

constexpr char kStyle[] = R"css(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2328; background: #fff; margin: 0 auto; max-width: 1120px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 6px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
header .sub { color: #57606a; }
section { margin: 22px 0; break-inside: avoid; page-break-inside: avoid; }
.lead, .small { color: #57606a; }
.small { font-size: 12px; }
.metrics { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.metric { flex: 1 1 150px; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; }
.metric .v { font-size: 21px; font-weight: 600; }
.metric .l { color: #57606a; font-size: 12px; }
.cols { display: flex; flex-wrap: wrap; gap: 16px; }
.cols > table { flex: 1 1 420px; }
table { border-collapse: collapse; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.kv th { text-align: left; color: #57606a; font-weight: normal; padding: 2px 12px 2px 0; vertical-align: top; white-space: nowrap; }
table.kv td { padding: 2px 0; word-break: break-word; vertical-align: top; }
table.grid { width: 100%; font-size: 12.5px; }
table.grid th, table.grid td { border: 1px solid #d0d7de; padding: 3px 6px; }
table.grid th { background: #f6f8fa; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.diff { background: #fff1c2; font-weight: 600; }
tr.chosen td { border-top: 2px solid #1f2328; border-bottom: 2px solid #1f2328; }
tr.hidden td { color: #6e7781; }
td.up { color: #1a7f37; } td.down { color: #cf222e; }
td.nw { white-space: nowrap; }
td.plan { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 11.5px; }
.scroll { overflow-x: auto; }
.provenance { border-left: 4px solid #bf8700; background: #fff8c5; padding: 6px 10px; margin-top: 10px; }
.provenance.calibrated { border-color: #1a7f37; background: #dafbe1; }
.provenance.mixed { border-color: #0969da; background: #ddf4ff; }
.warn { color: #cf222e; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
svg.chart { width: 100%; height: auto; display: block; font-size: 12px; fill: #1f2328; }
svg text { fill: #1f2328; }
svg text.in { fill: #fff; font-weight: 600; }
svg text.small { font-size: 10px; }
svg .axis line { stroke: #57606a; stroke-width: 1; }
svg line.grid { stroke: #e6e8eb; stroke-width: 1; }
svg line.cap { stroke: #cf222e; stroke-width: 2; stroke-dasharray: 6 3; }
svg text.cap { fill: #cf222e; font-weight: 600; }
svg line.limit { stroke: #bf8700; stroke-width: 2; stroke-dasharray: 2 3; }
svg text.limit { fill: #9a6700; }
svg rect.seg { stroke: #fff; stroke-width: 1; }
svg rect.op { stroke: #fff; stroke-width: 0.4; }
svg path.front { fill: none; stroke: #4e79a7; stroke-width: 1.5; }
svg circle.pf { fill: #4e79a7; }
svg rect.tk { fill: #f28e2b; stroke: #1f2328; stroke-width: 1; }
svg text.tkl { font-size: 11px; font-weight: 600; }
svg circle.chosen { fill: none; stroke: #cf222e; stroke-width: 3; }
ul.legend { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12.5px; }
.sw { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.sw.dot { background: #4e79a7; border-radius: 6px; }
.sw.sq { background: #f28e2b; border: 1px solid #1f2328; }
.sw.ring { border: 3px solid #cf222e; border-radius: 6px; }
.sw.capk { border-left: 3px dashed #cf222e; border-radius: 0; }
.sw.hatch { background: repeating-linear-gradient(45deg, #f3f3f3 0 3px, #b0b0b0 3px 5px); }
details summary { cursor: pointer; color: #0969da; margin: 6px 0; }
footer { color: #57606a; font-size: 12px; border-top: 1px solid #d0d7de; padding-top: 6px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  details > table { display: table; }
  .scroll { overflow: visible; }
  section { margin: 12px 0; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)css";

}  // namespace

absl::StatusOr<std::string> RenderPlanReport(const ReportInput& in) {
  const SearchResult& r = in.result;
  if (r.top.empty() || !(r.best.prediction.step_time_s > 0) ||
      !(r.best.prediction.tokens_per_sec_per_gpu > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan report needs a search result with a best plan (top has ",
        r.top.size(), " plans, best step time ",
        r.best.prediction.step_time_s, " s)"));
  }
  if (in.timeline_ranks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timeline_ranks must be >= 1, got ", in.timeline_ranks));
  }
  const SearchProblem& pb = r.problem;
  // The framework only when not Megatron (the default), as in the JSON.
  const std::string title =
      absl::StrCat(pb.model.name, " on ", HumanCount(pb.shape.gpus), " x ", pb.cluster.name,
                   r.best.prediction.framework == Framework::kMaxText ? ", MaxText" : "");
  std::string out;
  out.reserve(1 << 16);
  absl::StrAppend(&out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                        "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
                        "content=\"width=device-width, initial-scale=1\">\n"
                        "<meta name=\"generator\" content=\"moetune plan "
                        "report\">\n<title>moetune plan: ", Esc(title),
                  "</title>\n<style>", kStyle, "</style>\n</head>\n<body>\n"
                  "<header id=\"report\" data-format=\"moetune.report.v1\">"
                  "<h1>moetune plan: ", Esc(title), "</h1><div class=\"sub\">",
                  Esc(ToString(pb)), "</div></header>\n");
  Summary(in, &out);
  Breakdown(in, &out);
  Memory(in, &out);
  Pareto(in, &out);
  Pipeline(in, &out);
  WhatIf(in, &out);
  TopK(in, &out);
  SearchSection(in, &out);
  absl::StrAppend(&out, "<footer>Predicted by the moetune step model; ");
  if (!in.generated_at.empty()) {
    absl::StrAppend(&out, "generated ", Esc(in.generated_at), "; ");
  }
  absl::StrAppend(&out, "self-contained page, no scripts.</footer>\n"
                        "</body>\n</html>\n");
  return out;
}

}  // namespace moetune::planner
