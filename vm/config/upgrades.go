package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/s-chain/schain/vm/execute"
)

// Upgrades schedules every change of execution: the block height from which
// each one applies. A change that makes a block valid or invalid where it was
// not, or makes a block write other state, can only take effect at a height
// every validator agrees on in advance; otherwise a node running the new
// plugin and one running the old disagree on the same block, and the chain
// splits. A field left unset means never, so a chain created before a change
// keeps its rules when its plugin is replaced; chains created since get every
// known change from genesis (UpgradesAtGenesis).
//
// Each field is a *uint64 named <Change>Height with a Rules field <Change>.
type Upgrades struct {
	// LivenessGapsHeight: a validator's grace of K liveness rounds counts
	// only rounds that had a block, all of them and not just the rounds
	// between a block and its parent (docs/concepts/liveness.md, Failover bound).
	LivenessGapsHeight *uint64 `json:"livenessGapsHeight,omitempty"`
	// LeasesHeight: lease transactions (acquire, renew, release a range's
	// lease, with a fencing token) become valid.
	LeasesHeight *uint64 `json:"leasesHeight,omitempty"`
	// ManifestsHeight: versioned manifests (ManifestTx, ReclaimTx) with
	// preconditions, chunks bound to one live object and released lists;
	// PutManifestTx is refused from here on (docs/concepts/rules.md, Manifests).
	ManifestsHeight *uint64 `json:"manifestsHeight,omitempty"`
	// RemovalsHeight: the chain counts each validator's rounds out of the
	// membership and decides the removal of dead ones (removalRounds,
	// minValidators; docs/operating/validators.md).
	RemovalsHeight *uint64 `json:"removalsHeight,omitempty"`
}

// Rules is what the schedule says for the block at height.
func (u Upgrades) Rules(height uint64) execute.Rules {
	return execute.Rules{
		LivenessGaps: active(u.LivenessGapsHeight, height),
		Leases:       active(u.LeasesHeight, height),
		Manifests:    active(u.ManifestsHeight, height),
		Removals:     active(u.RemovalsHeight, height),
	}
}

func active(from *uint64, height uint64) bool { return from != nil && height >= *from }

// UpgradesAtGenesis activates every change this code knows from the first
// block: what a new chain's genesis carries.
func UpgradesAtGenesis() Upgrades {
	var u Upgrades
	for _, f := range u.fields() {
		zero := uint64(0)
		*f.at = &zero
	}
	return u
}

// upgradeField is one scheduled change, by its JSON name.
type upgradeField struct {
	name string
	at   **uint64
}

// fields lists u's changes in JSON-name order.
func (u *Upgrades) fields() []upgradeField {
	v := reflect.ValueOf(u).Elem()
	t := v.Type()
	fs := make([]upgradeField, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fs = append(fs, upgradeField{name: name, at: v.Field(i).Addr().Interface().(**uint64)})
	}
	slices.SortFunc(fs, func(a, b upgradeField) int { return strings.Compare(a.name, b.name) })
	return fs
}

// Overlay fills the changes u leaves unset from o, a node's chain config:
// how an operator schedules a change on a chain whose genesis predates it.
// Every validator must be given the same height before the chain reaches
// it. A change the genesis schedules cannot be moved: o may only repeat it.
func (u Upgrades) Overlay(o Upgrades) (Upgrades, error) {
	mine, theirs := u.fields(), o.fields()
	for i, f := range mine {
		given := *theirs[i].at
		switch {
		case given == nil:
		case *f.at == nil:
			at := *given
			*f.at = &at
		case **f.at != *given:
			return u, fmt.Errorf("%w: upgrades.%s is %d in the chain config but %d in the genesis (hint: the genesis fixes it; remove it from the chain config)",
				ErrBadChainConfig, f.name, *given, **f.at)
		}
	}
	return u, nil
}

// Schedule lists every change as name=height, or name=never: the startup
// log line's view of which rules the node runs.
func (u Upgrades) Schedule() []string {
	fs := u.fields()
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		if *f.at == nil {
			out = append(out, f.name+"=never")
			continue
		}
		out = append(out, fmt.Sprintf("%s=%d", f.name, **f.at))
	}
	return out
}
