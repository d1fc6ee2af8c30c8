// tandem-broker's expert and tuning flags, defined in tandem_broker_expert.cc so that --help leaves
// them out and --helpfull lists them by owner: the fan-out to the shards, the nodes' health and
// discovery, request limits. Their defaults suit every broker; tandem_broker.cc reads them into
// BrokerOptions with the operator's flags.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "broker/scatter_gather.h"

// The fan-out to the shards.
ABSL_DECLARE_FLAG(absl::Duration, deadline_budget);
ABSL_DECLARE_FLAG(tandem::broker::HedgePolicy, hedge_after);
ABSL_DECLARE_FLAG(uint32_t, max_attempts);
ABSL_DECLARE_FLAG(uint32_t, replica_channels);

// The nodes' health and discovery.
ABSL_DECLARE_FLAG(absl::Duration, health_interval);
ABSL_DECLARE_FLAG(absl::Duration, health_timeout);
ABSL_DECLARE_FLAG(absl::Duration, refresh_interval);

// Request limits.
ABSL_DECLARE_FLAG(uint32_t, max_batch);

namespace tandem::tools {

// The groups above, as --helpfull lists them (base::AppInfo::groups).
std::vector<base::FlagGroup> BrokerExpertFlagGroups();

}  // namespace tandem::tools
