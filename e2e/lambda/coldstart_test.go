package lambda

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefake"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/internal/testenv"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// zippedSize is the size of the deployment package SAM builds for a
// bootstrap, measured with SAM's own zip code path (Python's zipfile,
// deflate at zlib's default level) from the project's virtualenv: Go's
// deflate compresses a few percent worse and would not be what is uploaded.
func zippedSize(tb testing.TB, path string) int64 {
	tb.Helper()
	python := filepath.Join(root(tb), ".venv", "bin", "python")
	script := `import io, sys, zipfile
b = io.BytesIO()
with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
    z.write(sys.argv[1], "bootstrap")
print(len(b.getvalue()))`
	out, err := exec.Command(python, "-c", script, path).Output()
	if err != nil {
		tb.Fatalf("zip %s with %s (run make venv): %v", path, python, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkColdStart measures, per function, the time from starting the
// runtime emulator with the function's bootstrap to the answer of its first
// invocation (process start, init with its one secrets read, the first
// request's AWS calls), and reports it as a ratio to a hello-world
// aws-lambda-go function built the same way. The four start in turn in
// each iteration, so the machine's noise falls on all of them alike. It
// also reports each function's deployment package size (linux/arm64, as
// deployed, zipped).
//
//	make bench-coldstart                 # BENCHTIME=5x by default
func BenchmarkColdStart(b *testing.B) {
	s := newSetup(b)
	ctx := context.Background()
	rie := rieBinary(b)
	ids := []string{helloID, receiverID, processorID, reconcilerID}
	boots, zipMB := map[string]string{}, map[string]float64{}
	for _, id := range ids {
		boots[id] = hostBootstrap(b, id)
		zipMB[id] = float64(zippedSize(b, bootstrap(b, id, "arm64"))) / 1e6
	}
	// Straight to the emulator: the recording proxy is for the tests.
	direct := map[string]string{"AWS_ENDPOINT_URL": testenv.Endpoint(b)}
	// The reconciler's first run lists from a Stripe API with no events.
	api := stripefake.New()
	b.Cleanup(api.Close)
	envs := map[string]map[string]string{
		receiverID:   s.env(b, receiverID, direct),
		processorID:  s.env(b, processorID, direct),
		reconcilerID: s.env(b, reconcilerID, map[string]string{"AWS_ENDPOINT_URL": direct["AWS_ENDPOINT_URL"], "STRIPE_API_BASE": api.URL}),
	}
	envs[helloID] = runtimeEnv(helloID, 3, testenv.Endpoint(b))
	q := s.stack.Queue("WebhookQueue")
	queueClient := &queue.Queue{Client: sqs.NewFromConfig(s.stack.AWS), URL: q.URL}

	// payload is each function's first request: a new signed delivery for
	// the receiver, a batch of one queued event for the processor.
	payload := func(id string) []byte {
		switch id {
		case receiverID:
			body, err := stripefixture.Build("invoice.paid", stripefixture.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return httpAPIEvent(b, body, signature.Sign(body, s.secret, time.Now()), false)
		case processorID:
			// A pointer to an event with no record: one claim attempt, the
			// processor's smallest complete answer.
			if err := queueClient.Send(ctx, event.Pointer{Provider: event.ProviderStripe, ID: "evt_bench_" + randomHex(8), Type: "invoice.paid", Created: time.Now().Unix()}); err != nil {
				b.Fatal(err)
			}
			return sqsEvent(b, q.ARN, receive(b, s, q.URL))
		}
		return []byte(`{}`)
	}

	check := func(id string, status int, body []byte, err error, e *emulator) {
		if err != nil {
			e.stop()
			b.Fatal(err)
		}
		var answer map[string]any
		if status != 200 || json.Unmarshal(body, &answer) != nil || answer["errorType"] != nil {
			e.stop()
			b.Fatalf("%s: got %d %s\n%s", id, status, body, e.out.String())
		}
	}

	total, warm := map[string]time.Duration{}, map[string]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, id := range ids {
			b.StopTimer()
			p := payload(id)
			b.StartTimer()
			start := time.Now()
			e, err := startEmulator(rie, boots[id], envs[id])
			if err != nil {
				b.Fatal(err)
			}
			status, body, err := e.invoke(ctx, p)
			elapsed := time.Since(start)
			check(id, status, body, err, e)
			total[id] += elapsed
			// The same kind of request again, on the warm function.
			b.StopTimer()
			p = payload(id)
			b.StartTimer()
			start = time.Now()
			status, body, err = e.invoke(ctx, p)
			warm[id] += time.Since(start)
			check(id, status, body, err, e)
			e.stop()
		}
	}
	b.StopTimer()
	ms := func(id string) float64 { return float64(total[id].Microseconds()) / 1000 / float64(b.N) }
	for _, id := range ids {
		name := strings.ToLower(strings.TrimSuffix(id, "Function"))
		b.ReportMetric(zipMB[id], name+"-zip-MB")
		b.ReportMetric(ms(id), name+"-ms")
		b.ReportMetric(float64(warm[id].Microseconds())/1000/float64(b.N), name+"-warm-ms")
		if id != helloID {
			b.ReportMetric(ms(id)/ms(helloID), name+"-x-hello")
		}
	}
	b.Logf("cold start to first answer, mean of %d: hello %.1f ms, receiver %.1f ms (%.2fx), processor %.1f ms (%.2fx), reconciler %.1f ms (%.2fx)",
		b.N, ms(helloID), ms(receiverID), ms(receiverID)/ms(helloID), ms(processorID), ms(processorID)/ms(helloID),
		ms(reconcilerID), ms(reconcilerID)/ms(helloID))
}
