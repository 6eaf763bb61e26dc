package errcode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/wire"
	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/certifier"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
	"github.com/s-chain/schain/vm/writer"
)

// apiPackages are the packages whose errors can reach the API: each of
// their exported Err* sentinels must carry an identity.
var apiPackages = map[string]string{
	"internal/wire": "wire", "pinning": "pinning", "txs": "txs", "vm/execute": "execute",
	"vm/mempool": "mempool", "vm/writer": "writer", "vm/certifier": "certifier",
}

// identified lists every sentinel of apiPackages (and chain's NotReady
// family), so that the test can check its identity; a new sentinel fails
// the test until it is listed here with an identity.
var identified = map[string]error{
	"wire.ErrTruncated": wire.ErrTruncated, "wire.ErrBadBool": wire.ErrBadBool,
	"wire.ErrStringTooLong": wire.ErrStringTooLong, "wire.ErrTrailing": wire.ErrTrailing,
	"pinning.ErrEmptySet": pinning.ErrEmptySet, "pinning.ErrDuplicateMember": pinning.ErrDuplicateMember,
	"pinning.ErrWeightOverflow": pinning.ErrWeightOverflow,
	"txs.ErrTooLarge":           txs.ErrTooLarge, "txs.ErrTruncated": txs.ErrTruncated, "txs.ErrTrailingBytes": txs.ErrTrailingBytes,
	"txs.ErrUnknownVersion": txs.ErrUnknownVersion, "txs.ErrUnknownKind": txs.ErrUnknownKind, "txs.ErrNoEntries": txs.ErrNoEntries,
	"txs.ErrTooManyEntries": txs.ErrTooManyEntries, "txs.ErrBadRange": txs.ErrBadRange, "txs.ErrBadBucket": txs.ErrBadBucket,
	"txs.ErrBadKey": txs.ErrBadKey, "txs.ErrZeroCount": txs.ErrZeroCount, "txs.ErrCountTooLarge": txs.ErrCountTooLarge,
	"txs.ErrTooManyChunks": txs.ErrTooManyChunks, "txs.ErrChunkOutsideBucket": txs.ErrChunkOutsideBucket,
	"txs.ErrZeroChunkSize": txs.ErrZeroChunkSize, "txs.ErrDuplicateChunk": txs.ErrDuplicateChunk,
	"txs.ErrSizeMismatch": txs.ErrSizeMismatch, "txs.ErrBadTombstone": txs.ErrBadTombstone, "txs.ErrBadBool": txs.ErrBadBool,
	"txs.ErrDuplicateEntry": txs.ErrDuplicateEntry, "txs.ErrBadSignature": txs.ErrBadSignature,
	"txs.ErrNotCanonical": txs.ErrNotCanonical, "txs.ErrHeartbeatFingerprint": txs.ErrHeartbeatFingerprint, "txs.ErrHeartbeatBlockHeight": txs.ErrHeartbeatBlockHeight,
	"execute.ErrWrongNetwork": execute.ErrWrongNetwork, "execute.ErrWrongChain": execute.ErrWrongChain,
	"execute.ErrWrongPChainHeight": execute.ErrWrongPChainHeight, "execute.ErrWrongFingerprint": execute.ErrWrongFingerprint,
	"execute.ErrNotOwner": execute.ErrNotOwner, "execute.ErrUnknownSigner": execute.ErrUnknownSigner,
	"execute.ErrReplay": execute.ErrReplay, "execute.ErrCounterOverflow": execute.ErrCounterOverflow,
	"execute.ErrUnallocatedChunk": execute.ErrUnallocatedChunk, "execute.ErrNoMembership": execute.ErrNoMembership,
	"execute.ErrExpired": execute.ErrExpired, "execute.ErrNotYetValid": execute.ErrNotYetValid, "execute.ErrWrongBlockHeight": execute.ErrWrongBlockHeight,
	"execute.ErrRoundBackward": execute.ErrRoundBackward, "execute.ErrWrongRound": execute.ErrWrongRound,
	"execute.ErrDuplicateHeartbeat": execute.ErrDuplicateHeartbeat,
	"txs.ErrBadHolder":              txs.ErrBadHolder, "txs.ErrBadLease": txs.ErrBadLease,
	"execute.ErrLeaseHeld": execute.ErrLeaseHeld, "execute.ErrLeaseLost": execute.ErrLeaseLost,
	"execute.ErrNotActivated": execute.ErrNotActivated, "execute.ErrSuperseded": execute.ErrSuperseded,
	"execute.ErrPreconditionFailed": execute.ErrPreconditionFailed, "execute.ErrChunkInUse": execute.ErrChunkInUse,
	"execute.ErrChunkReleased": execute.ErrChunkReleased, "execute.ErrNotReleased": execute.ErrNotReleased,
	"txs.ErrBadCondition": txs.ErrBadCondition, "txs.ErrAttributesTooLarge": txs.ErrAttributesTooLarge,
	"mempool.ErrFull": mempool.ErrFull, "mempool.ErrDuplicate": mempool.ErrDuplicate,
	"writer.ErrShuttingDown": writer.ErrShuttingDown, "writer.ErrMembershipOpening": writer.ErrMembershipOpening,
	"writer.ErrOutsideWindow": writer.ErrOutsideWindow, "writer.ErrStale": writer.ErrStale, "writer.ErrLookupRefused": writer.ErrLookupRefused,
	"writer.ErrUnknownMembership": writer.ErrUnknownMembership, "writer.ErrPoolRefill": writer.ErrPoolRefill,
	"writer.ErrInvalidPooled": writer.ErrInvalidPooled, "writer.ErrWaitTimeout": writer.ErrWaitTimeout,
	"chain.ErrNoMembership": chain.ErrNoMembership, "chain.ErrNoValidators": chain.ErrNoValidators,
	"certifier.ErrNotFinal": certifier.ErrNotFinal, "certifier.ErrOff": certifier.ErrOff, "certifier.ErrStalled": certifier.ErrStalled,
}

