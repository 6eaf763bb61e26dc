package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting"
)

// RecordVersion is the record file's format; a record of another version is
// refused rather than guessed at.
const RecordVersion = 1

// Kind is what a step's transaction does.
type Kind string

// The steps of a deployment, in the order they are issued.
const (
	CreateSubnet Kind = "createSubnet"
	AddValidator Kind = "addValidator"
	CreateChain  Kind = "createChain"
)

// State is how far a step has gone.
type State string

// A step is signed when built, issued once sent to a node (recorded before
// it is sent), and committed once the P-chain committed it.
const (
	Signed    State = "signed"
	Issued    State = "issued"
	Committed State = "committed"
)

// Step is one P-chain transaction of the deployment.
type Step struct {
	Kind Kind `json:"kind"`
	// NodeID is the validator an AddValidator step adds.
	NodeID ids.NodeID `json:"nodeID,omitempty"`
	TxID   ids.ID     `json:"txID"`
	// Tx is the signed transaction (hex, as platform.issueTx takes it):
	// a resumed deployment issues these same bytes again, so that it never
	// creates a second subnet or chain.
	Tx       string `json:"tx"`
	FeeNAVAX uint64 `json:"feeNAVAX"`
	State    State  `json:"state"`
	// PChainHeight is the P-chain height once committed.
	PChainHeight uint64 `json:"pChainHeight,omitempty"`
	// Note says how a step ended other than by its own transaction (a
	// validator someone else had already added).
	Note string `json:"note,omitempty"`
}

// bytes decodes the signed transaction.
func (s *Step) bytes() ([]byte, error) {
	return formatting.Decode(formatting.Hex, s.Tx)
}

// RecordNode is one validator of the deployment.
type RecordNode struct {
	URI    string     `json:"uri"`
	NodeID ids.NodeID `json:"nodeID"`
}

// Record is the deployment record: what was (or will be) issued, so that a
// second run resumes instead of starting over, and `schain deploy status`
// knows the chain. The subnet and chain IDs are those of its transactions,
// fixed once they are signed.
type Record struct {
	Version   int    `json:"version"`
	NetworkID uint32 `json:"networkID"`
	VMID      ids.ID `json:"vmID"`
	ChainName string `json:"chainName"`
	// Genesis is the chain's genesis, byte for byte (a string, so that no
	// reformatting changes it), which a resumed run takes unless given
	// another; GenesisSHA256 its digest: a re-run with another genesis is
	// refused (it would be another chain).
	Genesis       string `json:"genesis"`
	GenesisSHA256 string `json:"genesisSHA256"`
	Weight        uint64 `json:"weight"`
	// OwnerKey is the path of the subnet owner's key file (never the key),
	// Owner its P-chain address: whoever adds or removes validators later
	// (`schain validators`) signs with it.
	OwnerKey string       `json:"ownerKey"`
	Owner    string       `json:"owner"`
	SubnetID ids.ID       `json:"subnetID"`
	ChainID  ids.ID       `json:"chainID"`
	Nodes    []RecordNode `json:"nodes"`
	Steps    []Step       `json:"steps"`
}

// ErrRecord: the record file is unreadable, of another version, or does
// not describe the deployment asked for.
var ErrRecord = errors.New("deploy: deployment record")

// LoadRecord reads a record; a missing file is (nil, nil).
func LoadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRecord, path, err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("%w: %s is version %d, this schain writes version %d", ErrRecord, path, r.Version, RecordVersion)
	}
	return &r, nil
}

// Save writes the record atomically (a temporary file synced, then
// renamed): a crash leaves the old record or the new one, never half.
func (r *Record) Save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Done reports whether every step is committed.
func (r *Record) Done() bool {
	for _, s := range r.Steps {
		if s.State != Committed {
			return false
		}
	}
	return len(r.Steps) > 0
}

// FeeNAVAX is what the steps not yet committed will burn.
func (r *Record) FeeNAVAX() uint64 {
	var fee uint64
	for _, s := range r.Steps {
		if s.State != Committed {
			fee += s.FeeNAVAX
		}
	}
	return fee
}
