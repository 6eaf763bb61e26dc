package schainseq

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sequencer types this package serves (master.toml [master.sequencer] type).
const (
	// TypeSChain takes file keys and volume ids from S-Chain.
	TypeSChain = "schain"
	// TypeShadow keeps the stock sequencer and mirrors to S-Chain.
	TypeShadow = "schain-shadow"
	// TypeLeaderless is TypeSChain on every master at once: each master
	// takes heartbeats, serves assigns and lookups and grows volumes
	// itself, from its own reservations (see leaderless.go).
	TypeLeaderless = "schain-leaderless"
	// TypeRaftless is TypeLeaderless without raft: every master also
	// serves the client protocol, and what needs one coordinator (the
	// admin shell lock, a volume's vacuum) takes an S-Chain lease (see
	// raftless.go).
	TypeRaftless = "schain-raftless"
)

// MaxReservation is S-Chain's largest allocation (the genesis count limit,
// 2^20): one reservation never asks for more.
const MaxReservation = 1 << 20

// Config is the [master.sequencer] table. Keys are listed in keyDocs; New
// refuses unknown keys so that a typo fails the master's start instead of
// silently keeping a default.
type Config struct {
	// Type is the sequencer type.
	Type string
	// RPC are the S-Chain nodes' base URIs (schain_rpc, comma-separated).
	RPC []string
	// Chain is the chain ID (schain_chain).
	Chain string
	// Token is the write token, read from TokenFile (schain_token_file) or
	// given inline (schain_token).
	Token     string
	TokenFile string
	// Prefix names this cluster's ranges (schain_prefix, default
	// "seaweedfs"): <prefix>/keys/<band>, <prefix>/volumes, <prefix>/floor/*.
	Prefix string
	// VolumeBand is how many consecutive volume ids share one key range
	// (schain_volume_band, default 1: a range per volume).
	VolumeBand uint32
	// ReservationMin is the smallest key reservation (schain_reservation_min,
	// default 4096).
	ReservationMin uint64
	// Horizon is how long a reservation should last at the range's observed
	// rate (schain_horizon, default 30s): a refill asks for rate × Horizon
	// keys, at least ReservationMin, at most MaxReservation, and starts when
	// less than half of that is left. 30 s outlasts the proposer VM's block
	// gaps (up to 15 s) while a validator is dead.
	Horizon time.Duration
	// VolumeBatch is how many volume ids one reservation takes
	// (schain_volume_batch, default 4).
	VolumeBatch uint64
	// Wait bounds how long an assign waits for committed keys when none is
	// left (schain_wait, default 2s); then it fails with ErrNoKeys.
	Wait time.Duration
	// RefillTimeout bounds one reservation, retries included
	// (schain_refill_timeout, default 20s).
	RefillTimeout time.Duration
	// RequestTimeout bounds one JSON-RPC exchange that does not wait for a
	// block (schain_request_timeout, default 5s).
	RequestTimeout time.Duration
	// ShadowQueue bounds the mirrors waiting to be sent (schain_shadow_queue,
	// default 65536); beyond it mirrors are dropped and counted.
	ShadowQueue int
	// ShadowWorkers mirror concurrently (schain_shadow_workers, default 8);
	// a range is always served by the same worker, in order.
	ShadowWorkers int
	// ShadowTimeout bounds one mirror (schain_shadow_timeout, default 5s);
	// a mirror without an answer by then is recorded as missing.
	ShadowTimeout time.Duration
	// PairsDir receives the shadow's pairs (schain_pairs_dir, default
	// <mdir>/schain-shadow).
	PairsDir string
	// PairsMaxBytes bounds one pairs file (schain_pairs_max_mb, default 64):
	// a full file becomes pairs.jsonl.1 (replacing the previous one), so the
	// pairs take at most twice this much disk.
	PairsMaxBytes int64
	// FileKeyFloor and VolumeIDFloor (file_key_floor, volume_id_floor) make
	// the stock sequencer start at or above them: what a rollback from
	// S-Chain sets. Not allowed with TypeSChain, whose floors are on chain.
	FileKeyFloor  uint64
	VolumeIDFloor uint32
	// Final makes the S-Chain types use only reservations whose receipt is
	// final (schain_final, default false): a finality certificate of more
	// than 2/3 of the stake covers the block, which a client can verify
	// offline. Acceptance alone is one validator's word until then. With
	// three equal validators all three must sign, so one dead validator
	// stops finality (and so every refill) until it is removed from the
	// subnet.
	Final bool
	// Masters is how many masters allocate at once in TypeLeaderless
	// (schain_masters, required there): each master grows a share of the
	// stock growth count, 1/Masters rounded up, so that masters growing
	// at once grow about what one leader would.
	Masters int
	// Warmup is how long a leaderless master refuses assigns after it
	// starts (schain_warmup, default 3s): long enough for every volume
	// server's first heartbeat (they redial a lost master every second),
	// so that a partial topology neither misleads picks nor grows volumes.
	// Clients try the next master meanwhile.
	Warmup time.Duration
	// LockTTL is the time to live of the admin shell lock's lease in
	// TypeRaftless (schain_lock_ttl, default 10s, stock's lock duration):
	// a shell renews it every 4 s; one that stops (killed, paused) loses
	// it this long after its last renewal.
	LockTTL time.Duration
	// VacuumTTL is the time to live of a volume's vacuum lease in
	// TypeRaftless (schain_vacuum_ttl, default 30s), renewed every third
	// of it while the vacuum runs: a master that dies or pauses mid-vacuum
	// holds the volume at most this long.
	VacuumTTL time.Duration
}

