package main

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
)

// ExecSpec is what the agent hands to `node-agent pod-exec` (run in fresh mount and UTS
// namespaces): the hostname, the bind mounts, and the process to exec.
type ExecSpec struct {
	Hostname   string   `json:"hostname"`
	Binary     string   `json:"binary"`
	Argv       []string `json:"argv"`
	WorkingDir string   `json:"workingDir"`
	Mounts     []Mount  `json:"mounts"`
}

func podExecMain(args []string) {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "keep-e2e pod-exec: "+format+"\n", a...)
		os.Exit(127)
	}
	if len(args) != 1 {
		fail("usage: pod-exec SPEC.json")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fail("%v", err)
	}
	var s ExecSpec
	if err := json.Unmarshal(b, &s); err != nil {
		fail("%v", err)
	}
	// Our mounts must not propagate back to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail("make / private: %v", err)
	}
	if err := syscall.Sethostname([]byte(s.Hostname)); err != nil {
		fail("sethostname: %v", err)
	}
	for _, m := range s.Mounts {
		if err := syscall.Mount(m.Src, m.Dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fail("bind %s -> %s: %v", m.Src, m.Dst, err)
		}
		if m.ReadOnly {
			if err := syscall.Mount("", m.Dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				fail("remount ro %s: %v", m.Dst, err)
			}
		}
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := os.Chdir(wd); err != nil {
		fail("chdir %s: %v", wd, err)
	}
	if err := syscall.Exec(s.Binary, s.Argv, os.Environ()); err != nil {
		fail("exec %s: %v", s.Binary, err)
	}
}
