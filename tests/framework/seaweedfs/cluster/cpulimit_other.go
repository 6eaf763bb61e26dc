//go:build !linux

package cluster

import "fmt"

func limitCPU(string, int, int) (string, error) {
	return "", fmt.Errorf("%w: cgroups are Linux's", ErrCPULimit)
}

func releaseCPU(string) {}
