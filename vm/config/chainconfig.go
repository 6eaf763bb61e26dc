package config

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrBadChainConfig wraps every problem found in a node's chain config.
var ErrBadChainConfig = errors.New("config: invalid chain config")

// Bounds of the chain config's limits.
const (
	minRequestBytes = 4 << 10
	maxRequestBytes = 64 << 20
	maxPendingBound = 1 << 20
	maxWaitBoundMs  = 10 * 60 * 1000
	maxTokenNameLen = 64
	minProfileMs    = 1000
	maxProfileMs    = 3600 * 1000
	maxProfileFiles = 10000
)

// ChainConfig is one node's configuration of its S-Chain API: who may make
// the node sign (write tokens) and the abuse limits. Unlike the genesis it is
// not consensus-relevant and may differ between nodes. The node reads it
// from <chain-config-dir>/<chainID>/config.json (or --chain-configs-content)
// when the chain starts: revoking a token is removing its entry and
// restarting the node.
type ChainConfig struct {
	// WriteTokens may call the methods that make this node sign (allocate,
	// putManifest). With none, those methods are disabled; read methods are
	// always open.
	WriteTokens []WriteToken `json:"writeTokens"`
	// MaxRequestBytes bounds one HTTP request body; a larger one is answered
	// with HTTP 413 and api.CodeRequestTooLarge before it is decoded.
	MaxRequestBytes int64 `json:"maxRequestBytes"`
	// MaxPendingPerToken bounds the write requests of one token in flight
	// (received and not yet answered, waits included); more are answered
	// with api.CodeTooManyRequests, so that one client cannot starve another.
	MaxPendingPerToken int `json:"maxPendingPerToken"`
	// MaxWaitMs bounds how long a "wait" write request blocks: the wait is
	// min(request waitMs, maxWaitMs, genesis maxWaitMs).
	MaxWaitMs uint64 `json:"maxWaitMs"`
	// CertificateStallMs is how long an accepted block may wait for its
	// finality certificate before the node's health check fails (the
	// validators whose signatures are missing are named).
	CertificateStallMs uint64 `json:"certificateStallMs"`
	// Certificates: this node collects finality certificates (the
	// default). With false it only signs what it accepted when asked:
	// receipts on it are never final, and wait "final" is refused
	// (certificates_off). It exists to measure what certificates cost.
	Certificates bool `json:"certificates"`
	// CPUProfileDir, if set, makes the plugin write CPU profiles of itself
	// there, one every CPUProfileEveryMs, keeping the newest
	// CPUProfileMaxFiles: the plugin's counterpart of the node's
	// --profile-continuous-enabled, whose profiles cover the node process
	// only. Off (empty) by default: profiling costs a few percent of CPU.
	CPUProfileDir      string `json:"cpuProfileDir,omitempty"`
	CPUProfileEveryMs  uint64 `json:"cpuProfileEveryMs"`
	CPUProfileMaxFiles int    `json:"cpuProfileMaxFiles"`
	// DirectAPI, if set ("host:port", port 0 for any free one), makes the
	// plugin also serve the API itself at http://host:port/ext/bc/<chainID>,
	// behind the same tokens and limits. A request there skips the node's
	// HTTP server and the HTTP-over-gRPC hop into the plugin, most of what
	// a pooled allocation costs. getNode tells clients the URI
	// (directURI). The host must be an address clients can reach (not
	// 0.0.0.0 or ::), since it is the one advertised. Off by default: it is
	// one more port to open and firewall.
	DirectAPI string `json:"directAPI,omitempty"`
	// PipelineIntervalMs paces blocks this node builds on a block that is
	// still processing: no sooner than this after that block's time, so
	// that under load each block carries what arrived meanwhile instead of
	// a few requests (the per-block cost dominates). 0 builds at once.
	// Nothing waits when the last block is accepted.
	PipelineIntervalMs uint64 `json:"pipelineIntervalMs"`
	// Upgrades schedules changes of execution the genesis leaves unset
	// (Genesis.Upgrades, Upgrades.Overlay): the one field of this file that
	// is a consensus rule, so every validator must carry the same values
	// before the chain reaches them (docs/operating/configuration.md, Upgrades).
	Upgrades Upgrades `json:"upgrades"`
}

// WriteToken is one named bearer token, stored as the SHA-256 of the token
// (64 hex digits) so the config file holds no secret. `schain token new`
// prints a fresh token and its entry.
type WriteToken struct {
	// Name identifies the token's holder in logs and metrics (1..64 of
	// [A-Za-z0-9._-]). The token itself is never logged.
	Name string `json:"name"`
	// SHA256 is hex(SHA-256(token)).
	SHA256 string `json:"sha256"`
	// Ranges are the range patterns the token may write (a manifest's
	// range is its bucket): "a/b" that range, "a/*" every range below a/,
	// "*" every range; a "*" never stands for a guarded segment
	// (GuardedSegments), which a pattern must name ("prod-eu1/volumes",
	// "prod-eu1/keys/*", "prod-eu1/floor/*"). See Scope.
	Ranges []string `json:"ranges,omitempty"`
	// Methods are the write methods the token may call, by their JSON-RPC
	// names ("allocate", "allocateBatch", "putManifest"; "*" for every
	// write method, future ones included). A token without ranges and
	// methods was written before scopes: it may write everything, and the
	// node warns about it at start.
	Methods []string `json:"methods,omitempty"`
}

