// tandem-cli: a command-line client of tandem-server.
//
//   tandem-cli [--server 127.0.0.1:50051] search [--mode and|or|and_or] [--k 10]
//              [--engine auto|cpu|gpu] [--fields title,subject] [--snippet 160] [--json]
//              [--timeout 5s]
//              QUERY TEXT...
//   tandem-cli batch [FILE|-]        queries one per line: text, id<TAB>text or id:text (an id
//                                    holds a digit)
//   tandem-cli health [--service NAME]
//   tandem-cli info
// Standing queries (tandem.v1.SubscriptionService):
//   tandem-cli subscribe --interface NAME 'PREDICATE'   prints the id and the normalized predicate
//   tandem-cli unsubscribe ID
//   tandem-cli subscriptions [--interface NAME]
//   tandem-cli match [FILE|-]        documents one JSON object per line (match_input.h); prints
//                                    each document's interfaces
//   tandem-cli watch --interface NAME [--events N]   prints matched documents as they arrive,
//                                    until interrupted (no deadline)
// Index administration (tandem.v1.IndexService):
//   tandem-cli load-index PATH       switches the node to the index at PATH (a path on the node);
//                                    its deadline is 10 minutes unless --timeout is changed
//   tandem-cli index --format FORMAT [--refresh] FILE|-   streams the documents of FILE (any
//                                    `tandem-index build` format; - reads stdin) over one Write
//                                    call, --batch-size operations a message; prints how many were
//                                    acknowledged, stale, not found and refused (the first errors)
//   tandem-cli delete ID...          deletes documents by id
//   tandem-cli refresh | flush | index-stats
// TLS: --tls (system roots), --tls-ca FILE, --tls-cert FILE --tls-key FILE (mutual TLS),
// --tls-server-name NAME.
//
// Exit status: 0 success; 1 the call failed (or, for batch, some query failed; for index and
// delete, some operation was refused or some document malformed); 2 usage error; 3 health answered
// but not SERVING. Errors print one line: "tandem-cli: CODE: message".
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "clients/cli/batch_input.h"
#include "clients/cli/channel.h"
#include "clients/cli/health_client.h"
#include "clients/cli/match_input.h"
#include "clients/cli/output.h"
#include "clients/cli/subscription_output.h"
#include "grpcpp/client_context.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tandem/v1/search.grpc.pb.h"
#include "tandem/v1/subscription.grpc.pb.h"
#include "tools/tandem_cli_write.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "tandem-server address, host:port.");
ABSL_FLAG(std::string, mode, "or", "search, batch: and, or or and_or.");
ABSL_FLAG(int32_t, k, 10, "search, batch: hits per query (the server accepts 1..10000).");
ABSL_FLAG(std::string, engine, "auto", "search, batch: auto, cpu or gpu.");
ABSL_FLAG(std::string, filter, "",
          "search, batch: keep only the documents whose attributes pass this filter, e.g. "
          "'label = spam AND year >= 2002' (the index's fields: tandem-index inspect).");
ABSL_FLAG(std::string, bm25_k1, "", "search, batch: BM25 k1 (server default when empty).");
ABSL_FLAG(std::string, bm25_b, "", "search, batch: BM25 b (server default when empty).");
ABSL_FLAG(bool, json, false, "Print JSON (one document per line) instead of tables.");
ABSL_FLAG(std::vector<std::string>, fields, std::vector<std::string>({"title", "subject"}),
          "search, batch: stored fields to show with each hit, comma-separated (\"*\" for all, "
          "empty for none); a field a document lacks is skipped.");
ABSL_FLAG(int32_t, snippet, 160,
          "search, batch: longest snippet of each hit's text, in bytes, query terms in [brackets] "
          "(0: none; only indexes built with --store-text keep text).");
constexpr absl::Duration kDefaultTimeout = absl::Seconds(5);
ABSL_FLAG(absl::Duration, timeout, kDefaultTimeout,
          "Deadline of each call (load-index, index, refresh, flush: 10 minutes while this is "
          "left at 5s).");
