#include "live/write_ahead_log.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using ::testing::HasSubstr;
using Records = std::vector<std::pair<uint64_t, std::string>>;

constexpr size_t kHeader = 20;

std::unique_ptr<WriteAheadLog> OpenOk(const std::string& dir, WriteAheadLogOptions options = {}) {
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(dir, options);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

Records ReplayAll(const WriteAheadLog& log, uint64_t after = 0) {
  Records out;
  const absl::Status s = log.Replay(after, [&](uint64_t seqno, absl::string_view payload) {
    out.emplace_back(seqno, std::string(payload));
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::string FileOf(const std::string& dir, uint64_t first) {
  return absl::StrFormat("%s/log-%020d", dir, first);
}

std::vector<std::string> LogFiles(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t SizeOf(const std::string& path) { return std::filesystem::file_size(path); }

std::string Payload(int i, size_t size = 30) {
  std::string p = absl::StrCat("record-", i, "-");
  p.resize(size, static_cast<char>('a' + i % 26));
  return p;
}

// Writes records 1..n with Payload(i) into a new log in `dir`.
void WriteRecords(const std::string& dir, int n, WriteAheadLogOptions options = {}) {
  auto log = OpenOk(dir, options);
  ASSERT_NE(log, nullptr);
  for (int i = 1; i <= n; ++i) {
    absl::StatusOr<uint64_t> seqno = log->Append(Payload(i));
    ASSERT_TRUE(seqno.ok()) << seqno.status();
    ASSERT_EQ(*seqno, static_cast<uint64_t>(i));
  }
}

using testing::FileSizeLimit;

TEST(WriteAheadLogTest, RefusesBadOptionsAndPaths) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(WriteAheadLog::Open(tmp.path(), options).status()));
  options = {};
  options.max_payload_bytes = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(WriteAheadLog::Open(tmp.path(), options).status()));
  options.max_payload_bytes = uint64_t{1} << 32;
  EXPECT_TRUE(absl::IsInvalidArgument(WriteAheadLog::Open(tmp.path(), options).status()));
  options = {};
  options.sync_on_append = false;
  options.sync_interval = absl::ZeroDuration();
  EXPECT_TRUE(absl::IsInvalidArgument(WriteAheadLog::Open(tmp.path(), options).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(WriteAheadLog::Open("", {}).status()));
  // A regular file where the directory should be.
  WriteAll(tmp.path() + "/file", "x");
  EXPECT_FALSE(WriteAheadLog::Open(tmp.path() + "/file", {}).ok());
}

TEST(WriteAheadLogTest, RefusesOversizedPayloadsAndEmptyBatchesWithoutUsingNumbers) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_payload_bytes = 10;
  auto log = OpenOk(tmp.path() + "/wal", options);
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> big = log->Append(std::string(11, 'x'));
  EXPECT_TRUE(absl::IsInvalidArgument(big.status())) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("11 bytes"));
  EXPECT_TRUE(absl::IsInvalidArgument(log->AppendBatch({}).status()));
  const std::vector<std::string> batch = {"ok", std::string(11, 'x')};
  EXPECT_TRUE(absl::IsInvalidArgument(log->AppendBatch(batch).status()));
  EXPECT_EQ(log->last_sequence(), 0u);
  absl::StatusOr<uint64_t> fits = log->Append(std::string(10, 'x'));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(*fits, 1u);
  EXPECT_EQ(ReplayAll(*log), (Records{{1, std::string(10, 'x')}}));
}

TEST(WriteAheadLogTest, OneProcessAtATimeOpensADirectory) {
  base::TempDir tmp;
  auto log = OpenOk(tmp.path());
  ASSERT_NE(log, nullptr);
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> second = WriteAheadLog::Open(tmp.path(), {});
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  log.reset();
  EXPECT_NE(OpenOk(tmp.path()), nullptr);
}

TEST(WriteAheadLogTest, EveryFlippedByteInAMiddleRecordIsDataLossNamingTheFile) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 5);
  const std::string path = FileOf(tmp.path(), 1);
  const std::string original = ReadAll(path);
  const size_t record = kHeader + Payload(1).size();
  const size_t third = 2 * record;
  for (size_t at = third; at < third + record; ++at) {
    std::string damaged = original;
    damaged[at] ^= 0x10;
    WriteAll(path, damaged);
    absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), {});
    ASSERT_TRUE(absl::IsDataLoss(log.status())) << "byte " << at << ": " << log.status();
    EXPECT_THAT(log.status().message(), HasSubstr(path));
    EXPECT_THAT(log.status().message(), HasSubstr(absl::StrCat("at byte ", third)));
    EXPECT_EQ(ReadAll(path), damaged) << "Open must not cut a damaged log";
  }
  WriteAll(path, original);
  EXPECT_EQ(ReplayAll(*OpenOk(tmp.path())).size(), 5u);
}

