// Package supervise starts the agent's command, forwards signals to its
// process group, reaps orphans, restarts it on failure, and reports its exit
// code.
//
// The agent runs in a process group of its own, so Signal and Stop reach
// everything under a wrapper such as `sh -c 'python3 agent.py'` or
// `npm start`, not only the wrapper; and it gets SIGKILL if the sidecar dies
// first (Linux's parent-death signal, which only reaches the agent itself).
// The group outlives the agent's own exit: what a run left behind gets
// SIGTERM when the run ends and SIGKILL before the next run starts, and
// Stop signals the group even when the agent itself has already exited.
//
// Exactly one goroutine owns wait. Without Options.ReapOrphans it waits for
// the agent's pid only, leaving the process's other children alone. With
// ReapOrphans the process becomes a child subreaper and one goroutine reaps
// every child that exits, with wait4(-1) on each SIGCHLD and on a slow
// ticker: it hands the agent's status to the supervisor and discards the
// rest (orphans re-parented to the sidecar, which as a container's PID 1
// nobody else would reap). While such a supervisor runs, nothing else in the
// process may wait for a child of its own (os/exec's Cmd.Wait would lose the
// race), and only one ReapOrphans supervisor may run at a time.
//
// The agent is never waited for after it has been reaped, and Signal
// never reaches a reaped agent: starting it, reaping it and signalling its
// group all happen under one lock, so a recycled pid can never be mistaken
// for the agent. Ending a run's leftovers signals its group by number after
// the leader is gone; the number stays the group's while any member lives,
// and once the group is empty only a pid wrap that makes it a new group
// leader's could misdirect it.
//
// All of this holds on Linux, which has Pdeathsig, PR_SET_CHILD_SUBREAPER
// and waitid (reap_linux.go). The package also builds for macOS, where
// `sidecar dev` runs on a developer's machine (reap_darwin.go): process
// groups and Stop work the same, but there is no parent-death signal (an
// agent outlives a sidecar killed with SIGKILL) and no subreaper (orphaned
// grandchildren go to launchd, not to the sidecar's reaper).
package supervise
