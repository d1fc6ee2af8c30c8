// File: serve_main.h
//
// What tandem-server and tandem-broker share around their service: the process set-up that must
// happen before any thread exists, the line that tells a supervisor (and the end-to-end tests)
// where they listen, and the line that opens the drain.
//
//   int main(int argc, char** argv) {
//     const sigset_t stop_signals = tools::PrepareToServe({SIGTERM, SIGINT});
//     ...  // parse the flags, create the service
//     tools::AnnounceListening("tandem-broker", broker->address(), broker->metrics_address());
//     int signal_number = 0;
//     sigwait(&stop_signals, &signal_number);
//     tools::AnnounceDrain("tandem-broker", signal_number, drain_timeout);
//     broker->Drain(drain_timeout);
//   }
#pragma once

#include <signal.h>

#include <initializer_list>
#include <string>

#include "absl/time/time.h"

namespace tandem::tools {

// Restores the default action of SIGTERM and SIGINT, ignores SIGPIPE, blocks `stop_signals` in the
// calling thread and turns off absl::Mutex deadlock detection. Returns the blocked set, for
// sigwait. Call it first in main(), before any thread exists.
sigset_t PrepareToServe(std::initializer_list<int> stop_signals);

// "NAME listening on ADDRESS (metrics on ADDRESS)", or "(metrics off)" where `metrics_address` is
// empty, on stdout, flushed at once: the tests and scripts wait for this line.
void AnnounceListening(const char* name, const std::string& address,
                       const std::string& metrics_address);

// "NAME: SIGNAL received; draining (up to TIMEOUT)" on stderr.
void AnnounceDrain(const char* name, int signal_number, absl::Duration timeout);

}  // namespace tandem::tools