ABSL_FLAG(int32_t, batch_size, 256,
          "batch, match, index, delete: queries per SearchBatch call, documents per Match call, "
          "operations per Write message.");
ABSL_FLAG(std::string, format, "",
          "index: the input's format, as tandem-index build's --format (beir, trec, lines, ..., "
          "or auto for a file or directory).");
ABSL_FLAG(bool, refresh, false,
          "index: call Refresh after the write, to search the documents now.");
ABSL_FLAG(std::string, interface, "",
          "subscribe, watch: the subscriber's name (required); subscriptions: only this one's.");
ABSL_FLAG(int64_t, events, 0, "watch: stop after this many documents (0: until interrupted).");
ABSL_FLAG(std::string, service, "", "health: service to ask about; empty means the whole server.");
ABSL_FLAG(bool, tls, false, "Use TLS with the system's root certificates.");
ABSL_FLAG(std::string, tls_ca, "", "PEM roots that signed the server certificate (implies TLS).");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate, for mutual TLS (with --tls-key).");
ABSL_FLAG(std::string, tls_key, "", "PEM client private key.");
ABSL_FLAG(std::string, tls_server_name, "", "Name expected in the server certificate.");

namespace tandem::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotServing = 3;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "tandem-cli: %s\n", StatusLine(status).c_str());
  return kExitFailed;
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "tandem-cli: %s\n", message.c_str());
  return kExitUsage;
}

// The value of an enum flag whose text is one of `choices`, or INVALID_ARGUMENT naming the flag
// and listing them ("--mode must be and, or or and_or, got 'any'").
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseChoice(absl::string_view flag, const std::string& text,
                                 const std::pair<absl::string_view, Enum> (&choices)[N]) {
  std::vector<absl::string_view> names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names.push_back(name);
  }
  const absl::string_view last = names.back();
  names.pop_back();
  return absl::InvalidArgumentError(absl::StrCat(flag, " must be ", absl::StrJoin(names, ", "),
                                                 " or ", last, ", got '", text, "'"));
}

constexpr std::pair<absl::string_view, tandem::v1::QueryMode> kModes[] = {
    {"and", tandem::v1::QUERY_MODE_AND},
    {"or", tandem::v1::QUERY_MODE_OR},
    {"and_or", tandem::v1::QUERY_MODE_AND_OR}};
constexpr std::pair<absl::string_view, tandem::v1::EngineHint> kEngines[] = {
    {"auto", tandem::v1::ENGINE_HINT_AUTO},
    {"cpu", tandem::v1::ENGINE_HINT_CPU},
    {"gpu", tandem::v1::ENGINE_HINT_GPU}};

// The request fields every search and batch query shares, from the flags.
absl::StatusOr<tandem::v1::SearchRequest> RequestTemplate() {
  tandem::v1::SearchRequest request;
  absl::StatusOr<tandem::v1::QueryMode> mode =
      ParseChoice("--mode", absl::GetFlag(FLAGS_mode), kModes);
  if (!mode.ok()) return mode.status();
  request.set_mode(*mode);
  absl::StatusOr<tandem::v1::EngineHint> engine =
      ParseChoice("--engine", absl::GetFlag(FLAGS_engine), kEngines);
  if (!engine.ok()) return engine.status();
  request.set_engine(*engine);
  const int32_t k = absl::GetFlag(FLAGS_k);
  if (k < 0) return absl::InvalidArgumentError("--k must be >= 0");
  request.set_k(static_cast<uint32_t>(k));  // the server checks the range and names the field
  for (const std::string& field : absl::GetFlag(FLAGS_fields)) {
    if (!field.empty()) request.add_fields(field);
  }
  request.set_filter_text(absl::GetFlag(FLAGS_filter));  // the server parses it and names errors
  const int32_t snippet = absl::GetFlag(FLAGS_snippet);
  if (snippet < 0) return absl::InvalidArgumentError("--snippet must be >= 0");
  request.set_snippet_bytes(static_cast<uint32_t>(snippet));
  for (auto [value, name, setter] :
       {std::tuple{absl::GetFlag(FLAGS_bm25_k1), "--bm25-k1", &tandem::v1::Bm25Params::set_k1},
        std::tuple{absl::GetFlag(FLAGS_bm25_b), "--bm25-b", &tandem::v1::Bm25Params::set_b}}) {
    if (value.empty()) continue;
    float parsed;
    if (!absl::SimpleAtof(value, &parsed)) {
      return absl::InvalidArgumentError(absl::StrCat(name, " must be a number, got '", value, "'"));
    }
    (request.mutable_bm25()->*setter)(parsed);
  }
  return request;
}

