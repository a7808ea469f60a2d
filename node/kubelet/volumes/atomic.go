package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// dataDir is the symlink to the current generation of a volume's files.
const dataDir = "..data"

// File is one file of a volume's payload.
type File struct {
	Data []byte
	Mode os.FileMode
}

// WriteAtomic makes dir show exactly the files of payload (keyed by
// relative path), switching from the old content to the new at once, so
// a reader never sees a mix. As the kubelet does, the files live in a
// hidden timestamped directory; dir/..data is a symlink to it, and each
// top-level name of the payload is a symlink through ..data:
//
//	dir/..2024_05_01_10_00_00.123456789/   the generation's files
//	dir/..data -> ..2024_05_01_10_00_00.123456789
//	dir/key    -> ..data/key
//	dir/sub    -> ..data/sub               (for the path sub/file)
//
// A new generation is written beside the old, then ..data is swapped with
// a rename, which is atomic. Nothing is written when the content is the
// same; changed reports whether it was not.
func WriteAtomic(dir string, payload map[string]File) (changed bool, err error) {
	for p := range payload {
		if err := checkPath(p); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("volumes: %w", err)
	}
	old, _ := os.Readlink(filepath.Join(dir, dataDir))
	if old != "" && same(filepath.Join(dir, old), payload) {
		return false, nil
	}
	gen, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("volumes: %w", err)
	}
	if err := os.Chmod(gen, 0o755); err != nil {
		return false, fmt.Errorf("volumes: %w", err)
	}
	for p, f := range payload {
		full := filepath.Join(gen, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, fmt.Errorf("volumes: %w", err)
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return false, fmt.Errorf("volumes: %w", err)
		}
		// WriteFile's mode passes through the umask.
		if err := os.Chmod(full, f.Mode.Perm()); err != nil {
			return false, fmt.Errorf("volumes: %w", err)
		}
	}
	tmp := filepath.Join(dir, dataDir+"_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		return false, fmt.Errorf("volumes: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDir)); err != nil {
		return false, fmt.Errorf("volumes: %w", err)
	}
	if err := linkTopLevel(dir, payload); err != nil {
		return false, err
	}
	if old != "" && old != filepath.Base(gen) {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return true, fmt.Errorf("volumes: removing the old generation: %w", err)
		}
	}
	return true, nil
}

// checkPath refuses payload paths that could leave the volume.
func checkPath(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return fmt.Errorf("volumes: invalid file path %q", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "" || strings.HasPrefix(part, "..") {
			return fmt.Errorf("volumes: invalid file path %q", p)
		}
	}
	return nil
}

// same reports whether generation dir gen holds exactly payload.
func same(gen string, payload map[string]File) bool {
	count := 0
	err := filepath.WalkDir(gen, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(gen, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra file")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.Mode.Perm() {
			return errors.New("mode differs")
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.Data) {
			return errors.New("content differs")
		}
		count++
		return nil
	})
	return err == nil && count == len(payload)
}

// linkTopLevel makes a symlink through ..data for each top-level name of
// payload and removes the user-visible names it no longer has.
func linkTopLevel(dir string, payload map[string]File) error {
	want := map[string]bool{}
	for p := range payload {
		top, _, _ := strings.Cut(p, "/")
		want[top] = true
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		link := filepath.Join(dir, n)
		target := filepath.Join(dataDir, n)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("volumes: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}
