package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	awsemulator "github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
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

// BenchmarkColdStart measures, per function, under the Lambda runtime
// emulator and as a ratio to a hello-world aws-lambda-go function built the
// same way, in the same run:
//
//   - init: from the bootstrap's process start (see testdata/initclock) to
//     the runtime's first GET .../runtime/invocation/next, as a proxy in
//     front of the emulator's runtime API sees it (runtimeProxy). This is
//     the part of a cold start the function's own code and packages decide;
//     the median of the iterations (<fn>-init-ms, <fn>-init-x-hello).
//     Beside it, the CPU time the process had used by then
//     (<fn>-init-cpu-ms, <fn>-init-cpu-x-hello): the same init's own cost,
//     which waiting for a busy machine's CPU does not inflate.
//   - its package initialization's allocations, GODEBUG=inittrace=1 summed
//     over every package (<fn>-init-KB, <fn>-init-allocs).
//   - the first invocation's answer, from starting the emulator (<fn>-first-ms),
//     and the same request again on the warm function (<fn>-warm-ms).
//   - the deployment package's size (linux/arm64, as deployed, zipped).
//
// The four start in turn in each iteration, so the machine's noise falls on
// all of them alike.
//
//	make bench-coldstart                 # BENCHTIME=10x by default
func BenchmarkColdStart(b *testing.B) {
	s := newSetup(b)
	ctx := context.Background()
	rie := rieBinary(b)
	clock := initClockBinary(b)
	ids := []string{helloID, receiverID, processorID, reconcilerID}
	boots, zipMB := map[string]string{}, map[string]float64{}
	initKB, initAllocs := map[string]float64{}, map[string]float64{}
	for _, id := range ids {
		boots[id] = hostBootstrap(b, id)
		zipMB[id] = float64(zippedSize(b, bootstrap(b, id, "arm64"))) / 1e6
		size, allocs := packageInit(b, boots[id])
		initKB[id], initAllocs[id] = float64(size)/1024, float64(allocs)
	}
	// Straight to the emulators: the recording proxy is for the tests.
	direct := testenv.Endpoints(b).Vars()
	// The reconciler's first run lists from a Stripe API with no events.
	api := stripefake.New()
	b.Cleanup(api.Close)
	envs := map[string]map[string]string{
		receiverID:   s.env(b, receiverID, direct),
		processorID:  s.env(b, processorID, direct),
		reconcilerID: s.env(b, reconcilerID, mergeEnv(direct, map[string]string{"STRIPE_API_BASE": api.URL})),
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
			return httpAPIEvent(b, body, provider.SignStripe(body, s.secret, time.Now()), false)
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

	inits, cpus := map[string][]time.Duration{}, map[string][]time.Duration{}
	first, warm := map[string]time.Duration{}, map[string]time.Duration{}
	clockDir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, id := range ids {
			b.StopTimer()
			p := payload(id)
			runtimePort, err := awsemulator.FreePort()
			if err != nil {
				b.Fatal(err)
			}
			clockFile := filepath.Join(clockDir, fmt.Sprintf("%s-%d", id, i))
			proxy := startRuntimeProxy(b, runtimePort, clockFile)
			env := maps.Clone(envs[id])
			env["INITCLOCK_EXEC"], env["INITCLOCK_RUNTIME_API"], env["INITCLOCK_FILE"] = boots[id], proxy.addr, clockFile
			b.StartTimer()
			start := time.Now()
			e, err := startEmulatorOn(rie, clock, env, runtimePort)
			if err != nil {
				b.Fatal(err)
			}
			status, body, err := e.invoke(ctx, p)
			elapsed := time.Since(start)
			check(id, status, body, err, e)
			first[id] += elapsed
			// The same kind of request again, on the warm function.
			b.StopTimer()
			p = payload(id)
			b.StartTimer()
			start = time.Now()
			status, body, err = e.invoke(ctx, p)
			warm[id] += time.Since(start)
			check(id, status, body, err, e)
			e.stop()
			b.StopTimer()
			wall, cpu := initTime(b, proxy)
			inits[id], cpus[id] = append(inits[id], wall), append(cpus[id], cpu)
			proxy.close()
			b.StartTimer()
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	initMS := func(id string) float64 { return ms(median(inits[id])) }
	cpuMS := func(id string) float64 { return ms(median(cpus[id])) }
	for _, id := range ids {
		name := strings.ToLower(strings.TrimSuffix(id, "Function"))
		b.ReportMetric(zipMB[id], name+"-zip-MB")
		b.ReportMetric(initMS(id), name+"-init-ms")
		b.ReportMetric(cpuMS(id), name+"-init-cpu-ms")
		b.ReportMetric(initKB[id], name+"-init-KB")
		b.ReportMetric(initAllocs[id], name+"-init-allocs")
		b.ReportMetric(ms(first[id])/float64(b.N), name+"-first-ms")
		b.ReportMetric(ms(warm[id])/float64(b.N), name+"-warm-ms")
		if id != helloID {
			b.ReportMetric(initMS(id)/initMS(helloID), name+"-init-x-hello")
			b.ReportMetric(cpuMS(id)/cpuMS(helloID), name+"-init-cpu-x-hello")
		}
	}
	b.Logf(
		"init (process start to the first /next), median of %d: hello %.2f ms, receiver %.2f ms (%.2fx), processor %.2f ms (%.2fx), reconciler %.2f ms (%.2fx)",
		b.N,
		initMS(helloID),
		initMS(receiverID),
		initMS(receiverID)/initMS(helloID),
		initMS(processorID),
		initMS(processorID)/initMS(helloID),
		initMS(reconcilerID),
		initMS(reconcilerID)/initMS(helloID),
	)
	b.Logf("init CPU time, median of %d: hello %.2f ms, receiver %.2f ms (%.2fx), processor %.2f ms (%.2fx), reconciler %.2f ms (%.2fx)",
		b.N, cpuMS(helloID), cpuMS(receiverID), cpuMS(receiverID)/cpuMS(helloID), cpuMS(processorID), cpuMS(processorID)/cpuMS(helloID),
		cpuMS(reconcilerID), cpuMS(reconcilerID)/cpuMS(helloID))
	b.Logf(
		"package init (GODEBUG=inittrace=1): hello %.0f KB %.0f allocs, receiver %.0f KB %.0f allocs, processor %.0f KB %.0f allocs, reconciler %.0f KB %.0f allocs",
		initKB[helloID],
		initAllocs[helloID],
		initKB[receiverID],
		initAllocs[receiverID],
		initKB[processorID],
		initAllocs[processorID],
		initKB[reconcilerID],
		initAllocs[reconcilerID],
	)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mergeEnv returns a copy of a with b's variables added over it.
func mergeEnv(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
