// A writer killed at a random moment loses no acknowledged operation. Each trial forks a child
// that opens the live index (an index built offline, or the directory the previous trial left),
// writes random adds, replaces and deletes, some versioned, in batches from 1 to 3 threads, with
// refreshes and flushes at random moments, and reports every batch to the parent over a pipe:
// before Write (what it writes) and after Write returns (the outcomes). The parent SIGKILLs the
// child within 100 ms, opens the directory and checks that the index holds exactly the model of
// the acknowledged operations, each thread's batch in flight either wholly or not at all; that no
// segment directory the index does not use is left; and that queries answer as a fresh build over
// the recovered documents.
//
// Threads write disjoint ids (id number modulo 3 picks the owner), so the order in which the
// parent hears acknowledgements of different threads does not matter for the model.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/temp_dir.h"
#include "gtest/gtest.h"
#include "index_builder/inverter.h"
#include "live/commit_point.h"
#include "live/live_index.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using index_builder::Document;
using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr int kTrials = 200;
constexpr int kPartitions = 3;  // ids "d<n>" belong to partition n % 3

int PartitionOf(const std::string& id) {
  uint64_t n = 0;
  return absl::SimpleAtoi(absl::string_view(id).substr(1), &n) ? static_cast<int>(n % 3) : -1;
}

absl::Status Build(const std::vector<Document>& docs, const std::string& dir) {
  return testing::BuildDocuments(docs, dir);
}

// The text is stored too (field "body"), so that the recovered documents can be compared whole.
Document RandomDocument(std::mt19937& rng, const std::string& id, const std::string& rev) {
  Document d;
  d.external_id = id;
  d.text = testing::RandomText(rng, {.max_words = 16, .p = 0.12, .vocabulary = 50});
  d.fields = {{"body", d.text}, {"rev", rev}};
  return d;
}

// The acknowledged state: live documents in the order of their latest write, and the versions
// the index holds per id (tombstones included), applied as LiveIndex::Apply does.
struct Model {
  struct Version {
    uint64_t version = 0;
    bool deleted = false;
    bool operator==(const Version&) const = default;
  };
  uint64_t clock = 0;
  std::map<uint64_t, Document> order;
  std::map<std::string, uint64_t> where;
  std::map<std::string, Version> versions;

  WriteOutcome Apply(const Operation& op) {
    const std::string& id = op.id();
    if (op.version) {
      auto it = versions.find(id);
      if (it != versions.end() && *op.version <= it->second.version) return WriteOutcome::kStale;
    }
    const bool held = where.contains(id);
    if (op.version) versions[id] = {*op.version, op.kind == Operation::Kind::kDelete};
    if (held) {
      order.erase(where[id]);
      where.erase(id);
    }
    if (op.kind == Operation::Kind::kIndex) {
      order[++clock] = op.document;
      where[id] = clock;
      return WriteOutcome::kApplied;
    }
    return held ? WriteOutcome::kApplied : WriteOutcome::kNotFound;
  }
  // (id, fields) of the live documents of `partitions`, in write order.
  std::vector<std::pair<std::string, Fields>> Live(const std::vector<int>& partitions) const {
    std::vector<std::pair<std::string, Fields>> out;
    for (const auto& [c, d] : order) {
      if (absl::c_linear_search(partitions, PartitionOf(d.external_id))) {
        out.emplace_back(d.external_id, d.fields);
      }
    }
    return out;
  }
  std::map<std::string, Version> VersionsOf(const std::vector<int>& partitions) const {
    std::map<std::string, Version> out;
    for (const auto& [id, v] : versions) {
      if (absl::c_linear_search(partitions, PartitionOf(id))) out[id] = v;
    }
    return out;
  }
};

// Messages from the child: u32 length of the rest, u8 kind, u8 thread, then the body. kIntent's
// body: per operation, u32 length and Operation::Encode(); kAck's: one byte per operation (the
// WriteOutcome, or 9 for a refused operation); kFailed's: the error's text.
enum Message : uint8_t { kIntent = 1, kAck = 2, kFailed = 3 };

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
uint32_t GetU32(absl::string_view in) {
  uint32_t v;
  std::memcpy(&v, in.data(), 4);
  return v;
}

