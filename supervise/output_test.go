package supervise

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOutput(t *testing.T) {
	t.Parallel()
	t.Run("separate writers", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr syncBuffer
		s := start(t, Options{Command: shell("echo out; echo err >&2"), Stdout: &stdout, Stderr: &stderr})
		wait(t, s, 5*time.Second)
		if got := stdout.String(); got != "out\n" {
			t.Errorf("stdout = %q, want %q", got, "out\n")
		}
		if got := stderr.String(); got != "err\n" {
			t.Errorf("stderr = %q, want %q", got, "err\n")
		}
	})
	t.Run("one writer", func(t *testing.T) {
		t.Parallel()
		var out syncBuffer
		s := start(t, Options{Command: shell("echo a; echo b >&2; echo c"), Stdout: &out, Stderr: &out})
		wait(t, s, 5*time.Second)
		if got, want := out.String(), "a\nb\nc\n"; got != want {
			t.Errorf("output = %q, want %q", got, want)
		}
	})
	t.Run("across restarts", func(t *testing.T) {
		t.Parallel()
		var out syncBuffer
		s := start(t, Options{
			Command: shell("echo run; exit 1"), Stdout: &out,
			Restart: OnFailure, MaxRestarts: 2, Backoff: time.Millisecond,
		})
		wait(t, s, 5*time.Second)
		if got, want := out.String(), "run\nrun\nrun\n"; got != want {
			t.Errorf("output = %q, want %q", got, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := start(t, Options{Command: shell("echo direct"), Stdout: f})
		wait(t, s, 5*time.Second)
		b, _ := os.ReadFile(f.Name())
		if got := string(b); got != "direct\n" {
			t.Errorf("file = %q, want %q", got, "direct\n")
		}
	})
	t.Run("failing writer", func(t *testing.T) {
		t.Parallel()
		// A megabyte fills the pipe many times over: the agent must not
		// block, nor die of SIGPIPE.
		s := start(t, Options{Command: shell("head -c 1000000 /dev/zero"), Stdout: failingWriter{}})
		wait(t, s, 5*time.Second)
		if got := s.ExitCode(); got != 0 {
			t.Errorf("ExitCode() = %d, want 0", got)
		}
	})
	t.Run("held open by a leftover child", func(t *testing.T) {
		t.Parallel()
		var out syncBuffer
		s := start(t, Options{Command: shell("sleep 10 & echo hi"), Stdout: &out})
		pid := next(t, s, time.Second).PID
		t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
		wait(t, s, outputWait+3*time.Second)
		if got := out.String(); got != "hi\n" {
			t.Errorf("output = %q, want %q", got, "hi\n")
		}
	})
}

func TestEnvAndDir(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("#!/bin/sh\necho \"$GREETING\"\npwd -P\nexit 4\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	s := start(t, Options{Command: []string{"./agent.sh"}, Dir: dir, Env: []string{"GREETING=hello"}, Stdout: &out})
	wait(t, s, 5*time.Second)
	if got, want := out.String(), "hello\n"+dir+"\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if got := s.ExitCode(); got != 4 {
		t.Errorf("ExitCode() = %d, want 4", got)
	}
}