// keyDocs lists the keys of [master.sequencer] New accepts.
var keyDocs = map[string]string{
	"type":                   "sequencer type",
	"sequencer_snowflake_id": "stock: snowflake node id",
	"schain_rpc":             "S-Chain node URIs, comma-separated",
	"schain_chain":           "S-Chain chain ID",
	"schain_token_file":      "file holding the S-Chain write token",
	"schain_token":           "S-Chain write token (prefer schain_token_file)",
	"schain_prefix":          "range name prefix",
	"schain_volume_band":     "volume ids per key range",
	"schain_reservation_min": "smallest key reservation",
	"schain_horizon":         "seconds of traffic a reservation should last",
	"schain_volume_batch":    "volume ids per reservation",
	"schain_wait":            "bound of an assign's wait for committed keys",
	"schain_refill_timeout":  "bound of one reservation",
	"schain_request_timeout": "bound of one JSON-RPC exchange",
	"schain_shadow_queue":    "mirrors waiting at most",
	"schain_shadow_workers":  "concurrent mirrors",
	"schain_shadow_timeout":  "bound of one mirror",
	"schain_pairs_dir":       "directory of the shadow's pairs",
	"schain_pairs_max_mb":    "bound of one pairs file, MiB",
	"file_key_floor":         "rollback: smallest file key the stock sequencer hands out",
	"volume_id_floor":        "rollback: smallest new volume id",
	"schain_final":           "use only reservations whose receipt is final (certified)",
	"schain_masters":         "leaderless: masters that allocate at once",
	"schain_warmup":          "leaderless: assigns refused this long after start",
	"schain_lock_ttl":        "raftless: time to live of the admin shell lock",
	"schain_vacuum_ttl":      "raftless: time to live of a volume's vacuum lease",
}

var errConfig = errors.New("invalid [master.sequencer]")

// DefaultConfig is the configuration without any key set.
func DefaultConfig(metaDir string) Config {
	return Config{
		Prefix:         "seaweedfs",
		VolumeBand:     1,
		ReservationMin: 4096,
		Horizon:        30 * time.Second,
		VolumeBatch:    4,
		Wait:           2 * time.Second,
		RefillTimeout:  20 * time.Second,
		RequestTimeout: 5 * time.Second,
		ShadowQueue:    65536,
		ShadowWorkers:  8,
		ShadowTimeout:  5 * time.Second,
		PairsDir:       filepath.Join(metaDir, "schain-shadow"),
		PairsMaxBytes:  64 << 20,
		Warmup:         3 * time.Second,
		LockTTL:        10 * time.Second,
		VacuumTTL:      30 * time.Second,
	}
}