class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  void Send(Message kind, int thread, const std::string& body) {
    std::string m;
    PutU32(&m, static_cast<uint32_t>(body.size() + 2));
    m.push_back(static_cast<char>(kind));
    m.push_back(static_cast<char>(thread));
    m += body;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t done = 0; done < m.size();) {
      const ssize_t n = ::write(fd_, m.data() + done, m.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(4);
      done += static_cast<size_t>(n);
    }
  }

 private:
  const int fd_;
  std::mutex mu_;
};

struct TrialPlan {
  uint64_t seed = 0;
  int threads = 1;
  int batches_per_thread = 0;
  uint64_t next_id = 0;  // ids from here on are new
  uint64_t version_base = 0;
  LiveIndexOptions options;
};

// The child: never returns.
[[noreturn]] void RunChild(const std::string& dir, const TrialPlan& plan, const Model& model,
                           int fd) {
  Reporter reporter(fd);
  absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir, plan.options);
  if (!live.ok()) {
    reporter.Send(kFailed, 0, absl::StrCat("open: ", live.status().ToString()));
    ::_exit(3);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < plan.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(plan.seed * 7 + t));
      std::vector<int> mine;
      for (int p = 0; p < kPartitions; ++p) {
        if (p % plan.threads == t) mine.push_back(p);
      }
      // The ids this thread may touch: those the model holds of its partitions, and new ones.
      std::vector<uint64_t> known;
      for (const auto& [id, clock] : model.where) {
        if (absl::c_linear_search(mine, PartitionOf(id)))
          known.push_back(std::stoull(id.substr(1)));
      }
      uint64_t fresh = plan.next_id + static_cast<uint64_t>(t);
      for (int b = 0; b < plan.batches_per_thread; ++b) {
        std::vector<Operation> ops;
        std::string intent;
        for (int n = 1 + static_cast<int>(rng() % 12); n > 0; --n) {
          const int what = static_cast<int>(rng() % 20);
          std::optional<uint64_t> version;
          if (rng() % 5 < 2) version = plan.version_base + rng() % 40;
          const std::string rev = absl::StrCat(plan.seed, ".", t, ".", b, ".", n);
          std::string id;
          if (what < 8 || known.empty()) {
            while (!absl::c_linear_search(mine, static_cast<int>(fresh % 3))) ++fresh;
            known.push_back(fresh);
            id = absl::StrCat("d", fresh++);
          } else {
            id = absl::StrCat("d", known[rng() % known.size()]);
          }
          if (what == 19) {
            Document bad = RandomDocument(rng, id, rev);
            bad.text = "caf\xC3";  // refused: not UTF-8
            ops.push_back(Operation::Index(bad, version));
          } else if (what < 14) {
            ops.push_back(Operation::Index(RandomDocument(rng, id, rev), version));
          } else {
            ops.push_back(Operation::Delete(id, version));
          }
          const std::string e = ops.back().Encode();
          PutU32(&intent, static_cast<uint32_t>(e.size()));
          intent += e;
        }
        reporter.Send(kIntent, t, intent);
        auto outcomes = (*live)->Write(ops);
        if (!outcomes.ok()) {
          reporter.Send(kFailed, t, absl::StrCat("write: ", outcomes.status().ToString()));
          ::_exit(3);
        }
        std::string ack;
        for (const auto& o : *outcomes) ack.push_back(o.ok() ? static_cast<char>(*o) : 9);
        reporter.Send(kAck, t, ack);
        const int action = static_cast<int>(rng() % 20);
        absl::Status s;
        if (action < 2) s = (*live)->Refresh();
        if (action == 2) s = (*live)->Flush();
        if (!s.ok()) {
          reporter.Send(kFailed, t, absl::StrCat("refresh/flush: ", s.ToString()));
          ::_exit(3);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  while (true) ::pause();  // until the parent's SIGKILL
}

// Runs the child, kills it `kill_after` after the fork, and returns everything it reported.
std::string RunAndKill(const std::string& dir, const TrialPlan& plan, const Model& model,
                       std::chrono::microseconds kill_after, int* wait_status) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(dir, plan, model, fds[1]);
  }
  ::close(fds[1]);
  std::string got;
  char buf[1 << 16];
  // Read while the child runs, so that it never blocks on a full pipe.
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  while (std::chrono::steady_clock::now() - start < kill_after) {
    pollfd p{fds[0], POLLIN, 0};
    ::poll(&p, 1, 1);
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    if (n == 0) break;  // the child is gone
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, wait_status, 0);
  ::fcntl(fds[0], F_SETFL, 0);
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) got.append(buf, n);
  ::close(fds[0]);
  return got;
}