// A unary call under the --timeout deadline: `call` makes it on the context it is given.
template <typename Call>
absl::Status CallWithDeadline(Call call) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
  return FromGrpcStatus(call(&context));
}

// An answer: `json` on one line under --json, else `text`.
void PrintAnswer(const nlohmann::json& json, const std::string& text) {
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << json.dump() << "\n";
  } else {
    std::cout << text;
  }
}

int RunSearch(tandem::v1::SearchService::Stub& stub, const std::vector<std::string>& words) {
  if (words.empty()) return Usage("search needs query text: tandem-cli search QUERY TEXT...");
  absl::StatusOr<tandem::v1::SearchRequest> request = RequestTemplate();
  if (!request.ok()) return Usage(std::string(request.status().message()));
  request->set_text(absl::StrJoin(words, " "));
  tandem::v1::SearchResponse response;
  const absl::Status status = CallWithDeadline(
      [&](grpc::ClientContext* context) { return stub.Search(context, *request, &response); });
  if (!status.ok()) return Fail(status);
  PrintAnswer(ToJson(response), FormatSearchResponse(response));
  return kExitOk;
}

// The input of `command` (batch, match): its one optional argument, a file opened in `file`, or
// stdin when there is none or it is "-"; INVALID_ARGUMENT, the usage line, otherwise.
absl::StatusOr<std::istream*> OpenInput(const char* command, const std::vector<std::string>& args,
                                        std::ifstream& file) {
  if (args.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(command, " takes at most one input file"));
  }
  if (args.empty() || args[0] == "-") return &std::cin;
  file.open(args[0]);
  if (!file) return absl::InvalidArgumentError(absl::StrCat("cannot read '", args[0], "'"));
  return &file;
}

int RunBatch(tandem::v1::SearchService::Stub& stub, const std::vector<std::string>& args) {
  std::ifstream file;
  absl::StatusOr<std::istream*> in = OpenInput("batch", args, file);
  if (!in.ok()) return Usage(std::string(in.status().message()));
  const std::vector<BatchQuery> queries = ReadBatchQueries(**in);
  absl::StatusOr<tandem::v1::SearchRequest> base = RequestTemplate();
  if (!base.ok()) return Usage(std::string(base.status().message()));
  const int32_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (batch_size < 1) return Usage("--batch-size must be >= 1");
  const bool json = absl::GetFlag(FLAGS_json);
  size_t failed = 0;
  for (size_t start = 0; start < queries.size(); start += batch_size) {
    const size_t end = std::min(queries.size(), start + static_cast<size_t>(batch_size));
    tandem::v1::SearchBatchRequest request;
    for (size_t i = start; i < end; ++i) {
      tandem::v1::SearchRequest* r = request.add_requests();
      *r = *base;
      r->set_text(queries[i].text);
      r->set_request_id(queries[i].id);
    }
    tandem::v1::SearchBatchResponse response;
    const absl::Status status = CallWithDeadline([&](grpc::ClientContext* context) {
      return stub.SearchBatch(context, request, &response);
    });
    if (!status.ok()) return Fail(status);
    for (size_t i = start; i < end; ++i) {
      const tandem::v1::SearchBatchResult& result = response.results(static_cast<int>(i - start));
      const absl::Status query_status(static_cast<absl::StatusCode>(result.status().code()),
                                      result.status().message());
      failed += !query_status.ok();
      if (json) {
        nlohmann::json line{{"id", queries[i].id}, {"text", queries[i].text}};
        if (query_status.ok()) {
          line["response"] = ToJson(result.response());
        } else {
          line["status"] = StatusJson(query_status);
        }
        std::cout << line.dump() << "\n";
      } else {
        std::cout << "query " << queries[i].id << ": " << queries[i].text << "\n";
        if (query_status.ok()) {
          std::cout << FormatSearchResponse(result.response()) << "\n";
        } else {
          std::cout << "error: " << StatusLine(query_status) << "\n\n";
        }
      }
    }
  }
  if (failed > 0) {
    std::fprintf(stderr, "tandem-cli: %zu of %zu queries failed\n", failed, queries.size());
    return kExitFailed;
  }
  return kExitOk;
}