TEST(WriteAheadLogTest, DamageInAFileThatIsNotTheLastIsDataLoss) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 100;  // two records a file
  WriteRecords(tmp.path(), 5, options);
  ASSERT_EQ(LogFiles(tmp.path()).size(), 3u);
  const std::string first = FileOf(tmp.path(), 1);
  // A torn end is damage here: the log went on in the next file.
  std::filesystem::resize_file(first, SizeOf(first) - 3);
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), options);
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr(first));
  EXPECT_THAT(log.status().message(), HasSubstr("not the last"));
}

TEST(WriteAheadLogTest, AMissingMiddleFileIsDataLoss) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 100;
  WriteRecords(tmp.path(), 6, options);
  ASSERT_EQ(LogFiles(tmp.path()).size(), 3u);
  std::filesystem::remove(FileOf(tmp.path(), 3));
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), options);
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr(FileOf(tmp.path(), 5)));
  EXPECT_THAT(log.status().message(), HasSubstr("missing"));
}

TEST(WriteAheadLogTest, AFileNamedAfterAnotherRecordIsDataLoss) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 3);
  std::filesystem::rename(FileOf(tmp.path(), 1), FileOf(tmp.path(), 2));
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), {});
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr(FileOf(tmp.path(), 2)));
  EXPECT_THAT(log.status().message(), HasSubstr("name"));
}

TEST(WriteAheadLogTest, ARepeatedRecordIsDataLossNotATornTail) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 3);
  const std::string path = FileOf(tmp.path(), 1);
  const std::string bytes = ReadAll(path);
  const size_t record = kHeader + Payload(1).size();
  WriteAll(path, bytes + bytes.substr(2 * record));  // record 3 again, checksum valid
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), {});
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr("sequence number 3, expected 4"));
}

TEST(WriteAheadLogTest, AMisnamedLogFileIsDataLossAndOtherNamesAreLeftAlone) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 1);
  WriteAll(tmp.path() + "/README", "not the log's");
  EXPECT_NE(OpenOk(tmp.path()), nullptr);
  WriteAll(tmp.path() + "/log-12", "");
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log = WriteAheadLog::Open(tmp.path(), {});
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr("log-12"));
}

TEST(WriteAheadLogTest, ReplayFindsDamageDoneSinceOpen) {
  base::TempDir tmp;
  auto log = OpenOk(tmp.path());
  ASSERT_NE(log, nullptr);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(log->Append(Payload(i)).ok());
  const std::string path = FileOf(tmp.path(), 1);
  std::string bytes = ReadAll(path);
  bytes[kHeader + Payload(1).size() + kHeader] ^= 0x01;  // record 2's payload
  WriteAll(path, bytes);
  Records seen;
  const absl::Status s = log->Replay(0, [&](uint64_t seqno, absl::string_view payload) {
    seen.emplace_back(seqno, std::string(payload));
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_EQ(seen, (Records{{1, Payload(1)}}));
}

TEST(WriteAheadLogTest, ATornTailIsCutAtEveryByteOffsetOfTheLastRecord) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 3);
  const std::string path = FileOf(tmp.path(), 1);
  const std::string original = ReadAll(path);
  const size_t good = 2 * (kHeader + Payload(1).size());
  ASSERT_EQ(original.size(), good + kHeader + Payload(3).size());
  for (size_t cut = good; cut < original.size(); ++cut) {
    WriteAll(path, original.substr(0, cut));
    {
      auto log = OpenOk(tmp.path());
      ASSERT_NE(log, nullptr) << "cut at " << cut;
      EXPECT_EQ(log->torn_tail_bytes(), cut - good);
      if (cut > good) {
        EXPECT_THAT(log->torn_tail_message(), HasSubstr(path));
      }
      EXPECT_EQ(log->last_sequence(), 2u);
      EXPECT_EQ(SizeOf(path), good);
      EXPECT_EQ(ReplayAll(*log), (Records{{1, Payload(1)}, {2, Payload(2)}}));
      absl::StatusOr<uint64_t> next = log->Append("after the cut");
      ASSERT_TRUE(next.ok()) << next.status();
      EXPECT_EQ(*next, 3u);
    }
    auto log = OpenOk(tmp.path());
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->torn_tail_bytes(), 0u);
    EXPECT_EQ(ReplayAll(*log, 2), (Records{{3, "after the cut"}}));
  }
}