// ParseConfig reads the [master.sequencer] table (as viper gives it: keys
// lower-cased, values strings or numbers) over DefaultConfig(metaDir) and
// checks it.
func ParseConfig(table map[string]any, metaDir string) (Config, error) {
	c := DefaultConfig(metaDir)
	var unknown []string
	for k := range table {
		if _, ok := keyDocs[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Config{}, fmt.Errorf("%w: unknown key(s) %s (known: %s)", errConfig, strings.Join(unknown, ", "), strings.Join(knownKeys(), ", "))
	}
	p := tableReader{table: table}
	c.Type = strings.ToLower(p.str("type"))
	if s := p.str("schain_rpc"); s != "" {
		for _, u := range strings.Split(s, ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.RPC = append(c.RPC, u)
			}
		}
	}
	c.Chain = p.str("schain_chain")
	c.Token, c.TokenFile = p.str("schain_token"), p.str("schain_token_file")
	if s := p.str("schain_prefix"); s != "" {
		c.Prefix = s
	}
	p.uint32("schain_volume_band", &c.VolumeBand)
	p.uint64("schain_reservation_min", &c.ReservationMin)
	p.duration("schain_horizon", &c.Horizon)
	p.uint64("schain_volume_batch", &c.VolumeBatch)
	p.duration("schain_wait", &c.Wait)
	p.duration("schain_refill_timeout", &c.RefillTimeout)
	p.duration("schain_request_timeout", &c.RequestTimeout)
	p.int("schain_shadow_queue", &c.ShadowQueue)
	p.int("schain_shadow_workers", &c.ShadowWorkers)
	p.duration("schain_shadow_timeout", &c.ShadowTimeout)
	if s := p.str("schain_pairs_dir"); s != "" {
		c.PairsDir = s
	}
	var mb int
	if p.int("schain_pairs_max_mb", &mb) {
		c.PairsMaxBytes = int64(mb) << 20
	}
	p.uint64("file_key_floor", &c.FileKeyFloor)
	p.uint32("volume_id_floor", &c.VolumeIDFloor)
	p.bool("schain_final", &c.Final)
	p.int("schain_masters", &c.Masters)
	p.duration("schain_warmup", &c.Warmup)
	p.duration("schain_lock_ttl", &c.LockTTL)
	p.duration("schain_vacuum_ttl", &c.VacuumTTL)
	if p.err != nil {
		return Config{}, p.err
	}
	if c.TokenFile != "" && c.Token == "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return Config{}, fmt.Errorf("%w: schain_token_file: %w", errConfig, err)
		}
		c.Token = strings.TrimSpace(string(b))
	}
	return c, c.Verify()
}

