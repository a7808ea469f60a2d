// Command etcd builds the real etcd server at a pinned version, so the store
// benchmark can compare Cairn with the peer it imitates without downloading a
// prebuilt binary. It lives in its own module to keep the etcd server's
// dependencies out of the main build.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
