#include "rpc/exposure.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tandem::rpc {
namespace {

bool IsLoopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z, an IPv4 loopback address in IPv6 form.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace

bool IsLoopbackAddress(absl::string_view address) {
  // A Unix socket is reached through this host's file system (or its abstract namespace) only.
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  // gRPC's explicit schemes name the same addresses.
  for (absl::string_view scheme : {"ipv4:", "ipv6:", "dns:"}) {
    if (absl::ConsumePrefix(&address, scheme)) break;
  }
  absl::ConsumePrefix(&address, "///");  // dns:///host:port
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return false;
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // An empty host listens on every interface.
  if (host.empty()) return false;
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  // A numeric address, or a name: loopback only when every address it stands for is.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool loopback = true;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    loopback = loopback && IsLoopback(a->ai_addr);
  }
  ::freeaddrinfo(found);
  return loopback;
}

absl::Status CheckExposure(const Exposure& exposure, bool allow_insecure, LogSink log) {
  if (exposure.protected_ || IsLoopbackAddress(exposure.address)) return absl::OkStatus();
  if (!allow_insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve ", exposure.what, " on ", exposure.address,
        " without protection: other hosts can reach that address. Give ", exposure.protection,
        ", listen on a loopback address (127.0.0.1), or pass --allow-insecure to serve it "
        "unprotected on a network you trust"));
  }
  SinkOrStderr(std::move(log))(absl::StrCat(
      exposure.program, ": WARNING: serving ", exposure.what, " on ", exposure.address,
      " WITHOUT PROTECTION (--allow-insecure): anyone who can reach that address can use it. "
      "Give ",
      exposure.protection, " to protect it"));
  return absl::OkStatus();
}

}  // namespace tandem::rpc
