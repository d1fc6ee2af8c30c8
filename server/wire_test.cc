#include "server/wire.h"

#include <string>

#include "gmock/gmock.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"
#include "tandem/v1/search.pb.h"
#include "tandem/v1/subscription.pb.h"

namespace tandem::server {
namespace {

using ::testing::HasSubstr;

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  grpc::ByteBuffer copy(buffer);
  grpc::Slice slice;
  EXPECT_TRUE(copy.TrySingleSlice(&slice).ok() || copy.DumpToSingleSlice(&slice).ok());
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

TEST(WireTest, ParsesAValidRequestAndLeavesTheBytes) {
  tandem::v1::SearchRequest sent;
  sent.set_text("cat dog");
  sent.set_k(7);
  sent.set_request_id("r1");
  const grpc::ByteBuffer bytes = Bytes(sent.SerializeAsString());
  tandem::v1::SearchRequest got;
  got.set_k(99);  // cleared first
  ASSERT_TRUE(ParseRequest(bytes, got).ok());
  EXPECT_EQ(got.text(), "cat dog");
  EXPECT_EQ(got.k(), 7u);
  EXPECT_EQ(got.request_id(), "r1");
  EXPECT_EQ(bytes.Length(), sent.ByteSizeLong());  // a second parse sees the same bytes
  tandem::v1::SearchRequest again;
  ASSERT_TRUE(ParseRequest(bytes, again).ok());
  EXPECT_EQ(again.request_id(), "r1");
}

TEST(WireTest, ParsesMessagesSplitOverSlices) {
  tandem::v1::SearchRequest sent;
  sent.set_text(std::string(5000, 'a'));
  const std::string encoded = sent.SerializeAsString();
  grpc::Slice parts[] = {grpc::Slice(encoded.substr(0, 3)), grpc::Slice(encoded.substr(3, 2000)),
                         grpc::Slice(encoded.substr(2003))};
  const grpc::ByteBuffer bytes(parts, 3);
  tandem::v1::SearchRequest got;
  ASSERT_TRUE(ParseRequest(bytes, got).ok());
  EXPECT_EQ(got.text(), sent.text());
}

TEST(WireTest, RefusesBytesThatAreNotTheMessage) {
  tandem::v1::SearchRequest got;
  // A field 1 (text) of length 100 with 2 bytes of it; a lone tag; a bad wire type.
  for (const std::string& bad : {std::string("\x0a\x64xy", 4), std::string("\x0a", 1),
                                 std::string("\x0f\x01", 2), std::string("\xff\xff\xff", 3)}) {
    got.set_request_id("stale");
    const absl::Status status = ParseRequest(Bytes(bad), got);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("request is not a valid tandem.v1.SearchRequest"));
    EXPECT_THAT(std::string(status.message()), HasSubstr(std::to_string(bad.size()) + " bytes"));
    EXPECT_EQ(got.request_id(), "");  // nothing half-parsed is left behind
  }
}

TEST(WireTest, RefusesStringsThatAreNotUtf8) {
  // text = "\xff\xfe": proto3 strings must be UTF-8.
  const std::string encoded("\x0a\x02\xff\xfe", 4);
  tandem::v1::SearchRequest got;
  EXPECT_EQ(ParseRequest(Bytes(encoded), got).code(), absl::StatusCode::kInvalidArgument);
  // The same bytes in a bytes-free message that has no field 1 parse as an unknown field.
  tandem::v1::GetIndexInfoRequest info;
  EXPECT_TRUE(ParseRequest(Bytes(encoded), info).ok());
}

TEST(WireTest, NamesTheFirstStringThatIsNotUtf8AnywhereInTheAnswer) {
  tandem::v1::ListSubscriptionsResponse response;
  for (int i = 0; i < 3; ++i) {
    tandem::v1::Subscription* s = response.add_subscriptions();
    s->set_id(i + 1);
    s->set_interface("caf\xc3\xa9");
    tandem::v1::Constraint* c = s->mutable_predicate()->add_filters()->add_constraints();
    c->set_name("s");
    c->mutable_value()->set_string_value("ok");
  }
  EXPECT_TRUE(CheckUtf8Strings(response).ok());
  response.mutable_subscriptions(1)
      ->mutable_predicate()
      ->mutable_filters(0)
      ->mutable_constraints(0)
      ->mutable_value()
      ->set_string_value("\xff");
  absl::Status status = CheckUtf8Strings(response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("subscriptions[1].predicate.filters[0].constraints[0].value.string_value "
                        "is not UTF-8"));
  response.mutable_subscriptions(0)->set_interface("\xc3");
  EXPECT_THAT(std::string(CheckUtf8Strings(response).message()),
              HasSubstr("answer's subscriptions[0].interface is not"));
  tandem::v1::MatchResponse match;
  match.add_matches()->add_interfaces("a");
  match.mutable_matches(0)->add_interfaces("\xed\xa0\x80");
  EXPECT_THAT(std::string(CheckUtf8Strings(match).message()),
              HasSubstr("matches[0].interfaces[1] is not"));
}

TEST(WireTest, EmptyBytesAreTheEmptyMessage) {
  tandem::v1::GetIndexInfoRequest info;
  EXPECT_TRUE(ParseRequest(grpc::ByteBuffer(), info).ok());
}

TEST(WireTest, SerializesWithinTheLimitAndRefusesPastIt) {
  tandem::v1::SearchResponse response;
  response.set_request_id("r");
  for (int i = 0; i < 100; ++i) {
    tandem::v1::Hit* hit = response.add_hits();
    hit->set_docid(i);
    hit->set_external_id("doc" + std::to_string(i));
  }
  const size_t size = response.ByteSizeLong();
  grpc::ByteBuffer out;
  ASSERT_TRUE(SerializeResponse(response, size, out).ok());
  tandem::v1::SearchResponse back;
  ASSERT_TRUE(back.ParseFromString(Flatten(out)));
  EXPECT_EQ(back.hits_size(), 100);
  EXPECT_EQ(back.hits(99).external_id(), "doc99");

  const absl::Status refused = SerializeResponse(response, size - 1, out);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()), HasSubstr(std::to_string(size) + " bytes"));
  EXPECT_EQ(out.Length(), 0u);
}

}  // namespace
}  // namespace tandem::server