// A thread's reported batches: the acknowledged ones with their outcomes, and the one in flight.
struct ThreadLog {
  std::vector<std::pair<std::vector<Operation>, std::string>> acknowledged;
  std::optional<std::vector<Operation>> in_flight;
};

absl::StatusOr<std::vector<ThreadLog>> Parse(absl::string_view in, int threads) {
  std::vector<ThreadLog> logs(threads);
  // A message cut by the kill (the last one) is ignored: it was never acknowledged.
  while (in.size() >= 4 && in.size() >= 4 + GetU32(in)) {
    const uint32_t length = GetU32(in);
    const auto kind = static_cast<Message>(in[4]);
    ThreadLog& log = logs.at(static_cast<uint8_t>(in[5]));
    absl::string_view body = in.substr(6, length - 2);
    in.remove_prefix(4 + length);
    if (kind == kFailed) return absl::InternalError(absl::StrCat("the child: ", body));
    if (kind == kIntent) {
      std::vector<Operation> ops;
      while (!body.empty()) {
        const uint32_t n = GetU32(body);
        absl::StatusOr<Operation> op = Operation::Decode(body.substr(4, n));
        if (!op.ok()) return op.status();
        ops.push_back(*std::move(op));
        body.remove_prefix(4 + n);
      }
      log.in_flight = std::move(ops);
    } else {
      if (!log.in_flight || body.size() != log.in_flight->size()) {
        return absl::InternalError("an acknowledgement without its batch");
      }
      log.acknowledged.emplace_back(*std::move(log.in_flight), std::string(body));
      log.in_flight.reset();
    }
  }
  return logs;
}

std::string FirstDifference(const std::vector<std::pair<std::string, Fields>>& want,
                            const std::vector<std::pair<std::string, Fields>>& got) {
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (want[i] == got[i]) continue;
    auto show = [](const std::pair<std::string, Fields>& d) {
      std::string s = d.first;
      for (const auto& [n, v] : d.second) absl::StrAppend(&s, " ", n, "=", v);
      return s;
    };
    return absl::StrCat("document ", i, ": want ", show(want[i]), ", got ", show(got[i]), "\n");
  }
  return "";
}

