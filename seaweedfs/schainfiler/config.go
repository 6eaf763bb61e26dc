package schainfiler

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/s-chain/schain/client"
)

// Keys are the [schain] keys of filer.toml, with what each sets.
var Keys = map[string]string{
	"enabled":             "use this store",
	"rpc":                 "S-Chain node URIs, comma-separated",
	"chain":               "S-Chain chain ID",
	"token_file":          "file holding the S-Chain write token",
	"token":               "S-Chain write token (prefer token_file)",
	"bucket":              "bucket of the entries (default: key_prefix, or \"filer\")",
	"key_prefix":          "the masters' schain_prefix: bind entries' chunks to their manifests",
	"volume_band":         "the masters' schain_volume_band (1)",
	"max_key_len":         "the chain's txLimits.maxKeyLen (1024)",
	"max_attribute_bytes": "the chain's txLimits.maxAttributeBytes (32768)",
	"max_chunks":          "the chain's txLimits.maxChunks (256)",
	"reclaim_every":       "how often released chunks are acknowledged (10s; 0 never)",
	"request_timeout":     "bound of one exchange with a node (10s)",
	"direct":              "call each node's direct API when it announces one on its own host (true; false: the node's API only)",
}

// Open starts the store filer.toml's [schain] table describes; get reads a
// key of it ("" when unset).
func Open(get func(key string) string) (*Store, error) {
	cfg := DefaultConfig("filer")
	cfg.KeyPrefix = get("key_prefix")
	cfg.Bucket = get("bucket")
	if cfg.Bucket == "" {
		cfg.Bucket = "filer"
		if cfg.KeyPrefix != "" {
			cfg.Bucket = cfg.KeyPrefix
		}
	}
	var err error
	ints := []struct {
		key string
		dst *int
	}{{"max_key_len", &cfg.MaxKeyLen}, {"max_attribute_bytes", &cfg.MaxAttributeBytes}, {"max_chunks", &cfg.MaxChunks}}
	for _, f := range ints {
		if v := get(f.key); v != "" {
			if *f.dst, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("%w: [schain] %s: %w", errBadConfig, f.key, err)
			}
		}
	}
	if v := get("volume_band"); v != "" {
		band, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: [schain] volume_band: %w", errBadConfig, err)
		}
		cfg.VolumeBand = uint32(band)
	}
	if v := get("reclaim_every"); v != "" {
		if cfg.ReclaimEvery, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("%w: [schain] reclaim_every: %w", errBadConfig, err)
		}
	}
	r, err := router(get)
	if err != nil {
		return nil, err
	}
	return New(cfg, NewRouterChain(r))
}

// router is the S-Chain client of the [schain] table.
func router(get func(key string) string) (*client.Router, error) {
	var uris []string
	for _, u := range strings.Split(get("rpc"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			uris = append(uris, u)
		}
	}
	if len(uris) == 0 || get("chain") == "" {
		return nil, fmt.Errorf("%w: [schain] needs rpc (node URIs) and chain", errBadConfig)
	}
	rc := client.DefaultRouterConfig()
	rc.Client.Token = get("token")
	if f := get("token_file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: [schain] token_file: %w", errBadConfig, err)
		}
		rc.Client.Token = strings.TrimSpace(string(b))
	}
	if rc.Client.Token == "" {
		return nil, fmt.Errorf("%w: [schain] needs a write token (token_file)", errBadConfig)
	}
	// The direct API serves the same calls without the node's HTTP server
	// and its hop into the plugin, much of what a store call costs a node.
	rc.Client.Direct = true
	if v := get("direct"); v != "" {
		d, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%w: [schain] direct: %w", errBadConfig, err)
		}
		rc.Client.Direct = d
	}
	if v := get("request_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%w: [schain] request_timeout: %w", errBadConfig, err)
		}
		rc.Client.Timeout = d
	}
	return client.NewRouter(uris, get("chain"), rc)
}