int RunHealth(const std::shared_ptr<grpc::Channel>& channel) {
  absl::StatusOr<ServingStatus> status =
      CheckHealth(channel, absl::GetFlag(FLAGS_service), absl::GetFlag(FLAGS_timeout));
  if (!status.ok()) return Fail(status.status());
  const std::string name(ServingStatusName(*status));
  PrintAnswer({{"status", name}}, name + "\n");
  return *status == ServingStatus::kServing ? kExitOk : kExitNotServing;
}

int RunInfo(tandem::v1::SearchService::Stub& stub) {
  tandem::v1::GetIndexInfoResponse info;
  const absl::Status status = CallWithDeadline([&](grpc::ClientContext* context) {
    return stub.GetIndexInfo(context, tandem::v1::GetIndexInfoRequest(), &info);
  });
  if (!status.ok()) return Fail(status);
  PrintAnswer(ToJson(info), FormatIndexInfo(info));
  return kExitOk;
}

int RunSubscribe(tandem::v1::SubscriptionService::Stub& stub,
                 const std::vector<std::string>& words) {
  const std::string interface = absl::GetFlag(FLAGS_interface);
  if (interface.empty()) return Usage("subscribe needs --interface NAME");
  if (words.empty()) {
    return Usage(
        "subscribe needs a predicate: tandem-cli subscribe --interface NAME 'year >= 2001'");
  }
  tandem::v1::SubscribeRequest request;
  request.set_interface(interface);
  request.set_predicate_text(absl::StrJoin(words, " "));
  tandem::v1::SubscribeResponse response;
  const absl::Status status = CallWithDeadline(
      [&](grpc::ClientContext* context) { return stub.Subscribe(context, request, &response); });
  if (!status.ok()) return Fail(status);
  PrintAnswer(ToJson(response), absl::StrCat(response.id(), "  ", response.predicate_text(), "\n"));
  return kExitOk;
}

int RunUnsubscribe(tandem::v1::SubscriptionService::Stub& stub,
                   const std::vector<std::string>& args) {
  uint64_t id = 0;
  if (args.size() != 1 || !absl::SimpleAtoi(args[0], &id)) {
    return Usage("unsubscribe needs one subscription id: tandem-cli unsubscribe ID");
  }
  tandem::v1::UnsubscribeRequest request;
  request.set_id(id);
  tandem::v1::UnsubscribeResponse response;
  const absl::Status status = CallWithDeadline(
      [&](grpc::ClientContext* context) { return stub.Unsubscribe(context, request, &response); });
  if (!status.ok()) return Fail(status);
  PrintAnswer({{"id", absl::StrCat(id)}}, absl::StrCat("unsubscribed ", id, "\n"));
  return kExitOk;
}

// Opening, checking and warming a large index takes seconds: while --timeout is left at its
// default, a load may take this long.
constexpr absl::Duration kLoadIndexTimeout = absl::Minutes(10);

// The deadline of a call that may take minutes (load-index, index, refresh, flush: a refresh
// inverts every buffered document): --timeout, or 10 minutes while it is left at its default.
absl::Time LongDeadline() {
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  return absl::Now() + (timeout == kDefaultTimeout ? kLoadIndexTimeout : timeout);
}

