// File: loadgen.cc
//
// tandem-loadgen: drives a Tandem query node with queries from a file and reports the latency and
// throughput seen by the client (LoadRunner, load_runner.h, does the driving and says how it
// measures).
//
// Queries go as one Search call each (--transport unary) or over long-lived SearchStream calls
// (--transport stream --streams N per channel), as a broker keeping streams to its shards sends
// them.
//
// One row per load: --concurrency N (closed loop; a list "1,4,16" gives one row each), --rate R or
// --rates 100,200,400 (open loop, Poisson arrivals; a sweep). Rows go to a table on stdout and,
// with
// --json-out, to a JSON file with the commit, host, time and every parameter.
//
//   tandem-loadgen --server 127.0.0.1:50051 --queries topics.txt --mode and --k 10
//                  --rates 100,200,400 --duration 20 --warmup 5 --json-out sweep.json
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "bench/load_runner.h"
#include "tandem/v1/search.grpc.pb.h"
#include "workload/query_file.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of the query node");
ABSL_FLAG(std::string, queries, "",
          "query file (id:query, id:prio:query, id<TAB>query or plain lines)");
ABSL_FLAG(std::string, query_format, "auto", "auto, colon, colon-priority, tsv or plain");
ABSL_FLAG(std::string, mode, "or", "query mode: or, and, and_or");
ABSL_FLAG(uint32_t, k, 10, "hits per query");
ABSL_FLAG(std::string, engine, "auto", "engine hint: auto, cpu, gpu");
ABSL_FLAG(std::vector<std::string>, concurrency, {},
          "closed loop: concurrent clients; a list (1,4,16) runs one row each");
ABSL_FLAG(double, rate, 0, "open loop: Poisson arrival rate, queries/s (same as --rates R)");
ABSL_FLAG(std::vector<std::string>, rates, {}, "open loop sweep: arrival rates, one row each");
ABSL_FLAG(double, duration, 10, "seconds measured per row");
ABSL_FLAG(uint64_t, num_queries, 0, "measured queries per row; when set, replaces --duration");
ABSL_FLAG(double, warmup, 2, "seconds of unmeasured load before each row");
ABSL_FLAG(double, timeout, 10,
          "deadline of each query, seconds (--transport stream: each stream's deadline is the "
          "row's warm-up and duration plus this)");
ABSL_FLAG(double, connect_timeout, 30, "seconds to wait for the server before the first row");
ABSL_FLAG(int, channels, 2, "gRPC channels (TCP connections) to spread queries over");
ABSL_FLAG(int, cq_threads, 2, "completion-queue threads (--transport unary)");
ABSL_FLAG(std::string, transport, "unary",
          "unary: one Search call per query; stream: queries over long-lived SearchStream calls "
          "(--streams per channel), each to the stream with the fewest unanswered, as a broker "
          "keeping streams to its shards would send them");
ABSL_FLAG(int, streams, 16, "SearchStream calls per channel (--transport stream)");
ABSL_FLAG(int64_t, max_in_flight, 10000,
          "open loop: queries outstanding at most; one due beyond it is not sent and is counted as "
          "CLIENT_OVERLOAD");
ABSL_FLAG(bool, shuffle, false,
          "send the queries in a random order (--seed) instead of file order");
ABSL_FLAG(uint64_t, seed, 1, "seed of arrival times and of --shuffle");
ABSL_FLAG(std::string, label, "", "free text stored in the JSON (e.g. the server configuration)");
ABSL_FLAG(std::string, json_out, "", "write the results as JSON to this file");