// DefaultChainConfig is what an empty chain config means: no write token
// (writes disabled), 1 MiB requests, 4096 pending writes per token, waits of
// at most 30 s, finality certificates collected, health failing after a
// minute without one, no CPU profiles (10 s each, the newest 100 kept when
// a directory is set).
func DefaultChainConfig() ChainConfig {
	return ChainConfig{
		MaxRequestBytes:    1 << 20,
		MaxPendingPerToken: 4096,
		MaxWaitMs:          30_000,
		CertificateStallMs: 60_000,
		Certificates:       true,
		CPUProfileEveryMs:  10_000,
		CPUProfileMaxFiles: 100,
		PipelineIntervalMs: DefaultPipelineIntervalMs,
	}
}

// DefaultPipelineIntervalMs was chosen by measurement (docs/internals/performance-log.md,
// "Pacing pipelined blocks", "Fewer polls per block" and "One signature
// per owner and block"): with blocks decided in 5 polls, 120 ms served
// 1.14-1.20x the requests of 100 ms at a lower p50 (each block carries
// more, and its consensus competes with less), and 40 and 60 ms did worse.
// Once group commit waited for the clients answered at an accept
// (genesis groupCommitReturnMs), a block cost about 40% less CPU, and at
// 90 ms the network served 1.4x the requests it served at 120 ms without
// that wait, at a p50 below 100 ms; 80 ms lowered the p50 by another 5 ms
// but cost certificates more (0.86-0.93x of the requests in four runs,
// against 0.94-0.95x). A lone request on a quiet chain does not wait.
const DefaultPipelineIntervalMs = 90

// maxPipelineIntervalMs bounds the pacing: a longer one only adds latency.
const maxPipelineIntervalMs = 2000

// PipelineInterval is the pacing of blocks built on processing ones (the
// default for a nil config).
func (c *ChainConfig) PipelineInterval() time.Duration {
	if c == nil {
		return DefaultPipelineIntervalMs * time.Millisecond
	}
	return time.Duration(c.PipelineIntervalMs) * time.Millisecond
}

// ParseChainConfig overlays JSON on the defaults. Empty input means the
// defaults; unknown fields are errors naming the field, so a typo never
// silently falls back to a default (or to no token at all).
func ParseChainConfig(b []byte) (ChainConfig, error) {
	c := DefaultChainConfig()
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return ChainConfig{}, fmt.Errorf("%w: %w (known fields: writeTokens[{name, sha256, ranges, methods}], maxRequestBytes, maxPendingPerToken, maxWaitMs, certificateStallMs, certificates, cpuProfileDir, cpuProfileEveryMs, cpuProfileMaxFiles, directAPI, pipelineIntervalMs, upgrades)", ErrBadChainConfig, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ChainConfig{}, fmt.Errorf("%w: data after the JSON object", ErrBadChainConfig)
	}
	if err := c.Verify(); err != nil {
		return ChainConfig{}, err
	}
	return c, nil
}

