package kafkamock

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func client(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(b.BootstrapServers),
		kgo.AllowAutoTopicCreation(),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// --8<-- [start:quota]

// throttles records the largest throttle kgo was told of (kgo.HookBrokerThrottle).
type throttles struct {
	mu  sync.Mutex
	max time.Duration
}

func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.max = max(h.max, interval)
}

func (h *throttles) largest() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

func TestProducerOverItsQuotaIsThrottled(t *testing.T) {
	b := Start(t)
	b.Call(t, "POST", "/v1/quotas",
		`{"entity": {"client-id": "loader"}, "set": {"producer_byte_rate": 10240}}`, nil)
	seen := &throttles{}
	cl := client(t, b, kgo.ClientID("loader"), kgo.WithHooks(seen))
	value := make([]byte, 64*1024)
	rand.Read(value) // kgo compresses batches (snappy by default): zeros would shrink to nothing
	// 64 KB at a time against 10 KB/s: a few sends and the broker throttles.
	for sent := 0; sent < 20 && seen.largest() == 0; sent++ {
		record := &kgo.Record{Topic: "orders", Value: value}
		if err := cl.ProduceSync(context.Background(), record).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if seen.largest() <= 0 {
		t.Fatal("the producer was never throttled")
	}
	t.Logf("throttled for up to %v", seen.largest())
}

// --8<-- [end:quota]

// --8<-- [start:faults]

func TestFaultIsRetriedByTheProducer(t *testing.T) {
	b := Start(t)
	// The next Produce request of this client gets NOT_LEADER_OR_FOLLOWER (error 6).
	b.Call(t, "POST", "/v1/faults", `{"api_key": 0, "error_code": 6, "count": 1, "client_id": "retrying"}`, nil)
	// kgo refreshes metadata before retrying, at most every 5 s by default: sooner here.
	cl := client(t, b, kgo.ClientID("retrying"), kgo.MetadataMinAge(100*time.Millisecond))
	record := &kgo.Record{Topic: "payments", Value: []byte("x")}
	if err := cl.ProduceSync(context.Background(), record).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The recorded produce requests: the first met the fault, the retry succeeded.
	var produces []struct {
		ClientID string `json:"client_id"`
		Response struct {
			Responses []struct {
				PartitionResponses []struct {
					ErrorCode int16 `json:"error_code"`
				} `json:"partition_responses"`
			} `json:"responses"`
		} `json:"response"`
	}
	b.Call(t, "GET", "/v1/requests?api_key=0", "", &produces)
	var codes []int16
	for _, p := range produces {
		codes = append(codes, p.Response.Responses[0].PartitionResponses[0].ErrorCode)
	}
	if len(codes) != 2 || codes[0] != 6 || codes[1] != 0 {
		t.Fatalf("produce answers %v, want [6 0]", codes)
	}
	var faults []any
	if b.Call(t, "GET", "/v1/faults", "", &faults); len(faults) != 0 {
		t.Fatalf("faults left: %v", faults)
	}
}

func TestFaultReachesTheApplication(t *testing.T) {
	b := Start(t)
	// Not retriable: the produce fails with the error the broker was told to give.
	b.Call(t, "POST", "/v1/faults", `{"api_key": 0, "error_code": 29, "count": 1}`, nil)
	cl := client(t, b)
	record := &kgo.Record{Topic: "payments", Value: []byte("y")}
	err := cl.ProduceSync(context.Background(), record).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce error %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// --8<-- [end:faults]

// --8<-- [start:shutdown]

func TestShutdownOverHTTP(t *testing.T) {
	b := Start(t)
	var answer struct{ Stopping bool }
	b.Call(t, "POST", "/v1/shutdown", "", &answer)
	if status, err := b.Wait(10 * time.Second); err != nil || status != 0 || !answer.Stopping {
		t.Fatalf("exit status %d (%v), answer %+v:\n%s", status, err, answer, b.Log())
	}
	if _, err := os.Stat(b.ReadyFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the ready file is still there: %v", err)
	}
}

// --8<-- [end:shutdown]