TEST(WriteAheadLogTest, AFlippedByteInTheLastRecordIsATornTail) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 3);
  const std::string path = FileOf(tmp.path(), 1);
  const std::string original = ReadAll(path);
  const size_t good = 2 * (kHeader + Payload(1).size());
  for (size_t at = good; at < original.size(); ++at) {
    std::string damaged = original;
    damaged[at] ^= 0x01;
    WriteAll(path, damaged);
    auto log = OpenOk(tmp.path());
    ASSERT_NE(log, nullptr) << "byte " << at;
    EXPECT_EQ(log->torn_tail_bytes(), original.size() - good);
    EXPECT_EQ(log->last_sequence(), 2u);
  }
}

TEST(WriteAheadLogTest, AZeroFilledTailIsCut) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 2);
  const std::string path = FileOf(tmp.path(), 1);
  const std::string original = ReadAll(path);
  WriteAll(path, original + std::string(4096, '\0'));  // a size that reached the disk before data
  auto log = OpenOk(tmp.path());
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_tail_bytes(), 4096u);
  EXPECT_EQ(ReadAll(path), original);
  EXPECT_EQ(log->last_sequence(), 2u);
}

TEST(WriteAheadLogTest, AnEmptyLastFileKeepsTheNumbering) {
  base::TempDir tmp;
  WriteRecords(tmp.path(), 2);
  WriteAll(FileOf(tmp.path(), 3), "");  // a roll that a crash followed
  auto log = OpenOk(tmp.path());
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->last_sequence(), 2u);
  absl::StatusOr<uint64_t> next = log->Append("x");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 3u);
  EXPECT_EQ(SizeOf(FileOf(tmp.path(), 3)), kHeader + 1);
}

TEST(WriteAheadLogTest, RoundTripsAndContinuesNumberingAfterReopen) {
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/a/wal";  // created with its parent
  const std::string binary("\0\xff\n\0", 4);
  {
    auto log = OpenOk(dir);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->last_sequence(), 0u);
    EXPECT_EQ(*log->Append("one"), 1u);
    EXPECT_EQ(*log->Append(""), 2u);
    EXPECT_EQ(*log->AppendBatch({"three", binary, "five"}), 3u);
    EXPECT_EQ(log->last_sequence(), 5u);
    EXPECT_EQ(log->durable_sequence(), 5u);
    const WriteAheadLogStats stats = log->stats();
    EXPECT_EQ(stats.records, 5u);
    EXPECT_EQ(stats.groups, 3u);
    EXPECT_EQ(stats.syncs, 3u);
    EXPECT_EQ(stats.bytes, 5 * kHeader + 3 + 5 + 4 + 4);
    EXPECT_EQ(stats.files, 1u);
  }
  auto log = OpenOk(dir);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->last_sequence(), 5u);
  EXPECT_EQ(log->torn_tail_bytes(), 0u);
  EXPECT_EQ(ReplayAll(*log),
            (Records{{1, "one"}, {2, ""}, {3, "three"}, {4, binary}, {5, "five"}}));
  EXPECT_EQ(ReplayAll(*log, 3), (Records{{4, binary}, {5, "five"}}));
  EXPECT_EQ(*log->Append("six"), 6u);
  EXPECT_EQ(ReplayAll(*log, 5), (Records{{6, "six"}}));
  EXPECT_EQ(ReplayAll(*log, 6), Records{});
  // A commit point past the log's end: the log lost records it acknowledged.
  const absl::Status past =
      log->Replay(7, [](uint64_t, absl::string_view) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsDataLoss(past)) << past;
  // The caller's error stops the replay and comes back.
  int calls = 0;
  const absl::Status s = log->Replay(0, [&](uint64_t, absl::string_view) {
    return ++calls == 2 ? absl::AbortedError("stop") : absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(calls, 2);
}

TEST(WriteAheadLogTest, LargeRecordsAndBatchesReadBackAcrossTheReadBuffer) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 1 << 20;
  Records expected;
  {
    auto log = OpenOk(tmp.path(), options);
    ASSERT_NE(log, nullptr);
    // Records that straddle the reader's 1 MiB buffer at every kind of offset, one larger than it.
    for (int i = 0; i < 40; ++i) {
      std::string p = Payload(i, 1 + (i * 7919) % 90'000);
      expected.emplace_back(*log->Append(p), std::move(p));
    }
    std::string big = Payload(99, 3 << 20);
    expected.emplace_back(*log->Append(big), std::move(big));
    // A batch is never split: this file passes max_file_bytes by most of it.
    const std::vector<std::string> batch = {Payload(1, 600'000), Payload(2, 600'000),
                                            Payload(3, 600'000)};
    const uint64_t first = *log->AppendBatch(batch);
    for (size_t i = 0; i < batch.size(); ++i) expected.emplace_back(first + i, batch[i]);
    EXPECT_EQ(*log->Append("tail"), first + 3);
    expected.emplace_back(first + 3, "tail");
    EXPECT_EQ(SizeOf(FileOf(tmp.path(), first)), 3 * (kHeader + 600'000));
  }
  auto log = OpenOk(tmp.path(), options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->torn_tail_bytes(), 0u);
  const Records got = ReplayAll(*log);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].first, expected[i].first);
    ASSERT_TRUE(got[i].second == expected[i].second) << "record " << got[i].first;
  }
}

TEST(WriteAheadLogTest, ConcurrentAppendersShareWritesAndSyncs) {
  base::TempDir tmp;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;
  std::vector<std::vector<uint64_t>> seqnos(kThreads);
  uint64_t syncs = 0;
  {
    auto log = OpenOk(tmp.path());
    ASSERT_NE(log, nullptr);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          absl::StatusOr<uint64_t> s = log->Append(absl::StrCat(t, ":", i));
          if (!s.ok()) {
            ++failures;
            return;
          }
          seqnos[t].push_back(*s);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
    const WriteAheadLogStats stats = log->stats();
    EXPECT_EQ(stats.records, uint64_t{kThreads * kPerThread});
    syncs = stats.syncs;
    EXPECT_LT(stats.syncs, stats.records) << "every appender synced alone: no group commit";
  }
  std::printf("%d records from %d threads: %llu fdatasyncs\n", kThreads * kPerThread, kThreads,
              static_cast<unsigned long long>(syncs));
  auto log = OpenOk(tmp.path());
  ASSERT_NE(log, nullptr);
  const Records records = ReplayAll(*log);
  ASSERT_EQ(records.size(), size_t{kThreads * kPerThread});
  std::vector<int> next(kThreads, 0);
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].first, i + 1);
    const size_t colon = records[i].second.find(':');
    const int t = std::stoi(records[i].second.substr(0, colon));
    // Each thread's records appear once each, in the order it appended them, under the sequence
    // number Append returned.
    ASSERT_EQ(records[i].second, absl::StrCat(t, ":", next[t]));
    ASSERT_EQ(seqnos[t][next[t]], records[i].first);
    ++next[t];
  }
}

