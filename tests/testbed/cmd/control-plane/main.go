// Command control-plane is the virtual GPU cluster's real control plane in one binary: the upstream
// etcd server (go.etcd.io/etcd/server/v3, the version k8s.io/kubernetes requires), kube-apiserver,
// kube-controller-manager and kube-scheduler (k8s.io/kubernetes), built from the Go modules by gpuops'
// testbed. build.sh links it once and names it four times (hard links); the name it is started under
// picks the component, which then runs its own upstream command unchanged.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "etcd" {
		etcdmain.Main(os.Args)
		return
	}
	if command, ok := commands[name]; ok {
		os.Exit(cli.Run(command()))
	}
	fmt.Fprintf(os.Stderr, "%s: start this binary as etcd, kube-apiserver, kube-controller-manager or kube-scheduler\n", name)
	os.Exit(2)
}
