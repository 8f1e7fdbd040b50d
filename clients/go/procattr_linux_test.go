package snowdrift

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server process get SIGKILL when the test binary dies, so a test
// run that is killed (a timeout) leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
