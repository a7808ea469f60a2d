package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Cairn: a highly available, Kubernetes-compatible control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return loadConfig(cmd)
		},
	}
	root.PersistentFlags().String("config", "", "YAML file with flag values (keys are flag names); flags override CAIRN_* environment variables, which override the file")
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().String("log-format", "text", "log format: text or json")
	root.AddCommand(
		newVersionCmd(),
		newPKICmd(),
		newServerCmd(),
		newSnapshotCmd(),
		newEtcdctlCmd(),
		newKubectlCmd(),
		newBenchCmd(),
		newKubeconfigCmd(),
		newAPIServerCmd(),
		newControllerManagerCmd(),
		newSchedulerCmd(),
		newImageCmd(),
		newAgentCmd(),
		newDevCmd(),
		newDemoHTTPCmd(),
		newTokenCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cairn version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "cairn", version)
		},
	}
}

// loadConfig fills every flag the user did not set on the command line from
// the CAIRN_* environment or the --config YAML file, in that order.
func loadConfig(cmd *cobra.Command) error {
	v := viper.New()
	v.SetEnvPrefix("CAIRN")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if file, _ := cmd.Flags().GetString("config"); file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("reading config file %s: %w", file, err)
		}
		for _, key := range v.AllKeys() {
			if cmd.Flags().Lookup(key) == nil && cmd.Root().PersistentFlags().Lookup(key) == nil {
				return fmt.Errorf("config file %s: unknown key %q for %q (keys are the command's flag names, e.g. data-dir)", file, key, cmd.CommandPath())
			}
		}
	}
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed || f.Name == "config" {
			return
		}
		if !v.IsSet(f.Name) {
			return
		}
		val := v.Get(f.Name)
		var s string
		switch x := val.(type) {
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				parts[i] = fmt.Sprint(p)
			}
			s = strings.Join(parts, ",")
		default:
			s = fmt.Sprint(x)
		}
		if err := f.Value.Set(s); err != nil {
			firstErr = fmt.Errorf("invalid value %q for %s (from CAIRN_%s or the config file): %w",
				s, f.Name, strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")), err)
		}
	})
	return firstErr
}
