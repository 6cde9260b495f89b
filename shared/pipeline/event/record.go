package event

import (
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

// Record is an event as the store keeps it: the envelope, where the event
// stands, and the raw payload it arrived with.
type Record struct {
	Provider   string
	ID         string
	Type       string
	Created    int64 // the provider's creation time, Unix seconds
	Livemode   bool
	APIVersion string
	Account    string
	ObjectID   string
	ObjectType string
	// Customer is the customer the event's object concerns (Envelope's
	// Customer): the customer itself for a customer's events.
	Customer string

	Status   Status
	StatusAt time.Time
	Source   Source
	// Outcome is what processing did (outcome.Applied, outcome.Superseded,
	// outcome.Backfilled), or outcome.Ignored for a type this deployment
	// does not handle.
	Outcome outcome.Outcome

	// Payload is the raw body exactly as signed. PayloadOmitted marks a
	// record whose payload was too large to store even compressed: the
	// processor fetches the event from the provider's API instead.
	Payload        []byte
	PayloadHash    string // hex SHA-256 of the raw body
	PayloadOmitted bool
	// PayloadErased marks a settled record whose payload an operator
	// erased (inboxctl erase): the record stays, so a duplicate is still
	// recognised.
	PayloadErased bool

	ReceivedAt  time.Time
	ClaimedAt   time.Time
	ProcessedAt time.Time
	Attempts    int
	LeaseOwner  string
	LeaseUntil  time.Time
	LastError   string
	LastErrorAt time.Time
	// RetryAt is when a failed record's message comes back from its
	// backoff; zero when none is pending.
	RetryAt time.Time
	// MirrorKey is the mirrored object the event touched, if any.
	MirrorKey string
	// DiscardedAt and DiscardReason record an operator's decision to drop
	// the event's dead-letter message (inboxctl dlq discard): never
	// silent, the record says when and why.
	DiscardedAt   time.Time
	DiscardReason string
}

// NewRecord builds the record of a freshly received event.
func NewRecord(provider string, env Envelope, payload []byte, hash string, source Source, status Status, now time.Time) Record {
	return Record{
		Provider:    provider,
		ID:          env.ID,
		Type:        env.Type,
		Created:     env.Created,
		Livemode:    env.Livemode,
		APIVersion:  env.APIVersion,
		Account:     env.Account,
		ObjectID:    env.ObjectID,
		ObjectType:  env.ObjectType,
		Customer:    env.Customer,
		Status:      status,
		StatusAt:    now,
		Source:      source,
		Payload:     payload,
		PayloadHash: hash,
		ReceivedAt:  now,
	}
}

// Pointer is the queue message for an event: a small reference to the record,
// which stays the single source of truth. SQS bills per 64 KB, and a pointer
// can never disagree with the record it points to.
type Pointer struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Created  int64  `json:"created"`
	// ObjectID lets the processor keep events of one object in order within
	// a batch while running different objects concurrently.
	ObjectID string `json:"object_id,omitempty"`
}

// PointerTo returns the queue message for r.
func PointerTo(r Record) Pointer {
	return Pointer{Provider: r.Provider, ID: r.ID, Type: r.Type, Created: r.Created, ObjectID: r.ObjectID}
}