// TestEveryAPIErrorHasAnIdentity: every exported sentinel of the packages
// whose errors reach the API has a code and a reason of its own, taken from
// the error (never from its message).
func TestEveryAPIErrorHasAnIdentity(t *testing.T) {
	root := filepath.Join("..")
	var declared []string
	for dir, pkg := range apiPackages {
		fset := token.NewFileSet()
		entries, err := os.ReadDir(filepath.Join(root, dir))
		require.NoError(t, err)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, e.Name()), nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
							declared = append(declared, pkg+"."+n.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(declared)
	require.NotEmpty(t, declared)
	for _, name := range declared {
		err, ok := identified[name]
		require.True(t, ok, "%s is not listed in this test: give it an identity (errcode.New) and list it", name)
		code, reason := errcode.Of(err)
		require.NotEqual(t, errcode.Unknown, code, "%s has no code", name)
		require.NotEmpty(t, reason, "%s has no reason", name)
	}
	reasons := map[string]string{}
	for name, err := range identified {
		_, reason := errcode.Of(err)
		if other, dup := reasons[reason]; dup && !sameError(identified[other], err) {
			t.Errorf("%s and %s share the reason %q", name, other, reason)
		}
		reasons[reason] = name
	}
}

// sameError: aliases (txs.ErrTruncated is wire.ErrTruncated) share their
// identity on purpose.
func sameError(a, b error) bool { return a == b }

// TestClasses: an identified error matches its code's class, and a code
// outside the API falls into Unknown's.
func TestClasses(t *testing.T) {
	require.ErrorIs(t, execute.ErrReplay, errcode.Rejected.Class())
	require.ErrorIs(t, chain.ErrNoMembership, chain.ErrNotReady)
	require.ErrorIs(t, &execute.NotOwnerError{}, errcode.NotOwner.Class())
	require.Equal(t, errcode.Unknown.Class(), errcode.ParseError.Class())
	require.Equal(t, "method_not_found", errcode.MethodNotFound.Name())
	require.Equal(t, "code_7", errcode.Code(7).Name())
	code, reason := errcode.Of(&execute.NotOwnerError{})
	require.Equal(t, errcode.NotOwner, code)
	require.Equal(t, "not_owner", reason)
}
