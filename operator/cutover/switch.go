package cutover

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/s-chain/schain/operator/pairs"
	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// Cluster is what a switch drives of a SeaweedFS cluster: the masters'
// and a volume server's HTTP addresses, the directories the masters write
// the shadow's pairs to, and stopping and restarting the masters with
// another sequencer. An operator's own cluster can satisfy it; the local
// test cluster (tests/framework/seaweedfs/cluster) does.
type Cluster interface {
	// MasterAddrs are the masters' HTTP addresses (host:port).
	MasterAddrs() []string
	// VolumeAddr is a volume server's HTTP address.
	VolumeAddr() string
	// PairsDirs are where the masters write the shadow's pairs.
	PairsDirs() []string
	// StopMasters stops every master.
	StopMasters(ctx context.Context) error
	// RestartMasters starts the stopped masters with the sequencer named
	// (schainseq.TypeSChain or SequencerStock) and the extra
	// [master.sequencer] keys, and returns the leader's address.
	RestartMasters(ctx context.Context, sequencer string, extra map[string]string) (string, error)
}

// SequencerStock names SeaweedFS's own sequencer (raft) for
// Cluster.RestartMasters.
const SequencerStock = "raft"

// Options of a switch.
type Options struct {
	// Prefix is the cluster's range prefix on S-Chain.
	Prefix string
	// Band is the volumes per key range (rollback reads every key range).
	Band uint32
	// Margins above the bounds.
	Margins Margins
	// Out receives progress and the evidence of each bound.
	Out io.Writer
}

func (o Options) printf(format string, args ...any) {
	if o.Out != nil {
		fmt.Fprintf(o.Out, format+"\n", args...)
	}
}

// ToSChain cuts a running cluster over to S-Chain: it reads the legacy
// bounds while the masters run (topology, volume servers), stops every
// master (from then on the stock sequencer hands out nothing), reads the
// bounds again with the shadow's pairs (its legacy maximum covers keys handed
// out and not yet written), records the floors on S-Chain, and starts the
// masters in schain mode. Clients see a leader election and the masters'
// warm-up, as after a leader failover.
func ToSChain(ctx context.Context, c Cluster, chain Chain, o Options) (Floors, error) {
	b, err := FromCluster(ctx, c.MasterAddrs())
	if err != nil {
		return Floors{}, fmt.Errorf("reading the cluster's state: %w", err)
	}
	o.printf("stopping the masters: the stock sequencer stops handing out ids")
	if err := c.StopMasters(ctx); err != nil {
		return Floors{}, err
	}
	final, err := FromVolumeServers(ctx, []string{c.VolumeAddr()})
	if err != nil {
		return Floors{}, err
	}
	b.Raise(final)
	if set, err := pairs.Load(c.PairsDirs()...); err == nil {
		key, vol := set.LegacyMax()
		b.Raise(Bounds{MaxFileKey: key, MaxVolumeID: uint64(vol), Sources: []string{
			fmt.Sprintf("shadow pairs (%d files): stock sequencer's max key %d, max volume id %d", len(set.Files), key, vol)}})
	} else {
		o.printf("no shadow pairs (%v): the floors rest on the cluster's state and the margins", err)
	}
	f := Plan(b, o.Margins)
	o.printf("legacy bounds: file key %d, volume id %d, from:\n  %s", b.MaxFileKey, b.MaxVolumeID, strings.Join(b.Sources, "\n  "))
	got, err := Record(ctx, chain, o.Prefix, f)
	if err != nil {
		return Floors{}, err
	}
	o.printf("recorded on S-Chain: every file key >= %d, every volume id >= %d (%s, %s)", got.FileKey, got.VolumeID,
		"floor/keys", "floor/volumes")
	leader, err := c.RestartMasters(ctx, schainseq.TypeSChain, nil)
	if err != nil {
		return got, err
	}
	o.printf("masters restarted in schain mode; leader %s", leader)
	return got, nil
}

// ToStock rolls a cluster on S-Chain back to the stock sequencer: it stops
// the masters, reads every id S-Chain could have given the cluster, and
// starts the masters in raft mode with file_key_floor and volume_id_floor
// above them, so that the stock sequencer never reissues an S-Chain id
// (keys handed out and not yet written included). It returns the floors.
func ToStock(ctx context.Context, c Cluster, chain Chain, o Options) (Floors, error) {
	o.printf("stopping the masters: S-Chain reservations stop being handed out")
	if err := c.StopMasters(ctx); err != nil {
		return Floors{}, err
	}
	b, err := SChainBounds(ctx, chain, o.Prefix, max(o.Band, 1), func(done, total int) {
		o.printf("  read %d of %d key ranges", done, total)
	})
	if err != nil {
		return Floors{}, err
	}
	final, err := FromVolumeServers(ctx, []string{c.VolumeAddr()})
	if err != nil {
		return Floors{}, err
	}
	b.Raise(final)
	f := Plan(b, o.Margins)
	o.printf("S-Chain bounds: file key %d, volume id %d, from:\n  %s", b.MaxFileKey, b.MaxVolumeID, strings.Join(b.Sources, "\n  "))
	leader, err := c.RestartMasters(ctx, SequencerStock, RollbackSequencer(f))
	if err != nil {
		return f, err
	}
	o.printf("masters restarted in raft mode with file_key_floor = %d, volume_id_floor = %d; leader %s", f.FileKey, f.VolumeID, leader)
	return f, nil
}