TEST(WriteAheadLogTest, AppendsRollDropAndReplayTogether) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 256;
  options.sync_on_append = false;
  options.sync_interval = absl::Milliseconds(1);
  auto log = OpenOk(tmp.path(), options);
  ASSERT_NE(log, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> appenders;
  for (int t = 0; t < 4; ++t) {
    appenders.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        if (!log->Append(Payload(t * 1000 + i, 10 + i % 40)).ok()) ++failures;
      }
    });
  }
  // Drops, replays and syncs while the appenders roll files.
  std::thread maintenance([&] {
    while (!stop.load()) {
      if (!log->DropThrough(log->last_sequence() / 2).ok()) ++failures;
      uint64_t expected = log->first_sequence();
      const absl::Status s = log->Replay(expected - 1, [&](uint64_t seqno, absl::string_view) {
        return seqno == expected++ ? absl::OkStatus() : absl::InternalError("out of order");
      });
      if (!s.ok() || !log->Sync().ok()) ++failures;
    }
  });
  for (std::thread& t : appenders) t.join();
  stop = true;
  maintenance.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(log->last_sequence(), 1200u);
  const uint64_t first = log->first_sequence();
  log.reset();
  log = OpenOk(tmp.path(), options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->first_sequence(), first);
  EXPECT_EQ(ReplayAll(*log, first - 1).size(), 1200 - first + 1);
}

