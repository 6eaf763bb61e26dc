package tmpslots

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/proposervm/proposer"
)

type equalSet []ids.NodeID

func (s equalSet) GetMinimumHeight(context.Context) (uint64, error)    { return 0, nil }
func (s equalSet) GetCurrentHeight(context.Context) (uint64, error)    { return 0, nil }
func (s equalSet) GetSubnetID(context.Context, ids.ID) (ids.ID, error) { return ids.Empty, nil }
func (s equalSet) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	out := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, id := range s {
		out[id] = &validators.GetValidatorOutput{NodeID: id, Weight: units.Schmeckle}
	}
	return out, nil
}
func (equalSet) GetCurrentValidatorSet(context.Context, ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	return nil, 0, nil
}
func (equalSet) GetWarpValidatorSets(context.Context, uint64) (map[ids.ID]validators.WarpSet, error) {
	return nil, nil
}
func (equalSet) GetWarpValidatorSet(context.Context, uint64, ids.ID) (validators.WarpSet, error) {
	return validators.WarpSet{}, nil
}

func TestSlots(t *testing.T) {
	chainID, _ := ids.FromString(os.Getenv("CHAIN"))
	var set equalSet
	for _, s := range strings.Split(os.Getenv("NODES"), ",") {
		id, err := ids.NodeIDFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		set = append(set, id)
	}
	w := proposer.New(set, ids.Empty, chainID, logging.NoLog{})
	for h := uint64(40); h <= 46; h++ {
		line := fmt.Sprintf("h%d:", h)
		for slot := uint64(0); slot < 9; slot++ {
			p, _ := w.ExpectedProposer(context.Background(), h, 6, slot)
			line += " " + p.String()[7:12]
		}
		t.Log(line)
	}
}
