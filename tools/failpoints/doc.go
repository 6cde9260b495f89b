// Package failpoints enumerates the pipeline's failure points and proves,
// for each, that no event is lost, applied twice or left where nobody
// looks.
//
// Nothing lists the failure points by hand. Each world (a provider, with
// its provider's retry policy: Worlds) first runs one event through the real
// pipeline without a fault: the three functions built by package boot
// from the template's environment, in process, each with its AWS clients
// and its outside calls (a provider's API, the team's application) behind
// a proxy of its own (package faultproxy), against the AWS emulator. The
// proxies record every call, in order, by site (the function, the service
// and the call's shape: operation, table or queue, kind of item, the
// status an update sets). Every site is a failure point: a call added to
// the code is a new one, with no edit here.
//
// Each point is then run with each fault kind that applies (Kinds: the
// call fails before taking effect, takes effect with its answer lost, or
// the process is killed right after it), and pairs of faults on one
// event's path: a single fault's case records the calls it made after
// the fault, each a candidate second fault; a fixed seed samples them.
// Each single fault is then run again with a second event of the same
// object in flight (Options.Second, second.go): its courier delivers it as
// the fault strikes, a newer state of the object for Stripe, so that the
// mirror's ordering guard meets every fault.
// After the fault the world goes on as it does for that provider (its
// courier's retries, or GitHub's redeliveries on the reconciler's request;
// the event source's redeliveries, the stuck sweep and the reconciler on
// their schedules), Scale times faster than its own clock, until the
// events are settled and the world quiet, or Limit. Then the invariants
// are checked, for each event and the object's mirror (env.check: what
// observe reads of an event, judge decides on, a plain function).
//
// Each case has its own tables and queues and its own stand-ins, so cases
// run side by side (Options.Workers), and one function runs one
// invocation at a time, as one Lambda instance does: a killed process is
// its invocation's alone.
package failpoints
