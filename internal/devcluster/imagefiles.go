package devcluster

import (
	"debug/elf"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
)

// imageFile is a regular file of the demo image: its path in the image
// and where its content comes from on the host.
type imageFile struct {
	Path, Source string
	Mode         os.FileMode
}

// binaryFiles returns the files a binary needs to run in an otherwise
// empty root filesystem: itself (as /cairn), its ELF interpreter and
// the shared libraries it loads, at the paths the loader looks for them.
// A static binary needs only itself.
func binaryFiles(bin string) ([]imageFile, error) {
	files := []imageFile{{Path: demoBinaryPath, Source: bin, Mode: 0o755}}
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("devcluster: reading %s: %w", bin, err)
	}
	defer f.Close()
	interp, err := elfInterp(f)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %s: %w", bin, err)
	}
	if interp == "" {
		return files, nil
	}
	files = append(files, imageFile{Path: interp, Source: interp, Mode: 0o755})
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("devcluster: %s: %w", bin, err)
	}
	seen := map[string]bool{}
	for len(needed) > 0 {
		lib := needed[0]
		needed = needed[1:]
		if seen[lib] {
			continue
		}
		seen[lib] = true
		p, err := findLibrary(lib)
		if err != nil {
			return nil, fmt.Errorf("devcluster: %s needs %s: %w", bin, lib, err)
		}
		if p != interp {
			files = append(files, imageFile{Path: p, Source: p, Mode: 0o755})
		}
		more, err := importedLibraries(p)
		if err != nil {
			return nil, err
		}
		needed = append(needed, more...)
	}
	return files, nil
}

// elfInterp returns the program interpreter (PT_INTERP), "" for a static
// binary.
func elfInterp(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		raw := make([]byte, p.Filesz)
		if _, err := p.ReadAt(raw, 0); err != nil {
			return "", fmt.Errorf("reading PT_INTERP: %w", err)
		}
		return strings.TrimRight(string(raw), "\x00"), nil
	}
	return "", nil
}

func importedLibraries(p string) ([]string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, fmt.Errorf("devcluster: reading %s: %w", p, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("devcluster: %s: %w", p, err)
	}
	return libs, nil
}

// findLibrary looks a shared library up in the loader's usual
// directories, multiarch ones first as Debian's loader does.
func findLibrary(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range libraryDirs() {
		p := path.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s", strings.Join(libraryDirs(), ", "))
}

func libraryDirs() []string {
	triplet := map[string]string{
		"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu",
		"arm": "arm-linux-gnueabihf", "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu",
	}[runtime.GOARCH]
	var dirs []string
	if triplet != "" {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// libraryPath is the LD_LIBRARY_PATH that finds the files' libraries.
func libraryPath(files []imageFile) string {
	var dirs []string
	seen := map[string]bool{}
	for _, f := range files[1:] {
		d := path.Dir(f.Path)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}