TEST(WriteAheadLogTest, RollsFilesAndDropsTheCoveredOnes) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.max_file_bytes = 3 * (kHeader + 30);  // three records a file
  auto log = OpenOk(tmp.path(), options);
  ASSERT_NE(log, nullptr);
  for (int i = 1; i <= 20; ++i) ASSERT_EQ(*log->Append(Payload(i)), static_cast<uint64_t>(i));
  std::vector<std::string> expected;
  for (uint64_t first = 1; first <= 20; first += 3)
    expected.push_back(absl::StrFormat("log-%020d", first));
  EXPECT_EQ(LogFiles(tmp.path()), expected);
  EXPECT_EQ(log->stats().files, 7u);

  ASSERT_TRUE(log->DropThrough(5).ok());  // log-1 holds 1..3; log-4 holds 6 too
  EXPECT_EQ(log->first_sequence(), 4u);
  EXPECT_EQ(LogFiles(tmp.path()).front(), "log-00000000000000000004");
  ASSERT_TRUE(log->DropThrough(6).ok());
  EXPECT_EQ(log->first_sequence(), 7u);
  const absl::Status gone =
      log->Replay(3, [](uint64_t, absl::string_view) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsDataLoss(gone)) << gone;
  const Records rest = ReplayAll(*log, 6);
  ASSERT_EQ(rest.size(), 14u);
  EXPECT_EQ(rest.front(), (std::pair<uint64_t, std::string>{7, Payload(7)}));

  ASSERT_TRUE(log->DropThrough(1000).ok());  // the file appended to stays
  EXPECT_EQ(LogFiles(tmp.path()), (std::vector<std::string>{"log-00000000000000000019"}));
  log.reset();
  log = OpenOk(tmp.path(), options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->first_sequence(), 19u);
  EXPECT_EQ(log->last_sequence(), 20u);
  EXPECT_EQ(*log->Append("21"), 21u);
  EXPECT_EQ(ReplayAll(*log, 18).size(), 3u);
  EXPECT_TRUE(absl::IsDataLoss(
      log->Replay(0, [](uint64_t, absl::string_view) { return absl::OkStatus(); })));
}

TEST(WriteAheadLogTest, WithoutSyncOnAppendRecordsAreSyncedLaterAndOnSync) {
  base::TempDir tmp;
  WriteAheadLogOptions options;
  options.sync_on_append = false;
  options.sync_interval = absl::Hours(1);
  {
    auto log = OpenOk(tmp.path() + "/manual", options);
    ASSERT_NE(log, nullptr);
    for (int i = 1; i <= 10; ++i) ASSERT_TRUE(log->Append(Payload(i)).ok());
    EXPECT_EQ(log->stats().syncs, 0u);
    EXPECT_EQ(log->last_sequence(), 10u);
    EXPECT_EQ(log->durable_sequence(), 0u);
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_EQ(log->stats().syncs, 1u);
    EXPECT_EQ(log->durable_sequence(), 10u);
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_EQ(log->stats().syncs, 1u) << "nothing new to sync";
  }
  EXPECT_EQ(ReplayAll(*OpenOk(tmp.path() + "/manual", options)).size(), 10u);

  options.sync_interval = absl::Milliseconds(10);
  auto log = OpenOk(tmp.path() + "/background", options);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append("x").ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (log->durable_sequence() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(log->durable_sequence(), 1u);
  EXPECT_GE(log->stats().syncs, 1u);
}

TEST(WriteAheadLogTest, AFullDiskIsResourceExhaustedAndLaterAppendsWork) {
  for (const bool sync : {true, false}) {
    SCOPED_TRACE(sync ? "sync_on_append" : "background sync");
    base::TempDir tmp;
    WriteAheadLogOptions options;
    options.sync_on_append = sync;
    options.sync_interval = absl::Hours(1);
    auto log = OpenOk(tmp.path(), options);
    ASSERT_NE(log, nullptr);
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(log->Append(Payload(i)).ok());
    const std::string path = FileOf(tmp.path(), 1);
    const uint64_t good = SizeOf(path);
    absl::StatusOr<uint64_t> big, batch, small;
    uint64_t size_after_failure = 0;
    {
      // Room for 30 more bytes: a 120-byte record is written in part, then refused.
      FileSizeLimit limit(good + 30);
      ASSERT_TRUE(limit.ok());
      big = log->Append(std::string(100, 'b'));
      size_after_failure = SizeOf(path);
      batch = log->AppendBatch({"12345", "67890"});  // 50 bytes
      small = log->Append("fits!");                  // 25 bytes
    }
    EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
    EXPECT_THAT(big.status().message(), HasSubstr(path));
    EXPECT_EQ(size_after_failure, good) << "the partial record must be cut off";
    EXPECT_TRUE(absl::IsResourceExhausted(batch.status())) << batch.status();
    ASSERT_TRUE(small.ok()) << small.status();
    EXPECT_EQ(*small, 4u) << "refused records use no sequence number";
    absl::StatusOr<uint64_t> later = log->Append(std::string(100, 'c'));
    ASSERT_TRUE(later.ok()) << later.status();
    EXPECT_EQ(*later, 5u);
    log.reset();
    log = OpenOk(tmp.path(), options);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->torn_tail_bytes(), 0u);
    EXPECT_EQ(ReplayAll(*log, 3), (Records{{4, "fits!"}, {5, std::string(100, 'c')}}));
  }
}

}  // namespace
}  // namespace tandem::live