namespace tandem::bench {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchService;
using workload::LoadQueryFile;
using workload::ParseQueryFileFormat;
using workload::QueryFileFormat;
using workload::QueryRecord;

absl::StatusOr<tandem::v1::QueryMode> ParseMode(absl::string_view name) {
  if (name == "or") return tandem::v1::QUERY_MODE_OR;
  if (name == "and") return tandem::v1::QUERY_MODE_AND;
  if (name == "and_or" || name == "and-or" || name == "andor") return tandem::v1::QUERY_MODE_AND_OR;
  return absl::InvalidArgumentError(
      absl::StrCat("--mode: unknown mode \"", name, "\" (or, and, and_or)"));
}

absl::StatusOr<tandem::v1::EngineHint> ParseEngine(absl::string_view name) {
  if (name == "auto") return tandem::v1::ENGINE_HINT_AUTO;
  if (name == "cpu") return tandem::v1::ENGINE_HINT_CPU;
  if (name == "gpu") return tandem::v1::ENGINE_HINT_GPU;
  return absl::InvalidArgumentError(
      absl::StrCat("--engine: unknown engine \"", name, "\" (auto, cpu, gpu)"));
}

// The rows asked for by --concurrency, --rate and --rates (a closed loop of one client by default).
absl::StatusOr<std::vector<LoadSpec>> ParseLoads() {
  std::vector<LoadSpec> loads;
  for (const std::string& c : absl::GetFlag(FLAGS_concurrency)) {
    LoadSpec spec;
    if (!absl::SimpleAtoi(c, &spec.concurrency) || spec.concurrency < 1 ||
        spec.concurrency > 100000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--concurrency: \"", c, "\" is not in 1..100000"));
    }
    loads.push_back(spec);
  }
  std::vector<std::string> rates = absl::GetFlag(FLAGS_rates);
  if (absl::GetFlag(FLAGS_rate) != 0)
    rates.insert(rates.begin(), absl::StrCat(absl::GetFlag(FLAGS_rate)));
  for (const std::string& r : rates) {
    LoadSpec spec{.open_loop = true};
    if (!absl::SimpleAtod(r, &spec.rate) || !(spec.rate > 0) || !std::isfinite(spec.rate)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rate(s): \"", r, "\" is not a positive rate"));
    }
    loads.push_back(spec);
  }
  if (loads.empty()) loads.push_back(LoadSpec{.concurrency = 1});
  return loads;
}