int RunLoadIndex(tandem::v1::IndexService::Stub& stub, const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return Usage("load-index needs the index directory on the node: tandem-cli load-index PATH");
  }
  tandem::v1::LoadIndexRequest request;
  request.set_path(args[0]);
  tandem::v1::LoadIndexResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(LongDeadline()));
  const absl::Status status = FromGrpcStatus(stub.LoadIndex(&context, request, &response));
  if (!status.ok()) return Fail(status);
  PrintAnswer(
      {{"path", args[0]},
       {"index_id", response.index_id()},
       {"documents", response.documents()},
       {"generation", response.generation()},
       {"open_seconds", response.open_seconds()},
       {"warm_seconds", response.warm_seconds()},
       {"lists_warmed", response.lists_warmed()}},
      absl::StrFormat("serving %s: %d documents, index %s, generation %d (opened in %.2f "
                      "s, %d lists warmed in %.2f s)\n",
                      args[0], response.documents(), response.index_id(), response.generation(),
                      response.open_seconds(), response.lists_warmed(), response.warm_seconds()));
  return kExitOk;
}

// Prints a Write's counts; exit 1 when an operation was refused or a document malformed.
int PrintWrite(const absl::StatusOr<WriteResult>& result) {
  if (!result.ok()) return Fail(result.status());
  PrintAnswer(WriteResultJson(*result), FormatWriteResult(*result));
  const bool complete = result->response.refused() == 0 && result->bad_documents == 0;
  if (!complete) {
    std::cerr << absl::StrFormat("tandem-cli: %d operations refused, %d documents malformed\n",
                                 result->response.refused(), result->bad_documents);
  }
  return complete ? kExitOk : kExitFailed;
}

int RunRefresh(tandem::v1::IndexService::Stub& stub) {
  tandem::v1::RefreshResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(LongDeadline()));
  const absl::Status status =
      FromGrpcStatus(stub.Refresh(&context, tandem::v1::RefreshRequest(), &response));
  if (!status.ok()) return Fail(status);
  PrintAnswer(ToJson(response),
              absl::StrFormat("refreshed: %d documents searchable in %d segments\n",
                              response.documents(), response.segments()));
  return kExitOk;
}

int RunIndex(tandem::v1::IndexService::Stub& stub, const std::vector<std::string>& args) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format.empty() || args.size() != 1) {
    return Usage("index needs a format and one input: tandem-cli index --format FORMAT FILE|-");
  }
  absl::StatusOr<std::string> resolved = ResolveFormat(format, args[0]);
  if (!resolved.ok()) {
    return resolved.status().code() == absl::StatusCode::kInvalidArgument
               ? Usage(std::string(resolved.status().message()))
               : Fail(resolved.status());
  }
  const int32_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (batch_size < 1) return Usage("--batch-size must be >= 1");
  absl::StatusOr<WriteResult> result = StreamDocuments(
      stub, {.format = *resolved, .path = args[0], .batch_size = static_cast<size_t>(batch_size)},
      LongDeadline());
  const int exit_code = PrintWrite(result);
  if (exit_code == kExitFailed && !result.ok()) return exit_code;
  if (absl::GetFlag(FLAGS_refresh)) {
    const int refreshed = RunRefresh(stub);
    if (refreshed != kExitOk) return refreshed;
  }
  return exit_code;
}

int RunDelete(tandem::v1::IndexService::Stub& stub, const std::vector<std::string>& ids) {
  if (ids.empty()) return Usage("delete needs document ids: tandem-cli delete ID...");
  const int32_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (batch_size < 1) return Usage("--batch-size must be >= 1");
  std::vector<tandem::v1::WriteOperation> ops(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) ops[i].set_delete_id(ids[i]);
  return PrintWrite(WriteOperations(stub, ops, static_cast<size_t>(batch_size),
                                    absl::Now() + absl::GetFlag(FLAGS_timeout)));
}

int RunFlush(tandem::v1::IndexService::Stub& stub) {
  tandem::v1::FlushResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(LongDeadline()));
  const absl::Status status =
      FromGrpcStatus(stub.Flush(&context, tandem::v1::FlushRequest(), &response));
  if (!status.ok()) return Fail(status);
  PrintAnswer(ToJson(response),
              absl::StrCat("flushed: commit point ", response.generation(), "\n"));
  return kExitOk;
}

