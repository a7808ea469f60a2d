package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// defaultKubeconfig is where `cairn server --write-kubeconfig` and
// `make run` leave the admin kubeconfig, so that `cairn kubectl` works with
// no flags, as k3s's embedded kubectl does.
func defaultKubeconfig() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cairn", "admin.kubeconfig")
}

// newKubectlCmd embeds the real kubectl.
func newKubectlCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl [kubectl flags and command]",
		Short:              "The embedded kubectl; uses ~/.cairn/admin.kubeconfig unless KUBECONFIG or --kubeconfig say otherwise",
		DisableFlagParsing: true,
		PersistentPreRunE:  func(*cobra.Command, []string) error { return nil },
		Run: func(_ *cobra.Command, args []string) {
			if os.Getenv("KUBECONFIG") == "" && !hasKubeconfigFlag(args) {
				if path := defaultKubeconfig(); path != "" {
					if _, err := os.Stat(path); err == nil {
						os.Setenv("KUBECONFIG", path)
					}
				}
			}
			kubectl := kubectlcmd.NewDefaultKubectlCommand()
			kubectl.SetArgs(args)
			os.Exit(cli.Run(kubectl))
		},
	}
}

func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--kubeconfig" || len(a) > 13 && a[:13] == "--kubeconfig=" {
			return true
		}
	}
	return false
}
