//go:build !linux

package snowdrift

import "os/exec"

func dieWithParent(cmd *exec.Cmd) {}
