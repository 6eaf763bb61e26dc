// Command weedpatch applies the S-Chain patch (package seaweedfs/patch) to a
// copy of the SeaweedFS module; scripts/build-weed.sh runs it.
//
//	weedpatch -src build/weed-src            check, then apply
//	weedpatch -src build/weed-src -dry-run   check only
//	weedpatch -digest                        print the patch's digest
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/s-chain/schain/seaweedfs/patch"
)

func main() {
	repo := flag.String("repo", ".", "root of this repository (holds "+patch.PackageSource+")")
	src := flag.String("src", "", "the SeaweedFS module copy to patch")
	dry := flag.Bool("dry-run", false, "check that the patch applies, change nothing")
	digest := flag.Bool("digest", false, "print the patch's digest and exit")
	flag.Parse()
	if *digest {
		d, err := patch.Digest(*repo)
		if err != nil {
			fail(err)
		}
		fmt.Println(d)
		return
	}
	if *src == "" {
		fail(fmt.Errorf("-src is required"))
	}
	if err := patch.Apply(*repo, *src, true); err != nil {
		fail(err)
	}
	if *dry {
		fmt.Println("weedpatch: the patch applies")
		return
	}
	if err := patch.Apply(*repo, *src, false); err != nil {
		fail(err)
	}
	fmt.Printf("weedpatch: patched %s (new package %s, hunks of seaweedfs/patch/weed.diff)\n", *src, patch.PackageDir)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "weedpatch: FAIL: %v\n", err)
	os.Exit(1)
}
