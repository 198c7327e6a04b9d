// pause: the process that holds a Pod's namespaces open (the kubelet's "sandbox"
// container). The lab cannot pull registry.k8s.io/pause, so dev/kube/node.sh builds
// this one (static, CGO_ENABLED=0) into an image of a single file.
//
// It waits for SIGINT or SIGTERM and exits 0; as PID 1 of a Pod that shares its
// process namespace it also reaps orphaned children, like the upstream pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
