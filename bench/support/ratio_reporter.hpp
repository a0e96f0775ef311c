// The reporter every memhal benchmark binary uses: the usual console table, then a summary of
// ratios (memhal against its peer or the memcpy bound) computed from the same run.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memhal::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  using Summary = std::function<void(const RatioReporter&)>;
  explicit RatioReporter(Summary summary) : summary_(std::move(summary)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const double unit = benchmark::GetTimeUnitMultiplier(run.time_unit);
      times_[run.benchmark_name()] = {run.GetAdjustedRealTime() / unit, run.GetAdjustedCPUTime() / unit};
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    summary_(*this);
  }

  /// Seconds per iteration of benchmark `name` (as the table names it); 0 when it did not run.
  double real_seconds(const std::string& name) const { return find(name).first; }
  double cpu_seconds(const std::string& name) const { return find(name).second; }

 private:
  std::pair<double, double> find(const std::string& name) const {
    auto it = times_.find(name);
    return it == times_.end() ? std::pair<double, double>{} : it->second;
  }
  Summary summary_;
  std::map<std::string, std::pair<double, double>> times_;
};

/// main() of a benchmark binary: runs the benchmarks selected on the command line, then
/// `summary`.
inline int run_benchmarks(int argc, char** argv, RatioReporter::Summary summary) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter(std::move(summary));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace memhal::bench
