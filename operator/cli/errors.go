package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/finality"
)

// Exit codes. exitCodes says what each means; the root command's help and
// docs/operating/operations.md list them from it (a test keeps all three in step).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitRejected    = 3
	exitNotOwner    = 4
	exitUnavailable = 5
	// exitNotReady: a shadow's cutover gate stayed closed, or a deployment
	// waits for its nodes.
	exitNotReady     = 6
	exitUnauthorized = 7
	// exitRefused: a validators or deploy command refused before issuing
	// anything (a precondition failed: see the line).
	exitRefused = 8
	// exitNotVerified: a finality certificate or its proof did not check
	// out (schain verify).
	exitNotVerified = 9
	// exitForbidden: the write token's scope does not cover the method or
	// the range.
	exitForbidden = 10
)

// exitCodes documents every exit code, in order.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "ok"},
	{exitError, "error (a node-side failure, a wrong chain, anything not below)"},
	{exitUsage, "usage: a mistake in the command line, or parameters the node refused as invalid"},
	{exitRejected, "rejected by the chain's rules, or a P-chain transaction dropped (retrying will not help)"},
	{exitNotOwner, "not owner: the range's owner is not among --rpc"},
	{exitUnavailable, "unavailable: not ready, mempool full, too many requests, unreachable, timed out (retry later)"},
	{exitNotReady, "not ready: the cutover gate is not READY (shadow run, seaweedfs shadow), or a deployment waits for its nodes (deploy: configure them, run it again)"},
	{exitUnauthorized, "unauthorized: no, wrong or revoked write token"},
	{exitRefused, "refused by a precondition of a validators or deploy command; nothing was issued"},
	{exitNotVerified, "not verified: a finality certificate or its proof does not check out against the P-chain's validator set (schain verify)"},
	{exitForbidden, "forbidden: the write token's scope does not cover the method or the range (the line names which)"},
}

// exitCodesHelp is the exit codes' part of the root command's help.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", c.code, c.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// UsageError marks a mistake in the command line itself.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// failure is an error as the user sees it: one line with a hint, and the
// same facts for --json.
type failure struct {
	Name     string          `json:"name"`
	Code     int             `json:"code,omitempty"`
	Message  string          `json:"message"`
	Data     json.RawMessage `json:"data,omitempty"`
	Line     string          `json:"line"`
	ExitCode int             `json:"exitCode"`
}

// describe names the error's class first (the API code's name when a node
// answered one) and says what to do about it.
func describe(err error, g *Globals) failure {
	f := failure{Name: "error", Message: err.Error(), ExitCode: exitError}
	if e, ok := client.AsError(err); ok {
		f.Name, f.Code, f.Data = e.Name(), e.Code, e.Data
	}
	var usage UsageError
	switch {
	case errors.As(err, &usage):
		f.Name, f.ExitCode = "usage", exitUsage
		cmd := g.command
		if cmd == "" {
			cmd = "schain"
		}
		f.Line = fmt.Sprintf("usage: %v (see %s --help)", err, cmd)
		return f
	case isVerifyError(err):
		f.Name, f.ExitCode = "not_verified", exitNotVerified
		_, reason := errcode.Of(err)
		f.Line = fmt.Sprintf("not verified (%s): %v", reason, err)
	case errors.Is(err, finality.ErrNotFinal):
		f.Name, f.ExitCode = "not_final", exitUnavailable
		f.Line = fmt.Sprintf("not final: %v", err)
	case isValidatorsError(err):
		f.Name, f.Line, f.ExitCode, _ = validatorsFailure(err)
	case errors.Is(err, client.ErrTxRejected):
		f.Name, f.ExitCode = "rejected", exitRejected
		f.Line = fmt.Sprintf("rejected: %v", err)
	case errors.Is(err, client.ErrNotOwner):
		f.ExitCode = exitNotOwner
		f.Line = notOwnerLine(err, g)
	case f.Code != 0:
		f.Line, f.ExitCode = apiErrorLine(err, f)
	case errors.Is(err, ErrGateClosed):
		f.Name, f.ExitCode = "not_ready_for_cutover", exitNotReady
		f.Line = "shadow: the cutover gate is not READY (see summary.txt and report.json for the evidence)"
	case errors.Is(err, errSomeNodesFailed):
		f.Name, f.ExitCode = "unavailable", exitUnavailable
		f.Line = fmt.Sprintf("unavailable: %v (see the error lines above)", err)
	case errors.Is(err, client.ErrWrongChain):
		f.Name = "wrong_chain"
		f.Line = fmt.Sprintf("wrong chain: %v (check --chain)", err)
	case errors.Is(err, client.ErrTransport):
		f.Name, f.ExitCode = "unreachable", exitUnavailable
		f.Line = fmt.Sprintf("unreachable: %v (is a node running at --rpc, and is --chain right?)", err)
	case errors.Is(err, client.ErrMalformedResponse), errors.Is(err, client.ErrResponseTooLarge):
		f.Name = "malformed_response"
		f.Line = fmt.Sprintf("malformed response: %v (is --rpc an S-Chain node of a compatible version?)", err)
	case errors.Is(err, context.DeadlineExceeded):
		f.Name, f.ExitCode = "deadline", exitUnavailable
		f.Line = fmt.Sprintf("deadline: %v (raise --timeout or retry later)", err)
	case errors.Is(err, context.Canceled):
		f.Name, f.ExitCode = "canceled", exitUnavailable
		f.Line = "canceled: " + err.Error()
	default:
		f.Line = "error: " + err.Error()
	}
	// Retries ran out of time: say so, but name what was retried.
	if errors.Is(err, context.DeadlineExceeded) && f.Name != "deadline" {
		f.Line = fmt.Sprintf("gave up within --timeout %v: %s", g.Timeout, f.Line)
		f.ExitCode = exitUnavailable
	}
	return f
}

