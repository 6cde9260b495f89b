package redeliver

import "github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"

// Metric names of a sweep, on the reconciler run's log line (namespace
// metrics.Namespace, dimension function=reconciler) only when GitHub hooks
// are configured.
const (
	MetricDeliveries        = "github_deliveries_listed"
	MetricRedelivered       = "github_redelivered"
	MetricRedeliveryRefused = "github_redelivery_refused"
	// MetricRedeliveriesScheduled counts the failed deliveries found
	// missing, or stored without their payload.
	MetricRedeliveriesScheduled = "github_redeliveries_scheduled"
	// MetricRedeliveryBacklog counts the redeliveries due that the budget
	// left for a later run: GitHubRedeliveryBacklogAlarm.
	MetricRedeliveryBacklog = "github_redelivery_backlog"
	// MetricRedeliveriesAbandoned counts the deliveries given up after
	// their last ask: GitHubRedeliveriesAbandonedAlarm.
	MetricRedeliveriesAbandoned = "github_redeliveries_abandoned"
	// MetricRejected counts the failed deliveries the receiver refused on
	// purpose, left alone.
	MetricRejected = "github_rejected"
	// MetricCheckpointAge is how far behind the least advanced hook's
	// checkpoint is: GitHubCheckpointStalledAlarm.
	MetricCheckpointAge = "github_checkpoint_age"
	MetricThrottled     = "github_throttled"
)

// Metrics returns the sweep's metrics, in the order the run's line lists
// them.
func (res Result) Metrics() []metrics.Metric {
	return []metrics.Metric{
		metrics.C(MetricDeliveries, res.Deliveries),
		metrics.C(MetricRedelivered, res.Redelivered),
		metrics.C(MetricRedeliveryRefused, res.Refused),
		metrics.C(MetricRedeliveriesScheduled, res.Scheduled),
		metrics.C(MetricRedeliveryBacklog, res.Backlog),
		metrics.C(MetricRedeliveriesAbandoned, res.Abandoned),
		metrics.C(MetricRejected, res.Rejected),
		{Name: MetricCheckpointAge, Unit: metrics.Seconds, Value: res.CheckpointAge.Seconds()},
		metrics.C(MetricThrottled, res.Throttled),
	}
}
