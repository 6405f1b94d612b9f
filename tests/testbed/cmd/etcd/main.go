// Command etcd is the real etcd server (go.etcd.io/etcd/server/v3, the 3.6.x version that
// k8s.io/kubernetes requires), built from the Go module by gpuops' testbed.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