int RunIndexStats(tandem::v1::IndexService::Stub& stub) {
  tandem::v1::IndexStats stats;
  const absl::Status status = CallWithDeadline([&](grpc::ClientContext* context) {
    return stub.GetIndexStats(context, tandem::v1::GetIndexStatsRequest(), &stats);
  });
  if (!status.ok()) return Fail(status);
  PrintAnswer(
      ToJson(stats),
      !stats.writable()
          ? std::string("read-only: this node takes no writes\n")
          : absl::StrFormat(
                "documents %d, deleted %d, segments %d, buffered operations %d, commit point %d, "
                "refreshes %d, last sequence %d\n",
                stats.documents(), stats.deleted_documents(), stats.segments(),
                stats.buffered_operations(), stats.commit_generation(), stats.refreshes(),
                stats.last_sequence()));
  return kExitOk;
}

int RunSubscriptions(tandem::v1::SubscriptionService::Stub& stub) {
  tandem::v1::ListSubscriptionsRequest request;
  request.set_interface(absl::GetFlag(FLAGS_interface));
  tandem::v1::ListSubscriptionsResponse response;
  const absl::Status status = CallWithDeadline([&](grpc::ClientContext* context) {
    return stub.ListSubscriptions(context, request, &response);
  });
  if (!status.ok()) return Fail(status);
  for (const tandem::v1::Subscription& subscription : response.subscriptions()) {
    PrintAnswer(ToJson(subscription), FormatSubscription(subscription));
  }
  return kExitOk;
}

int RunMatch(tandem::v1::SubscriptionService::Stub& stub, const std::vector<std::string>& args) {
  std::ifstream file;
  absl::StatusOr<std::istream*> in = OpenInput("match", args, file);
  if (!in.ok()) return Usage(std::string(in.status().message()));
  absl::StatusOr<std::vector<tandem::v1::Document>> documents = ReadDocuments(**in);
  if (!documents.ok()) return Usage(std::string(documents.status().message()));
  const int32_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (batch_size < 1) return Usage("--batch-size must be >= 1");
  const bool json = absl::GetFlag(FLAGS_json);
  for (size_t start = 0; start < documents->size(); start += batch_size) {
    const size_t end = std::min(documents->size(), start + static_cast<size_t>(batch_size));
    tandem::v1::MatchRequest request;
    for (size_t i = start; i < end; ++i) *request.add_documents() = std::move((*documents)[i]);
    tandem::v1::MatchResponse response;
    const absl::Status status = CallWithDeadline(
        [&](grpc::ClientContext* context) { return stub.Match(context, request, &response); });
    if (!status.ok()) return Fail(status);
    for (const tandem::v1::DocumentMatch& match : response.matches()) {
      if (json) {
        nlohmann::json line = ToJson(match);
        line["engine"] = response.engine();
        std::cout << line.dump() << "\n";
      } else {
        std::cout << FormatDocumentMatch(match);
      }
    }
    std::cout.flush();
  }
  return kExitOk;
}

int RunWatch(tandem::v1::SubscriptionService::Stub& stub) {
  const std::string interface = absl::GetFlag(FLAGS_interface);
  if (interface.empty()) return Usage("watch needs --interface NAME");
  const int64_t max_events = absl::GetFlag(FLAGS_events);
  if (max_events < 0) return Usage("--events must be >= 0");
  tandem::v1::WatchRequest request;
  request.set_interface(interface);
  // No deadline: a watch lasts until it is interrupted, --events are in, or the server drains.
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<tandem::v1::WatchEvent>> reader =
      stub.Watch(&context, request);
  // The server sends its initial metadata once the watch is registered: from here on, every
  // matched document of the interface arrives.
  reader->WaitForInitialMetadata();
  std::fprintf(stderr, "tandem-cli: watching %s\n", interface.c_str());
  int64_t received = 0;
  tandem::v1::WatchEvent event;
  while ((max_events == 0 || received < max_events) && reader->Read(&event)) {
    ++received;
    PrintAnswer(ToJson(event), FormatWatchEvent(event));
    std::cout.flush();
  }
  if (max_events > 0 && received == max_events) {
    context.TryCancel();
    reader->Finish().IgnoreError();
    return kExitOk;
  }
  const absl::Status status = FromGrpcStatus(reader->Finish());
  if (!status.ok()) return Fail(status);
  std::fprintf(stderr, "tandem-cli: the server ended the watch\n");
  return kExitOk;
}

