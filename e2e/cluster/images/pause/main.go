// The sandbox ("pause") container of the e2e nodes mode, built into registry.k8s.io/pause:3.10 by
// e2e/cluster/images.ts: no registry is reachable from the test nodes, so the image is made here.
//
// It is PID 1 of every Pod sandbox: it blocks until SIGINT or SIGTERM (the runtime's stop) and exits 0, and
// reaps any child re-parented to it (with a shared PID namespace, orphans of the Pod's containers end up here;
// unreaped they stay zombies). Static (CGO_ENABLED=0), so the image needs nothing but this file.
//
// With `-v` it prints its version and exits 0, as the real pause.c does: kubeadm's upgrade health check runs
// a Job of the pause image with args ["-v"] and waits for it to complete.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	for _, arg := range os.Args[1:] {
		if strings.EqualFold(arg, "-v") {
			fmt.Println("pause.c auo-e2e")
			os.Exit(0)
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	children := make(chan os.Signal, 8)
	signal.Notify(children, syscall.SIGCHLD)
	go func() {
		// One SIGCHLD may stand for several exits (signals coalesce): reap until none is left.
		for range children {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}()
	<-stop
	os.Exit(0)
}