// The requests to send, one per query of the file; queries with no text are left out.
absl::StatusOr<std::vector<SearchRequest>> BuildRequests(size_t* skipped) {
  const std::string path = absl::GetFlag(FLAGS_queries);
  if (path.empty()) return absl::InvalidArgumentError("--queries FILE is required");
  TANDEM_ASSIGN_OR_RETURN(const QueryFileFormat format,
                          ParseQueryFileFormat(absl::GetFlag(FLAGS_query_format)));
  TANDEM_ASSIGN_OR_RETURN(std::vector<QueryRecord> records, LoadQueryFile(path, format));
  TANDEM_ASSIGN_OR_RETURN(const tandem::v1::QueryMode mode, ParseMode(absl::GetFlag(FLAGS_mode)));
  TANDEM_ASSIGN_OR_RETURN(const tandem::v1::EngineHint engine,
                          ParseEngine(absl::GetFlag(FLAGS_engine)));

  std::vector<SearchRequest> requests;
  *skipped = 0;
  for (QueryRecord& q : records) {
    if (q.text.empty()) {
      ++*skipped;
      continue;
    }
    SearchRequest& r = requests.emplace_back();
    r.set_text(std::move(q.text));
    r.set_mode(mode);
    r.set_k(absl::GetFlag(FLAGS_k));
    r.set_engine(engine);
    r.set_request_id(std::move(q.id));
  }
  if (requests.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no queries"));
  if (absl::GetFlag(FLAGS_shuffle)) {
    std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
    std::shuffle(requests.begin(), requests.end(), rng);
  }
  return requests;
}

std::vector<std::unique_ptr<SearchService::Stub>> MakeStubs(const std::string& server,
                                                            int channels) {
  std::vector<std::unique_ptr<SearchService::Stub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    // Without a local subchannel pool, channels to one address share one TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("tandem.loadgen.channel", i);
    stubs.push_back(SearchService::NewStub(
        grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

// GetIndexInfo, waiting for the server to come up; also proves the server answers at all.
absl::StatusOr<tandem::v1::GetIndexInfoResponse> WaitForServer(SearchService::Stub& stub,
                                                               double timeout_s) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  tandem::v1::GetIndexInfoResponse info;
  grpc::Status status = stub.GetIndexInfo(&context, tandem::v1::GetIndexInfoRequest(), &info);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("GetIndexInfo on ", absl::GetFlag(FLAGS_server),
                                               ": ", StatusCodeName(status.error_code()), ": ",
                                               status.error_message()));
  }
  return info;
}

void PrintHeader() {
  std::printf("%-14s %9s %9s %7s %10s %10s %8s %8s %8s %8s %8s %8s %8s\n", "load", "sent", "ok",
              "errors", "offered/s", "achieved/s", "mean_ms", "p50_ms", "p90_ms", "p95_ms",
              "p99_ms", "p99.9_ms", "max_ms");
}

void PrintRow(const RunResult& r) {
  const uint64_t ok = r.status_counts.count("OK") ? r.status_counts.at("OK") : 0;
  uint64_t errors = 0;
  for (const auto& [name, n] : r.status_counts) {
    if (name != "OK") errors += n;
  }
  const LatencySummary& l = r.latency;
  std::printf("%-14s %9llu %9llu %7llu %10.1f %10.1f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
              r.spec.Name().c_str(), static_cast<unsigned long long>(r.sent),
              static_cast<unsigned long long>(ok), static_cast<unsigned long long>(errors),
              r.offered_qps, r.achieved_qps, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max);
  if (errors > 0) {
    std::vector<std::string> parts;
    for (const auto& [name, n] : r.status_counts) {
      if (name != "OK") parts.push_back(absl::StrCat(name, "=", n));
    }
    std::printf("%-14s   errors: %s\n", "", absl::StrJoin(parts, " ").c_str());
  }
  std::fflush(stdout);
}

nlohmann::json RowJson(const RunResult& r) {
  const LatencySummary& l = r.latency;
  nlohmann::json row = {
      {"loop", r.spec.open_loop ? "open" : "closed"},
      {"sent", r.sent},
      {"status_counts", r.status_counts},
      {"window_s", r.window_s},
      {"offered_qps", r.offered_qps},
      {"achieved_qps", r.achieved_qps},
      {"latency_ms",
       {{"mean", l.mean},
        {"p50", l.p50},
        {"p90", l.p90},
        {"p95", l.p95},
        {"p99", l.p99},
        {"p99_9", l.p999},
        {"max", l.max}}},
      {"server_mean_us",
       {{"queued", r.server_queued_us},
        {"execution", r.server_execution_us},
        {"total", r.server_total_us}}},
  };
  if (r.spec.open_loop) {
    row["rate"] = r.spec.rate;
  } else {
    row["concurrency"] = r.spec.concurrency;
  }
  return row;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

int Main(int argc, char** argv) {
  base::ParseFlagsOrExit(
      argc, argv,
      {.name = "tandem-loadgen",
       .usage =
           "tandem-loadgen: the load generator for a Tandem query node: closed loop "
           "(--concurrency) or open loop (--rate, "
           "--rates), latency and throughput as seen by the client.\n"
           "  tandem-loadgen --server HOST:PORT --queries FILE [--mode or|and|and_or] [--k 10]\n"
           "                 [--concurrency 1,4,16 | --rates 100,200,400] [--duration 10 | "
           "--num_queries N]\n"
           "                 [--warmup 2] [--json-out FILE]",
       .main_file = __FILE__});
  const auto fail = [](const absl::Status& status) {
    std::fprintf(stderr, "tandem-loadgen: %s\n", std::string(status.message()).c_str());
    return 2;
  };

  RunOptions options;
  options.warmup_s = absl::GetFlag(FLAGS_warmup);
  options.duration_s = absl::GetFlag(FLAGS_duration);
  options.num_queries = absl::GetFlag(FLAGS_num_queries);
  options.timeout_s = absl::GetFlag(FLAGS_timeout);
  options.max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  options.seed = absl::GetFlag(FLAGS_seed);
  const int channels = absl::GetFlag(FLAGS_channels);
  const int cq_threads = absl::GetFlag(FLAGS_cq_threads);
  const std::string transport = absl::GetFlag(FLAGS_transport);
  if (transport == "stream") {
    options.transport = Transport::kStream;
  } else if (transport != "unary") {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("--transport: unknown transport \"", transport, "\" (unary, stream)")));
  }
  options.streams_per_stub = absl::GetFlag(FLAGS_streams);
  if (options.streams_per_stub < 1 || options.streams_per_stub > 1024) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "--streams: ", options.streams_per_stub, " is not in 1..1024 (streams per channel)")));
  }
  if (!(options.warmup_s >= 0) || (options.num_queries == 0 && !(options.duration_s > 0)) ||
      !(options.timeout_s > 0) || options.max_in_flight < 1 || channels < 1 || cq_threads < 1) {
    return fail(
        absl::InvalidArgumentError("--warmup must be >= 0; --duration (or --num_queries), "
                                   "--timeout, --max_in_flight, --channels and "
                                   "--cq_threads must be > 0"));
  }
  auto loads = ParseLoads();
  if (!loads.ok()) return fail(loads.status());
  size_t skipped = 0;
  auto requests = BuildRequests(&skipped);
  if (!requests.ok()) return fail(requests.status());

  const std::string server = absl::GetFlag(FLAGS_server);
  auto stubs = MakeStubs(server, channels);
  auto info = WaitForServer(*stubs[0], absl::GetFlag(FLAGS_connect_timeout));
  if (!info.ok()) return fail(info.status());

  const size_t num_queries = requests->size();
  std::printf("tandem-loadgen %s: server %s, index %s (%llu documents, engines %s)\n",
              tandem::base::Commit(), server.c_str(), info->index_id().c_str(),
              static_cast<unsigned long long>(info->documents()),
              absl::StrJoin(info->engines(), ",").c_str());
  std::printf("queries: %zu from %s%s; mode %s, k %u, engine %s; warmup %gs, %s per row\n",
              num_queries, absl::GetFlag(FLAGS_queries).c_str(),
              skipped ? absl::StrCat(" (", skipped, " without text skipped)").c_str() : "",
              absl::GetFlag(FLAGS_mode).c_str(), absl::GetFlag(FLAGS_k),
              absl::GetFlag(FLAGS_engine).c_str(), options.warmup_s,
              options.num_queries > 0 ? absl::StrCat(options.num_queries, " queries").c_str()
                                      : absl::StrCat(options.duration_s, "s").c_str());
  std::printf("transport: %s\n",
              options.transport == Transport::kStream
                  ? absl::StrCat("stream (", options.streams_per_stub,
                                 " SearchStream calls on each of ", channels, " channels)")
                        .c_str()
                  : absl::StrCat("unary (", channels, " channels, ", cq_threads,
                                 " completion-queue threads)")
                        .c_str());
  std::printf("latency: client-side, of OK responses, from the scheduled send time\n\n");
  PrintHeader();

  LoadRunner runner(std::move(stubs), *std::move(requests), cq_threads, options);
  const std::string timestamp =
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  nlohmann::json rows = nlohmann::json::array();
  for (const LoadSpec& spec : *loads) {
    RunResult result = runner.Run(spec);
    PrintRow(result);
    rows.push_back(RowJson(result));
  }

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  if (!json_out.empty()) {
    nlohmann::json doc = {
        {"tool", "tandem-loadgen"},
        {"commit", tandem::base::Commit()},
        {"hostname", Hostname()},
        {"timestamp", timestamp},
        {"label", absl::GetFlag(FLAGS_label)},
        {"parameters",
         {{"server", server},
          {"queries", absl::GetFlag(FLAGS_queries)},
          {"query_format", absl::GetFlag(FLAGS_query_format)},
          {"num_queries_in_file", num_queries},
          {"skipped_queries", skipped},
          {"mode", absl::GetFlag(FLAGS_mode)},
          {"k", absl::GetFlag(FLAGS_k)},
          {"engine", absl::GetFlag(FLAGS_engine)},
          {"warmup_s", options.warmup_s},
          {"duration_s",
           options.num_queries > 0 ? nlohmann::json(nullptr) : nlohmann::json(options.duration_s)},
          {"num_queries",
           options.num_queries > 0 ? nlohmann::json(options.num_queries) : nlohmann::json(nullptr)},
          {"timeout_s", options.timeout_s},
          {"channels", channels},
          {"cq_threads", cq_threads},
          {"transport", TransportName(options.transport)},
          {"streams_per_channel", options.transport == Transport::kStream
                                      ? nlohmann::json(options.streams_per_stub)
                                      : nlohmann::json(nullptr)},
          {"max_in_flight", options.max_in_flight},
          {"shuffle", absl::GetFlag(FLAGS_shuffle)},
          {"seed", options.seed}}},
        {"server_index",
         {{"index_id", info->index_id()},
          {"documents", info->documents()},
          {"codec", info->codec()},
          {"engines", std::vector<std::string>(info->engines().begin(), info->engines().end())}}},
        {"latency_basis", "client-side, OK responses, from scheduled send time"},
        {"rows", rows},
    };
    std::ofstream out(json_out);
    out << doc.dump(2) << "\n";
    out.close();
    if (!out) {
      return fail(absl::UnavailableError(absl::StrCat("cannot write ", json_out)));
    }
    std::printf("\nwrote %s\n", json_out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tandem::bench

int main(int argc, char** argv) { return tandem::bench::Main(argc, argv); }