func notOwnerLine(err error, g *Globals) string {
	hint, _ := client.IsNotOwner(err)
	advice := "(the client follows this automatically when several --rpc URIs are given)"
	if len(g.RPC) > 1 {
		advice = "(add that node's URI to --rpc)"
	}
	return fmt.Sprintf("not owner: range %q is owned by %s at P-chain height %d %s", hint.Range, hint.Owner, hint.PChainHeight, advice)
}

// apiErrorLine renders the node's error codes other than NotOwner.
func apiErrorLine(err error, f failure) (string, int) {
	e, _ := client.AsError(err)
	name := strings.ReplaceAll(f.Name, "_", " ")
	switch e.Code {
	case api.CodeNotReady:
		return fmt.Sprintf("%s: %s (the chain has not opened its first membership, has no usable validator, or the range moves to this node at the next block; retry later)", name, e.Message), exitUnavailable
	case api.CodeMempoolFull:
		d, _ := client.IsMempoolFull(err)
		return fmt.Sprintf("%s: %s (the owner is pushing back; retry after %d ms)", name, e.Message, d.RetryAfterMs), exitUnavailable
	case api.CodeRejected:
		d, _ := client.IsRejected(err)
		return fmt.Sprintf("%s: %s (rule %q: retrying will not help)", name, e.Message, d.Reason), exitRejected
	case api.CodeInvalidParams:
		return fmt.Sprintf("%s: %s (check the arguments)", name, e.Message), exitUsage
	case api.CodeTimeout:
		return fmt.Sprintf("%s: %s (the transaction may still be accepted: check with schain receipt TXID)", name, e.Message), exitUnavailable
	case api.CodeUnauthorized:
		d, _ := client.IsUnauthorized(err)
		hint := "the node does not accept this token: check it, it may have been revoked"
		switch d.Reason {
		case api.ReasonMissing:
			hint = "give the write token with --token-file, --token or $" + TokenEnv
		case api.ReasonNoTokenConfigured:
			hint = "the node's chain config lists no writeTokens: see README, Access control"
		}
		return fmt.Sprintf("%s: %s (%s)", name, e.Message, hint), exitUnauthorized
	case api.CodeForbidden:
		d, _ := client.IsForbidden(err)
		missing := "method " + d.Method
		if d.Reason == api.ScopeRange {
			missing = "range " + d.Range
		}
		return fmt.Sprintf("%s: %s (token %q lacks %s: widen its ranges or methods in the nodes' chain config, or use a token that has it)", name, e.Message, d.Token, missing), exitForbidden
	case api.CodeTooManyRequests:
		d, _ := client.IsTooManyRequests(err)
		return fmt.Sprintf("%s: %s (retry after %d ms)", name, e.Message, d.RetryAfterMs), exitUnavailable
	case api.CodeRequestTooLarge:
		return fmt.Sprintf("%s: %s (send less per request)", name, e.Message), exitUsage
	case api.CodeLeaseHeld:
		return fmt.Sprintf("%s: %s (retry once it expires or is released)", name, e.Message), exitUnavailable
	case api.CodeLeaseLost:
		return fmt.Sprintf("%s: %s (stop using its token; acquire the lease again)", name, e.Message), exitRejected
	default:
		return fmt.Sprintf("%s: %s (node-side failure; see the node's log)", name, e.Message), exitError
	}
}
