package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cli"
)

// asCLIEnv makes the test binary act as the schain command (so that tests
// can spawn `schain-dev legacy serve` processes without building the binary).
const asCLIEnv = "SCHAIN_TEST_AS_CLI"

func TestMain(m *testing.M) {
	cli.Develop(devHooks())
	if os.Getenv(asCLIEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// Exit codes of the command line (operator/cli).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotReady = 6
)

// run executes the command line in-process and returns exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := cli.Execute(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// requireOneDocument requires out to be exactly one JSON object or list.
func requireOneDocument(t *testing.T, out string) json.RawMessage {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc json.RawMessage
	require.NoError(t, dec.Decode(&doc), "stdout is not JSON: %q", out)
	var extra json.RawMessage
	require.ErrorIs(t, dec.Decode(&extra), io.EOF, "stdout holds more than one JSON document: %q", out)
	require.Contains(t, "{[", string(doc[:1]), "not an object or a list: %s", doc)
	return doc
}