// Verify checks the configuration for its type.
func (c Config) Verify() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errConfig, fmt.Sprintf(format, args...))
	}
	floors := c.FileKeyFloor > 0 || c.VolumeIDFloor > 0
	leaderless := c.Type == TypeLeaderless || c.Type == TypeRaftless
	if c.Final && c.Type != TypeSChain && !leaderless {
		return bad("schain_final is for types schain, schain-leaderless and schain-raftless (their reservations)")
	}
	if c.Masters > 0 && !leaderless {
		return bad("schain_masters is for types schain-leaderless and schain-raftless")
	}
	switch c.Type {
	case TypeSChain, TypeShadow:
	case TypeLeaderless, TypeRaftless:
		if c.Masters < 1 {
			return bad("type %s needs schain_masters (how many masters allocate: each grows its share of new volumes)", c.Type)
		}
		if c.Warmup < 0 {
			return bad("schain_warmup must not be negative")
		}
		if c.LockTTL < time.Second || c.VacuumTTL < time.Second || c.LockTTL > time.Hour || c.VacuumTTL > time.Hour {
			return bad("schain_lock_ttl and schain_vacuum_ttl must be between 1s and 1h")
		}
	case "snowflake":
		if floors {
			return bad("file_key_floor and volume_id_floor need type raft (snowflake keys ignore floors)")
		}
		return nil
	default: // raft, or empty: the stock memory sequencer
		return nil
	}
	if c.Type != TypeShadow && floors {
		return bad("file_key_floor and volume_id_floor are for type raft; type %s reads its floors from S-Chain (schain seaweedfs cutover)", c.Type)
	}
	switch {
	case len(c.RPC) == 0:
		return bad("type %s needs schain_rpc (S-Chain node URIs)", c.Type)
	case c.Chain == "":
		return bad("type %s needs schain_chain (the chain ID)", c.Type)
	case c.Token == "":
		return bad("type %s needs a write token: schain_token_file (or schain_token)", c.Type)
	case c.Prefix == "" || len(c.Prefix) > 64 || strings.ContainsAny(c.Prefix, " \t\n"):
		return bad("schain_prefix %q: want 1 to 64 characters without spaces", c.Prefix)
	case c.VolumeBand == 0:
		return bad("schain_volume_band must be at least 1")
	case c.ReservationMin == 0 || c.ReservationMin > MaxReservation:
		return bad("schain_reservation_min %d not in [1, %d]", c.ReservationMin, MaxReservation)
	case c.VolumeBatch == 0 || c.VolumeBatch > 1024:
		return bad("schain_volume_batch %d not in [1, 1024]", c.VolumeBatch)
	case c.Horizon <= 0 || c.Wait <= 0 || c.RefillTimeout <= 0 || c.RequestTimeout <= 0 || c.ShadowTimeout <= 0:
		return bad("durations must be positive")
	case c.ShadowWorkers < 1 || c.ShadowQueue < c.ShadowWorkers:
		return bad("schain_shadow_workers must be at least 1 and schain_shadow_queue at least that")
	case c.PairsMaxBytes < 1<<20:
		return bad("schain_pairs_max_mb must be at least 1")
	}
	return nil
}

func knownKeys() []string {
	keys := make([]string, 0, len(keyDocs))
	for k := range keyDocs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tableReader reads typed values out of the table, keeping the first error.
type tableReader struct {
	table map[string]any
	err   error
}

func (p *tableReader) str(key string) string {
	v, ok := p.table[key]
	if !ok || v == nil {
		return ""
	}
	return strings.TrimSpace(fmt.Sprint(v))
}

func (p *tableReader) fail(key, value, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s = %q: want %s", errConfig, key, value, want)
	}
}

func (p *tableReader) uint64(key string, dst *uint64) bool {
	s := p.str(key)
	if s == "" {
		return false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		p.fail(key, s, "an unsigned integer")
		return false
	}
	*dst = v
	return true
}

func (p *tableReader) uint32(key string, dst *uint32) {
	var v uint64
	if p.uint64(key, &v) {
		if v > 1<<32-1 {
			p.fail(key, p.str(key), "at most 4294967295")
			return
		}
		*dst = uint32(v)
	}
}

func (p *tableReader) int(key string, dst *int) bool {
	var v uint64
	if !p.uint64(key, &v) {
		return false
	}
	if v > 1<<31 {
		p.fail(key, p.str(key), "at most 2^31")
		return false
	}
	*dst = int(v)
	return true
}

// bool accepts true and false (and 1 and 0).
func (p *tableReader) bool(key string, dst *bool) {
	s := p.str(key)
	if s == "" {
		return
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		p.fail(key, s, "true or false")
		return
	}
	*dst = v
}

// duration accepts Go durations ("30s") and plain numbers of seconds.
func (p *tableReader) duration(key string, dst *time.Duration) {
	s := p.str(key)
	if s == "" {
		return
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		*dst = time.Duration(secs * float64(time.Second))
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail(key, s, `a duration such as "30s"`)
		return
	}
	*dst = d
}
