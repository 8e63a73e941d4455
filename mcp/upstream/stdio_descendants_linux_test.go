package upstream

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

// leaderExitsArg makes the test binary a process whose main thread exits
// while its other threads run on, after starting a child.
const leaderExitsArg = "leader-exits"

func init() {
	helperMains[leaderExitsArg] = runLeaderExits
	if len(os.Args) > 1 && os.Args[1] == leaderExitsArg {
		// Keep the main goroutine on the main thread, so the exit below
		// ends the thread group's leader and only it.
		runtime.LockOSThread()
	}
}

// runLeaderExits starts a sleep, prints its pid and ends the main thread
// alone: the process then shows as a zombie in /proc while its other
// threads, and the child, still run. A Go upstream whose main thread
// finishes exiting before the rest looks like this for a moment.
func runLeaderExits() {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(child.Process.Pid)
	_ = os.Stdout.Sync()
	go func() {
		for {
			time.Sleep(time.Hour)
		}
	}()
	_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}

// IM-10: the supervisor's sweep reaches a child whose parent shows as a
// zombie because only the parent's main thread has exited. Skipping
// zombies in the walk once let such a child outlive a gateway killed
// outright.
func TestDescendantsThroughZombieLeaderIM10(t *testing.T) {
	cmd := exec.Command(os.Args[0], leaderExitsArg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	childPid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(childPid, syscall.SIGKILL) })

	if !waittest.Poll(10*time.Second, func() bool {
		st, ok := procStat(cmd.Process.Pid)
		return ok && st.state == 'Z'
	}) {
		t.Fatalf("helper %d never showed as a zombie", cmd.Process.Pid)
	}
	if st, ok := procStat(childPid); !ok || st.ppid != cmd.Process.Pid {
		t.Fatalf("child %d: %+v, want it still listed under %d", childPid, st, cmd.Process.Pid)
	}
	got := supervisor.Descendants(os.Getpid())
	if !slices.Contains(got, childPid) {
		t.Fatalf("descendants = %v, missing %d, the child of a process whose main thread exited", got, childPid)
	}
	if slices.Contains(got, cmd.Process.Pid) {
		t.Fatalf("descendants = %v lists the zombie %d", got, cmd.Process.Pid)
	}
}
