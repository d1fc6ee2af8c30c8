// tandem-broker's expert and tuning flags (tandem_broker_expert.h), grouped by the part of the
// broker that owns them; --helpfull lists them under these groups' titles.
#include "tools/tandem_broker_expert.h"

#include "absl/flags/flag.h"

// The fan-out to the shards.
ABSL_FLAG(absl::Duration, deadline_budget, absl::Milliseconds(2),
          "Taken off a call's deadline for the shards: the broker's own time to merge and answer.");
ABSL_FLAG(tandem::broker::HedgePolicy, hedge_after, tandem::broker::HedgePolicy{},
          "When a shard that has not answered gets the query on a second replica: auto (the "
          "shard's p95 over its recent answers), a duration, or off.");
ABSL_FLAG(uint32_t, max_attempts, 3, "Calls to one shard for one query: first, hedge, retries.");
ABSL_FLAG(uint32_t, replica_channels, 4,
          "Connections to each node; the broker's calls to it are spread over them.");

// The nodes' health and discovery.
ABSL_FLAG(absl::Duration, health_interval, absl::Seconds(1),
          "How often every node is health-checked.");
ABSL_FLAG(absl::Duration, health_timeout, absl::Milliseconds(500), "Deadline of one health check.");
ABSL_FLAG(absl::Duration, refresh_interval, absl::Seconds(10),
          "How often host names are resolved again and --replicas-file is looked at.");

// Request limits.
ABSL_FLAG(uint32_t, max_batch, 1024, "Most queries in one SearchBatch call.");

namespace tandem::tools {

std::vector<base::FlagGroup> BrokerExpertFlagGroups() {
  return {
      {.title = "Fan-out to the shards",
       .flags = {"hedge-after", "max-attempts", "deadline-budget", "replica-channels"}},
      {.title = "Node health and discovery",
       .flags = {"health-interval", "health-timeout", "refresh-interval"}},
      {.title = "Request limits", .flags = {"max-batch"}},
  };
}

}  // namespace tandem::tools
