package cutover

import (
	"fmt"
	"sort"
	"strings"
)

// SChain is how the masters reach S-Chain (modes schain and
// schain-shadow).
type SChain struct {
	URIs      []string `json:"uris"`
	Chain     string   `json:"chain"`
	TokenFile string   `json:"token_file"`
	Prefix    string   `json:"prefix"`
}

// MasterToml renders the [master.sequencer] table of a sequencer
// (schainseq.TypeSChain, SequencerStock, ...): what a cluster's masters
// install to switch.
func MasterToml(sequencer string, sc SChain, extra map[string]string) string {
	var b strings.Builder
	b.WriteString("# Written by schain (seaweedfs/cluster): the masters' sequencer.\n[master.sequencer]\n")
	fmt.Fprintf(&b, "type = %q\n", sequencer)
	if sequencer != SequencerStock {
		fmt.Fprintf(&b, "schain_rpc = %q\n", strings.Join(sc.URIs, ","))
		fmt.Fprintf(&b, "schain_chain = %q\n", sc.Chain)
		fmt.Fprintf(&b, "schain_token_file = %q\n", sc.TokenFile)
		if sc.Prefix != "" {
			fmt.Fprintf(&b, "schain_prefix = %q\n", sc.Prefix)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %q\n", k, extra[k])
	}
	return b.String()
}
