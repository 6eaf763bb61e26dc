// Command plugin is the S-Chain VM as an avalanchego plugin: the node starts
// it as a subprocess and talks to it over gRPC (rpcchainvm). Install it as
// <plugin-dir>/<vm.ID> (see `make build`).
//
// Usage:
//
//	plugin               serve the VM (what the node runs)
//	plugin version       print the VM version and rpcchainvm protocol
//	plugin version-json  the same as JSON
//	plugin vm-id         print the VM ID the binary must be named after
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm"

	"github.com/s-chain/schain/vm"
)

// versionInfo is what version-json prints.
type versionInfo struct {
	Version    string `json:"version"`
	VMID       string `json:"vmID"`
	RPCChainVM uint   `json:"rpcchainvm"`
}

func main() {
	info := versionInfo{Version: vm.Version, VMID: vm.ID.String(), RPCChainVM: version.RPCChainVMProtocol}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "version":
			fmt.Printf("schain %s [vmID=%s, rpcchainvm=%d]\n", info.Version, info.VMID, info.RPCChainVM)
		case "version-json":
			b, _ := json.Marshal(info)
			fmt.Println(string(b))
		case "vm-id":
			fmt.Println(info.VMID)
		default:
			fmt.Fprintf(os.Stderr, "plugin: unknown command %q (use version, version-json or vm-id; no argument serves the VM)\n", os.Args[1])
			os.Exit(2)
		}
		return
	}
	if err := rpcchainvm.Serve(context.Background(), &vm.VM{}); err != nil {
		fmt.Fprintf(os.Stderr, "plugin: %v\n", err)
		os.Exit(1)
	}
}
