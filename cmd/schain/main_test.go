package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// asCLIEnv makes the test binary act as the schain command (so that tests
// can spawn `schain legacy serve` processes without building the binary).
const asCLIEnv = "SCHAIN_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
