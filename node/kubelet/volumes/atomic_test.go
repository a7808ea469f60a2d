package volumes

import (
	"os"
	"path/filepath"
	"testing"
)

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name()[0] == '.' {
			continue
		}
		filepath.WalkDir(filepath.Join(dir, e.Name())+"/", func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(dir, path)
			out[rel] = string(b)
			return nil
		})
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = string(b)
		}
	}
	return out
}

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	steps := []struct {
		name        string
		payload     map[string]File
		wantChanged bool
		want        map[string]string
	}{
		{
			name:        "first write",
			payload:     map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}},
			wantChanged: true,
			want:        map[string]string{"a": "1", "sub/b": "2"},
		},
		{
			name:    "same content writes nothing",
			payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}},
			want:    map[string]string{"a": "1", "sub/b": "2"},
		},
		{
			name:        "mode change is a change",
			payload:     map[string]File{"a": {Data: []byte("1"), Mode: 0o400}, "sub/b": {Data: []byte("2"), Mode: 0o600}},
			wantChanged: true,
			want:        map[string]string{"a": "1", "sub/b": "2"},
		},
		{
			name:        "update drops removed keys",
			payload:     map[string]File{"a": {Data: []byte("one"), Mode: 0o644}, "c": {Data: []byte("3"), Mode: 0o644}},
			wantChanged: true,
			want:        map[string]string{"a": "one", "c": "3"},
		},
		{
			name:        "empty payload",
			payload:     map[string]File{},
			wantChanged: true,
			want:        map[string]string{},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			changed, err := WriteAtomic(dir, st.payload)
			if err != nil {
				t.Fatal(err)
			}
			if changed != st.wantChanged {
				t.Errorf("changed = %v, want %v", changed, st.wantChanged)
			}
			got := readAll(t, dir)
			if len(got) != len(st.want) {
				t.Errorf("files %v, want %v", got, st.want)
			}
			for k, v := range st.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for p, f := range st.payload {
				info, err := os.Stat(filepath.Join(dir, p))
				if err != nil || info.Mode().Perm() != f.Mode {
					t.Errorf("%s mode %v, want %v (%v)", p, info.Mode().Perm(), f.Mode, err)
				}
			}
			gens := 0
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.IsDir() && len(e.Name()) > 2 && e.Name()[:2] == ".." {
					gens++
				}
			}
			if gens != 1 {
				t.Errorf("%d generations left, want 1", gens)
			}
		})
	}
}

func TestWriteAtomicRefusesEscapes(t *testing.T) {
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "..data", ""} {
		t.Run(p, func(t *testing.T) {
			if _, err := WriteAtomic(t.TempDir(), map[string]File{p: {Data: []byte("x"), Mode: 0o644}}); err == nil {
				t.Errorf("path %q accepted", p)
			}
		})
	}
}