int Main(int argc, char** argv) {
  const std::vector<std::string> positional = base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-cli",
       .usage =
           "tandem-cli is a client of tandem-server.\n"
           "  tandem-cli [--server HOST:PORT] search [--mode and|or|and_or] [--k 10] "
           "[--engine auto|cpu|gpu] [--fields title,subject] [--snippet 160] [--json] [--timeout "
           "5s] QUERY "
           "TEXT...\n"
           "  tandem-cli batch [FILE|-]\n  tandem-cli health [--service NAME]\n  tandem-cli info\n"
           "  tandem-cli subscribe --interface NAME 'year >= 2001 AND terms contains \"gas\"'\n"
           "  tandem-cli unsubscribe ID\n  tandem-cli subscriptions [--interface NAME]\n"
           "  tandem-cli match [FILE|-]   (JSON lines: {\"id\": ..., \"text\": ..., "
           "\"attributes\": {\"year\": 2001}})\n"
           "  tandem-cli watch --interface NAME [--events N]\n"
           "  tandem-cli load-index PATH\n"
           "  tandem-cli index --format beir|trec|lines|... [--refresh] FILE|-\n"
           "  tandem-cli delete ID...\n  tandem-cli refresh | flush | index-stats",
       .main_file = __FILE__});
  constexpr char kCommands[] =
      "search, batch, health, info, subscribe, unsubscribe, subscriptions, match, watch, "
      "load-index, index, delete, refresh, flush or index-stats";
  if (positional.empty()) return Usage(absl::StrCat("missing command: ", kCommands));
  const std::string command = positional[0];
  const std::vector<std::string> args(positional.begin() + 1, positional.end());

  const ChannelTls tls{.enabled = absl::GetFlag(FLAGS_tls),
                       .ca_file = absl::GetFlag(FLAGS_tls_ca),
                       .cert_file = absl::GetFlag(FLAGS_tls_cert),
                       .key_file = absl::GetFlag(FLAGS_tls_key),
                       .server_name = absl::GetFlag(FLAGS_tls_server_name)};
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(absl::GetFlag(FLAGS_server), tls);
  if (!channel.ok()) return Usage(std::string(channel.status().message()));
  std::unique_ptr<tandem::v1::SearchService::Stub> stub =
      tandem::v1::SearchService::NewStub(*channel);

  std::unique_ptr<tandem::v1::SubscriptionService::Stub> subscriptions =
      tandem::v1::SubscriptionService::NewStub(*channel);

  if (command == "search") return RunSearch(*stub, args);
  if (command == "batch") return RunBatch(*stub, args);
  if (command == "subscribe") return RunSubscribe(*subscriptions, args);
  if (command == "unsubscribe") return RunUnsubscribe(*subscriptions, args);
  if (command == "match") return RunMatch(*subscriptions, args);
  std::unique_ptr<tandem::v1::IndexService::Stub> indexes =
      tandem::v1::IndexService::NewStub(*channel);
  if (command == "load-index") return RunLoadIndex(*indexes, args);
  if (command == "index") return RunIndex(*indexes, args);
  if (command == "delete") return RunDelete(*indexes, args);
  if (!args.empty()) return Usage(absl::StrCat(command, " takes no arguments"));
  if (command == "health") return RunHealth(*channel);
  if (command == "info") return RunInfo(*stub);
  if (command == "subscriptions") return RunSubscriptions(*subscriptions);
  if (command == "watch") return RunWatch(*subscriptions);
  if (command == "refresh") return RunRefresh(*indexes);
  if (command == "flush") return RunFlush(*indexes);
  if (command == "index-stats") return RunIndexStats(*indexes);
  return Usage(absl::StrCat("unknown command '", command, "': ", kCommands));
}

}  // namespace
}  // namespace tandem::cli

int main(int argc, char** argv) { return tandem::cli::Main(argc, argv); }
