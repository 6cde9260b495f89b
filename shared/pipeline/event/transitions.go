package event

// Condition is what a transition requires of the record beside the status
// it leaves.
type Condition string

// The conditions of Transitions.
const (
	// Unconditional: the status alone decides.
	Unconditional Condition = "always"
	// LeaseOwned: the writer's own claim holds the lease, whether or not
	// its time has run out (nobody has taken it over).
	LeaseOwned Condition = "lease_owned"
	// LeaseExpired: the lease's time has run out; its holder is presumed
	// gone.
	LeaseExpired Condition = "lease_expired"
)

// Transition is one allowed change of a record's status.
type Transition struct {
	// From is the status left, "" for a record that does not exist yet.
	From, To Status
	Cond     Condition
	// Write names the conditional write that makes it (shared/storage/store).
	Write string
	// Why it exists.
	Why string
}

// NoRecord is the From of a record's creation.
const NoRecord Status = ""

// Transitions is the status machine, whole: every change of a record's
// status the pipeline makes, each by one conditional write of shared/storage/store
// (whose test holds every write to exactly these), and nothing else. A
// write that finds the record in any other state changes nothing and says
// what it found.
var Transitions = []Transition{
	{NoRecord, StatusReceived, Unconditional, "Create", "the first delivery of a handled type is stored"},
	{NoRecord, StatusIgnored, Unconditional, "Create", "the first delivery of a type not handled is kept as the record of what arrived"},
	{NoRecord, StatusProcessed, Unconditional, "TwinWrite", "a Stripe thin event's commit records its snapshot twin, not yet received, as having had the pair's effect"},
	{StatusReceived, StatusProcessing, Unconditional, "Claim", "a worker claims a new event under a lease"},
	{StatusFailed, StatusProcessing, Unconditional, "Claim", "a worker claims a failed event again, on its retry"},
	{StatusDeadLettered, StatusProcessing, Unconditional, "Claim", "a redrive from the DLQ sends it back on purpose"},
	{StatusProcessing, StatusProcessing, LeaseExpired, "Claim", "the worker that held it is gone"},
	{StatusProcessing, StatusProcessed, LeaseOwned, "Complete", "effects and status commit in one transaction"},
	{StatusProcessing, StatusFailed, LeaseOwned, "Fail", "a retryable failure; the message comes back after a backoff"},
	{StatusProcessing, StatusFailedPermanent, LeaseOwned, "Fail", "a failure no retry can fix"},
	{StatusProcessing, StatusDeadLettered, LeaseOwned, "Fail", "the last receive the redrive policy allows failed"},
	{StatusFailedPermanent, StatusFailed, Unconditional, "Reopen", "an operator fixed the cause (replay --force)"},
	{StatusReceived, StatusDeadLettered, Unconditional, "Discard", "an operator dropped its dead-letter message: no sweep undoes it"},
	{StatusFailed, StatusDeadLettered, Unconditional, "Discard", "an operator dropped its dead-letter message: no sweep undoes it"},
	{StatusProcessing, StatusDeadLettered, LeaseExpired, "Discard", "an operator dropped its dead-letter message, no worker holding it"},
}

// Allowed reports whether Transitions holds from → to under cond.
func Allowed(from, to Status, cond Condition) bool {
	for _, t := range Transitions {
		if t.From == from && t.To == to && t.Cond == cond {
			return true
		}
	}
	return false
}

// Claimable reports whether a worker may claim a record in status st,
// whose lease (when processing) has expired or not: Transitions' claims.
func Claimable(st Status, leaseExpired bool) bool {
	cond := Unconditional
	if st == StatusProcessing {
		if !leaseExpired {
			return false
		}
		cond = LeaseExpired
	}
	return Allowed(st, StatusProcessing, cond)
}
