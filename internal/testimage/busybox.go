package testimage

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BusyboxRef names the busybox image in the archives this package writes.
const BusyboxRef = "cairn.test/busybox:latest"

// busyboxPath is where Debian's busybox-static installs its binary.
const busyboxPath = "/bin/busybox"

// defaultPath is the PATH of the images built here.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Users and groups of the busybox image, for tests of user switching.
const (
	// UserUID is the uid of the image's "user" account.
	UserUID = 1000
	// UserGID is the primary gid of the image's "user" account.
	UserGID = 1000
	// ExtraGID is a supplementary group ("extra") that "user" belongs to.
	ExtraGID = 1001
)

const passwd = `root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/home/user:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
`

const group = `root:x:0:
user:x:1000:
extra:x:1001:user
nogroup:x:65534:
`

// BusyboxImage returns a one-layer image with /bin/busybox, a symlink for
// each of its applets, /etc/passwd and /etc/group (root, user 1000, nobody)
// and "sh" as its command.
func BusyboxImage(t testing.TB) v1.Image {
	t.Helper()
	files := busyboxFiles(t)
	layer, err := Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(v1.Config{Cmd: []string{"sh"}, Env: []string{defaultPath}}, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Busybox writes BusyboxImage as an OCI layout tar in a temporary
// directory and returns its path and the image reference it carries.
func Busybox(t testing.TB) (tarPath, ref string) {
	t.Helper()
	tarPath = filepath.Join(t.TempDir(), "busybox-oci.tar")
	if err := WriteOCILayoutTar(tarPath, map[string]v1.Image{BusyboxRef: BusyboxImage(t)}); err != nil {
		t.Fatal(err)
	}
	return tarPath, BusyboxRef
}

// BusyboxDockerArchive writes BusyboxImage in the format of `docker save`
// and returns its path and the image reference it carries.
func BusyboxDockerArchive(t testing.TB) (tarPath, ref string) {
	t.Helper()
	tarPath = filepath.Join(t.TempDir(), "busybox-docker.tar")
	if err := WriteDockerArchive(tarPath, BusyboxRef, BusyboxImage(t)); err != nil {
		t.Fatal(err)
	}
	return tarPath, BusyboxRef
}

// busyboxFiles lists the files of the busybox layer.
func busyboxFiles(t testing.TB) []File {
	t.Helper()
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		missing(t, "busybox-static is not installed (apt-get install busybox-static): %v", err)
	}
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		t.Fatalf("testimage: busybox --list-full: %v", err)
	}
	files := []File{
		{Path: "bin/busybox", Mode: 0o755, Data: bin},
		{Path: "dev", Mode: fs.ModeDir | 0o755},
		{Path: "proc", Mode: fs.ModeDir | 0o555},
		{Path: "sys", Mode: fs.ModeDir | 0o555},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "root", Mode: fs.ModeDir | 0o700},
		{Path: "home/user", Mode: fs.ModeDir | 0o755, UID: UserUID, GID: UserGID},
		{Path: "etc/passwd", Data: []byte(passwd)},
		{Path: "etc/group", Data: []byte(group)},
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" || applet == "linuxrc" {
			continue
		}
		files = append(files, File{Path: applet, Mode: fs.ModeSymlink, Link: "/bin/busybox"})
	}
	return files
}

// missing skips the test for a missing host tool, or fails it when the
// environment says every prerequisite must be there.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CAIRN_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("testimage: "+format, args...)
	}
	t.Skipf("testimage: "+format, args...)
}
