package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"cairn/node/images"

	"github.com/spf13/cobra"
)

// defaultAgentDataDir is the agent's data directory unless configured.
const defaultAgentDataDir = "/var/lib/cairn/agent"

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Import, list and remove the images of a node's embedded runtime",
		Long: `Manage the image store of a node's embedded runtime, under the agent's data
directory. The commands work whether or not the agent runs: the store is
locked while it changes.

  cairn image import busybox.tar            # docker save, or an OCI layout tar
  cairn image ls
  cairn image rm docker.io/library/busybox:latest`,
	}
	cmd.PersistentFlags().String("data-dir", defaultAgentDataDir, "the agent's data directory")
	cmd.AddCommand(newImageImportCmd(), newImageListCmd(), newImageRemoveCmd())
	return cmd
}

func openImageStore(cmd *cobra.Command) (*images.Store, error) {
	dir, _ := cmd.Flags().GetString("data-dir")
	if dir == "" {
		return nil, fmt.Errorf("--data-dir is required (the agent's data directory, e.g. %s)", defaultAgentDataDir)
	}
	return images.Open(images.Config{Dir: images.Dir(dir)})
}

func newImageImportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE.tar...",
		Short: "Load the images of OCI layout tars or docker-archives (docker save) into the store",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := openImageStore(cmd)
			if err != nil {
				return err
			}
			for _, file := range args {
				imgs, err := store.Import(cmd.Context(), file)
				if err != nil {
					return err
				}
				for _, img := range imgs {
					name := strings.Join(img.RepoTags, ", ")
					if name == "" {
						name = "(untagged)"
					}
					fmt.Fprintf(cmd.OutOrStdout(), "imported %s %s\n", name, img.ID)
				}
			}
			return nil
		},
	}
}

func newImageListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the stored images",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := openImageStore(cmd)
			if err != nil {
				return err
			}
			imgs, err := store.List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "IMAGE\tID\tSIZE")
			for _, img := range imgs {
				names := img.RepoTags
				if len(names) == 0 {
					names = []string{"<none>"}
				}
				for _, n := range names {
					fmt.Fprintf(w, "%s\t%s\t%.1fMB\n", n, strings.TrimPrefix(img.ID, "sha256:")[:12], float64(img.Size)/1e6)
				}
			}
			return w.Flush()
		},
	}
}

func newImageRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm IMAGE...",
		Aliases: []string{"remove"},
		Short:   "Remove images (by name or ID) and every name they have",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := openImageStore(cmd)
			if err != nil {
				return err
			}
			for _, ref := range args {
				if err := store.Remove(ref); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", ref)
			}
			return nil
		},
	}
}
