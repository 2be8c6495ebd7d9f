// Package kafkamock runs kafka-mock-broker as a subprocess for Go tests: Start gives a
// broker on free ports that stops when the test ends.
//
// The command is the environment variable KAFKA_MOCK_BROKER, else kafka-mock-broker on
// the PATH.
package kafkamock

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Broker is a running kafka-mock-broker, as its ready file describes it.
type Broker struct {
	BootstrapServers string `json:"bootstrap_servers"`
	AdminURL         string `json:"admin_url"`
	PID              int    `json:"pid"`
	Brokers          []struct {
		NodeID int    `json:"node_id"`
		Host   string `json:"host"`
		Port   int    `json:"port"`
	} `json:"brokers"`

	ReadyFile string
	cmd       *exec.Cmd
	log       string
	exited    chan struct{}
	waitErr   error
}

// --8<-- [start:start]

// Start runs kafka-mock-broker with free ports and its extra args, waits until it serves,
// and stops it (SIGTERM) when the test and its subtests end.
func Start(t testing.TB, args ...string) *Broker {
	t.Helper()
	command := os.Getenv("KAFKA_MOCK_BROKER")
	if command == "" {
		command = "kafka-mock-broker"
	}
	dir := t.TempDir()
	b := &Broker{
		ReadyFile: filepath.Join(dir, "ready.json"),
		log:       filepath.Join(dir, "broker.log"),
		exited:    make(chan struct{}),
	}
	logFile, err := os.Create(b.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	b.cmd = exec.Command(command,
		append([]string{"--port", "0", "--admin-port", "0", "--ready-file", b.ReadyFile}, args...)...)
	b.cmd.Stdout, b.cmd.Stderr = logFile, logFile
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", command, err)
	}
	go func() { b.waitErr = b.cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() { b.Stop(t) })

	// The broker writes the ready file (by a rename: whole or absent) once its listeners
	// and its control plane serve.
	deadline := time.After(30 * time.Second)
	for {
		data, err := os.ReadFile(b.ReadyFile)
		if err == nil {
			if err := json.Unmarshal(data, b); err != nil {
				t.Fatalf("ready file %s: %v", b.ReadyFile, err)
			}
			return b
		}
		select {
		case <-b.exited:
			t.Fatalf("kafka-mock-broker exited (%v):\n%s", b.waitErr, b.Log())
		case <-deadline:
			t.Fatalf("kafka-mock-broker not ready in time:\n%s", b.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM (in-flight requests are answered, then exit status 0), waits, and
// kills the broker if it has not exited within 10 s. Stopping twice does nothing.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-b.exited:
	default:
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	if b.waitErr != nil {
		t.Errorf("kafka-mock-broker exited (%v):\n%s", b.waitErr, b.Log())
	}
}

// --8<-- [end:start]

// Wait waits for the broker to exit by itself (after POST /v1/shutdown) and returns its
// exit status.
func (b *Broker) Wait(timeout time.Duration) (int, error) {
	select {
	case <-b.exited:
		return b.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("kafka-mock-broker still running after %v", timeout)
	}
}

// Log is what the broker has logged so far.
func (b *Broker) Log() string {
	data, _ := os.ReadFile(b.log)
	return string(data)
}

// --8<-- [start:http]

// Call sends a request to the control plane and decodes its JSON answer into out (unless
// out is nil); an answer other than 2xx fails the test.
func (b *Broker) Call(t testing.TB, method, path, body string, out any) {
	t.Helper()
	request, err := http.NewRequest(method, b.AdminURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if response.StatusCode/100 != 2 {
		t.Fatalf("%s %s answered %d: %s", method, path, response.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// --8<-- [end:http]
