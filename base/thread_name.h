// File: thread_name.h
//
// Names the calling thread (at most 15 characters are kept), so `top -H` and
// /proc/PID/task/*/comm tell Tandem's workers from gRPC's threads.
//
//   base::NameThread("tandem-cpu");
#pragma once

namespace tandem::base {

void NameThread(const char* name);

}  // namespace tandem::base