// The live documents of `snapshot` in docID order (the order of their latest write).
std::vector<Document> Recovered(const Snapshot& snapshot) {
  std::vector<Document> docs;
  for (uint32_t d = 0; d < snapshot.docid_limit(); ++d) {
    auto [view, local] = snapshot.Locate(d);
    if (view->is_deleted(local)) continue;
    Document doc;
    doc.external_id = std::string(snapshot.external_id(d));
    for (const auto& [name, value] : snapshot.stored_fields(d)) {
      doc.fields.emplace_back(std::string(name), std::string(value));
      if (name == "body") doc.text = std::string(value);
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

void ExpectAnswersOfAFreshBuild(const Snapshot& snapshot, const std::vector<Document>& docs,
                                const std::string& scratch, std::mt19937& rng) {
  if (docs.empty()) return;
  std::filesystem::remove_all(scratch);
  ASSERT_TRUE(Build(docs, scratch).ok());
  absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(scratch, "fresh", {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  for (int q = 0; q < 8; ++q) {
    const index::Query query = testing::RandomQuery(rng, 52);
    absl::StatusOr<index::SearchResult> got = snapshot.Search(query, {});
    absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(query, {});
    ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
    ASSERT_EQ(testing::RankedIds(*got, snapshot), testing::RankedIds(*want, (*fresh)->index()))
        << "query " << q;
  }
}

// Every "_..." entry of `dir` is a segment of `snapshot` or of the commit point (a segment whose
// documents the log deleted stays until the next commit); at most one commit point, none
// temporary.
void ExpectNothingUnreferenced(const std::string& dir, const Snapshot& snapshot) {
  std::vector<std::string> named;
  for (const SegmentView& v : snapshot.segments()) named.push_back(v.segment->name());
  absl::StatusOr<std::optional<CommitPoint>> commit = ReadLatestCommitPoint(dir);
  ASSERT_TRUE(commit.ok()) << commit.status();
  if (commit->has_value()) {
    for (const CommittedSegment& s : (*commit)->segments) named.push_back(s.name);
  }
  int commit_points = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, "_")) {
      EXPECT_TRUE(absl::c_linear_search(named, name)) << name << " is left in " << dir;
    }
    if (absl::StartsWith(name, "segments_")) {
      ++commit_points;
      EXPECT_FALSE(absl::EndsWith(name, ".tmp")) << name;
    }
  }
  EXPECT_LE(commit_points, 1);
}

TEST(LiveIndexCrashTest, AKilledWriterLosesNoAcknowledgedOperation) {
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  std::mt19937 rng(20261207);
  Model model;
  uint64_t next_id = 0;
  int fresh_starts = 0, in_flight_seen = 0, in_flight_kept = 0, acknowledged_ops = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE(absl::StrCat("trial ", trial));
    if (trial == 0 || rng() % 4 == 0) {
      // A fresh index built offline.
      std::filesystem::remove_all(dir);
      model = Model();
      std::vector<Document> docs;
      for (int i = 0; i < 24; ++i) {
        docs.push_back(RandomDocument(rng, absl::StrCat("d", next_id++), "offline"));
      }
      ASSERT_TRUE(Build(docs, dir).ok());
      for (const Document& d : docs) model.Apply(Operation::Index(d));
      ++fresh_starts;
    }
    TrialPlan plan;
    plan.seed = rng();
    plan.threads = 1 + static_cast<int>(rng() % 3);
    plan.batches_per_thread = 5 + static_cast<int>(rng() % (60 / plan.threads));
    plan.next_id = next_id;
    plan.version_base = static_cast<uint64_t>(trial) * 8;
    plan.options.sync_writes = rng() % 4 != 0;
    plan.options.refresh_interval = std::vector<absl::Duration>{
        absl::ZeroDuration(), absl::Milliseconds(3), absl::Milliseconds(20)}[rng() % 3];
    plan.options.background_nice = 0;
    // Small levels, so that the child merges in the background as it writes and is killed in the
    // middle of merges too.
    plan.options.merge_policy.floor_documents = 8;
    plan.options.merge_policy.per_level = 3;
    plan.options.merge_bytes_per_second = rng() % 2 == 0 ? 0 : uint64_t{4} << 20;
    int wait_status = 0;
    const std::string reported =
        RunAndKill(dir, plan, model, std::chrono::microseconds(rng() % 100000), &wait_status);
    next_id += 4000;  // past every id the child could make (64 batches of 12, stride 3)
    absl::StatusOr<std::vector<ThreadLog>> logs = Parse(reported, plan.threads);
    ASSERT_TRUE(logs.ok()) << logs.status();
    ASSERT_TRUE(WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL)
        << "the child ended on its own, status " << wait_status;

    LiveIndexOptions options;
    options.refresh_interval = absl::ZeroDuration();
    options.background_merges = false;  // a merge's output in progress is not a leftover
    absl::StatusOr<std::unique_ptr<LiveIndex>> live = LiveIndex::Open(dir, options);
    ASSERT_TRUE(live.ok()) << live.status();
    std::shared_ptr<const Snapshot> snapshot = (*live)->snapshot();
    ExpectNothingUnreferenced(dir, *snapshot);
    const std::vector<Document> recovered = Recovered(*snapshot);
    ASSERT_EQ(snapshot->num_docs(), recovered.size());

    // Per thread: the acknowledged batches, then the one in flight wholly or not at all.
    const bool flush = rng() % 2 == 0;
    std::vector<Model> candidates_kept;
    Model next = model;
    for (int t = 0; t < plan.threads; ++t) {
      std::vector<int> mine;
      for (int p = 0; p < kPartitions; ++p) {
        if (p % plan.threads == t) mine.push_back(p);
      }
      const ThreadLog& log = (*logs)[t];
      for (const auto& [ops, outcomes] : log.acknowledged) {
        for (size_t i = 0; i < ops.size(); ++i) {
          ++acknowledged_ops;
          if (!ops[i].Validate().ok()) {
            ASSERT_EQ(outcomes[i], 9) << ops[i].id();
            continue;
          }
          ASSERT_EQ(static_cast<WriteOutcome>(outcomes[i]), next.Apply(ops[i])) << ops[i].id();
        }
      }
      std::vector<Model> candidates = {next};
      if (log.in_flight) {
        ++in_flight_seen;
        Model with = next;
        for (const Operation& op : *log.in_flight) {
          if (op.Validate().ok()) with.Apply(op);
        }
        candidates.push_back(with);
      }
      // What the index holds of this thread's ids, in write order, through Find and the fields.
      std::vector<std::pair<std::string, Fields>> held;
      for (const Document& d : recovered) {
        if (!absl::c_linear_search(mine, PartitionOf(d.external_id))) continue;
        std::optional<uint32_t> found = snapshot->Find(d.external_id);
        ASSERT_TRUE(found.has_value()) << d.external_id;
        Fields fields;
        for (const auto& [n, v] : snapshot->stored_fields(*found)) fields.emplace_back(n, v);
        held.emplace_back(d.external_id, fields);
      }
      std::vector<size_t> matching;
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (candidates[c].Live(mine) == held) matching.push_back(c);
      }
      ASSERT_FALSE(matching.empty())
          << FirstDifference(candidates.back().Live(mine), held) << "thread " << t
          << ": the index holds " << held.size() << " of its documents, the "
          << "acknowledged operations " << candidates[0].Live(mine).size()
          << (log.in_flight
                  ? absl::StrCat(", with the batch in flight ", candidates[1].Live(mine).size())
                  : "");
      // Two candidates hold the same documents when the batch in flight changed only versions:
      // the commit point (flushed below) tells them apart.
      if (matching.size() == 2 &&
          candidates[0].VersionsOf(mine) != candidates[1].VersionsOf(mine)) {
        candidates_kept.push_back(candidates[0]);
      }
      if (matching.back() == 1) ++in_flight_kept;
      next = candidates[matching.back()];
    }
    ExpectAnswersOfAFreshBuild(*snapshot, recovered, tmp.path() + "/fresh", rng);
    if (HasFatalFailure()) return;

    // The versions the index recovered, through a commit point.
    if (flush || !candidates_kept.empty()) {
      ASSERT_TRUE((*live)->Flush().ok());
      absl::StatusOr<std::optional<CommitPoint>> commit = ReadLatestCommitPoint(dir);
      ASSERT_TRUE(commit.ok()) << commit.status();
      std::map<std::string, Model::Version> versions;
      if (commit->has_value()) {
        for (const auto& [id, v] : (*commit)->versions) versions[id] = {v.version, v.deleted};
      }
      for (int t = 0; t < plan.threads; ++t) {
        std::vector<int> mine;
        for (int p = 0; p < kPartitions; ++p) {
          if (p % plan.threads == t) mine.push_back(p);
        }
        std::map<std::string, Model::Version> held;
        for (const auto& [id, v] : versions) {
          if (absl::c_linear_search(mine, PartitionOf(id))) held[id] = v;
        }
        if (held == next.VersionsOf(mine)) continue;
        // The batch in flight made it after all (or not): take the candidate that agrees.
        bool agreed = false;
        for (const Model& m : candidates_kept) {
          if (held != m.VersionsOf(mine)) continue;
          for (auto it = next.versions.begin(); it != next.versions.end();) {
            it = absl::c_linear_search(mine, PartitionOf(it->first)) ? next.versions.erase(it)
                                                                     : std::next(it);
          }
          for (const auto& [id, v] : held) next.versions[id] = v;
          agreed = true;
        }
        ASSERT_TRUE(agreed) << "thread " << t << ": the recovered versions differ from the "
                            << "acknowledged operations'";
      }
    }
    // Threads' writes interleave in the log as they came: the next trial's model takes the
    // recovered order across threads (each thread's own order was checked above).
    ASSERT_EQ(next.where.size(), recovered.size());
    model = next;
    model.order.clear();
    model.where.clear();
    for (const Document& d : recovered) {
      model.order[++model.clock] = next.order.at(next.where.at(d.external_id));
      model.where[d.external_id] = model.clock;
    }
  }
  std::printf(
      "%d trials (%d from an offline build), %d acknowledged operations, %d batches in "
      "flight at the kill, %d of them recovered\n",
      kTrials, fresh_starts, acknowledged_ops, in_flight_seen, in_flight_kept);
  EXPECT_GT(in_flight_seen, kTrials / 10);
  EXPECT_GT(acknowledged_ops, kTrials * 5);  // about 60 a trial here; sanitizers are slower
}

}  // namespace
}  // namespace tandem::live