// Verify checks the tokens (valid unique names, well-formed unique hashes)
// and the limits' ranges.
func (c *ChainConfig) Verify() error {
	names := make(map[string]bool, len(c.WriteTokens))
	hashes := make(map[string]bool, len(c.WriteTokens))
	for i, t := range c.WriteTokens {
		if err := verifyTokenName(t.Name); err != nil {
			return fmt.Errorf("%w: writeTokens[%d].name: %w", ErrBadChainConfig, i, err)
		}
		if names[t.Name] {
			return fmt.Errorf("%w: writeTokens[%d]: name %q is used twice", ErrBadChainConfig, i, t.Name)
		}
		names[t.Name] = true
		if err := t.verifyScope(); err != nil {
			return fmt.Errorf("%w: writeTokens[%d] (%s): %w", ErrBadChainConfig, i, t.Name, err)
		}
		h, err := hex.DecodeString(t.SHA256)
		if err != nil || len(h) != sha256.Size {
			return fmt.Errorf("%w: writeTokens[%d] (%s).sha256 must be 64 hex digits, the SHA-256 of the token (`schain token new` prints it); never put the token itself in the config", ErrBadChainConfig, i, t.Name)
		}
		key := strings.ToLower(t.SHA256)
		if hashes[key] {
			return fmt.Errorf("%w: writeTokens[%d] (%s): the same token hash is listed twice", ErrBadChainConfig, i, t.Name)
		}
		hashes[key] = true
	}
	switch {
	case c.MaxRequestBytes < minRequestBytes || c.MaxRequestBytes > maxRequestBytes:
		return fmt.Errorf("%w: maxRequestBytes %d not in [%d, %d]", ErrBadChainConfig, c.MaxRequestBytes, minRequestBytes, maxRequestBytes)
	case c.MaxPendingPerToken < 1 || c.MaxPendingPerToken > maxPendingBound:
		return fmt.Errorf("%w: maxPendingPerToken %d not in [1, %d]", ErrBadChainConfig, c.MaxPendingPerToken, maxPendingBound)
	case c.MaxWaitMs < 1 || c.MaxWaitMs > maxWaitBoundMs:
		return fmt.Errorf("%w: maxWaitMs %d not in [1, %d]", ErrBadChainConfig, c.MaxWaitMs, maxWaitBoundMs)
	case c.CertificateStallMs < 1000 || c.CertificateStallMs > maxWaitBoundMs:
		return fmt.Errorf("%w: certificateStallMs %d not in [1000, %d]", ErrBadChainConfig, c.CertificateStallMs, maxWaitBoundMs)
	case c.CPUProfileEveryMs < minProfileMs || c.CPUProfileEveryMs > maxProfileMs:
		return fmt.Errorf("%w: cpuProfileEveryMs %d not in [%d, %d]", ErrBadChainConfig, c.CPUProfileEveryMs, minProfileMs, maxProfileMs)
	case c.CPUProfileMaxFiles < 1 || c.CPUProfileMaxFiles > maxProfileFiles:
		return fmt.Errorf("%w: cpuProfileMaxFiles %d not in [1, %d]", ErrBadChainConfig, c.CPUProfileMaxFiles, maxProfileFiles)
	case c.PipelineIntervalMs > maxPipelineIntervalMs:
		return fmt.Errorf("%w: pipelineIntervalMs %d not in [0, %d]", ErrBadChainConfig, c.PipelineIntervalMs, maxPipelineIntervalMs)
	}
	if c.DirectAPI != "" {
		if err := verifyDirectAPI(c.DirectAPI); err != nil {
			return fmt.Errorf("%w: directAPI %q: %w", ErrBadChainConfig, c.DirectAPI, err)
		}
	}
	return nil
}

// verifyDirectAPI checks a listen address that is also advertised: a
// port, and a host clients can dial.
func verifyDirectAPI(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w (hint: \"127.0.0.1:9660\", or port 0 for any free one)", err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number in [0, 65535]", port)
	}
	if host == "" {
		return errors.New("no host: give the address clients reach this node at (it is what getNode advertises)")
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("host %s listens everywhere but cannot be advertised: give the address clients reach this node at", host)
	}
	return nil
}

// CertificateStallAfter as a duration; zero for a nil config (the
// certifier's default).
func (c *ChainConfig) CertificateStallAfter() time.Duration {
	if c == nil {
		return 0
	}
	return time.Duration(c.CertificateStallMs) * time.Millisecond
}

// CertificatesOff: the config turns finality certificates off (a nil
// config keeps them on).
func (c *ChainConfig) CertificatesOff() bool { return c != nil && !c.Certificates }

// CPUProfileEvery as a duration.
func (c *ChainConfig) CPUProfileEvery() time.Duration {
	return time.Duration(c.CPUProfileEveryMs) * time.Millisecond
}

// MaxWait as a duration.
func (c *ChainConfig) MaxWait() time.Duration { return time.Duration(c.MaxWaitMs) * time.Millisecond }

func verifyTokenName(name string) error {
	if len(name) == 0 || len(name) > maxTokenNameLen {
		return fmt.Errorf("%d bytes, must be 1..%d", len(name), maxTokenNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%q: byte 0x%02x at %d (only A-Z a-z 0-9 . _ -)", name, c, i)
		}
	}
	return nil
}

// TokenHash is the config form of a token: hex(SHA-256(token)).
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewWriteToken returns the config entry of token under name, checking the
// name. Without ranges and methods the token may write everything (the
// form of tokens written before scopes); otherwise give both.
func NewWriteToken(name, token string, ranges, methods []string) (WriteToken, error) {
	if err := verifyTokenName(name); err != nil {
		return WriteToken{}, fmt.Errorf("token name: %w", err)
	}
	if token == "" {
		return WriteToken{}, errors.New("empty token")
	}
	t := WriteToken{Name: name, SHA256: TokenHash(token), Ranges: ranges, Methods: methods}
	if err := t.verifyScope(); err != nil {
		return WriteToken{}, err
	}
	return t, nil
}

// tokenPrefix marks S-Chain tokens, so secret scanners and people can tell
// them apart.
const tokenPrefix = "schain_"

// GenerateToken returns a fresh random write token: 256 bits from
// crypto/rand, base64url-encoded after a "schain_" prefix.
func GenerateToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
