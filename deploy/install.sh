#!/usr/bin/env bash
# Installs Cairn on a server or a node: the binary, the systemd units, the
# example configurations and the data directories. Run it as root from a
# checkout (after `make build`) or from an unpacked release. It never
# overwrites a configuration file, never starts or restarts a service, and
# can be run again to upgrade the binary and the units.
set -euo pipefail

usage() {
	cat <<'EOF'
Usage: install.sh [--bin FILE] [--prefix DIR] [--destdir DIR]

  --bin FILE     the cairn binary to install (default: bin/cairn of the
                 checkout, or the cairn next to deploy/ in a release);
                 cairn-shim and cairn-helper are taken from beside it
  --prefix DIR   where the binary goes: DIR/bin/cairn (default /usr/local);
                 the units' ExecStart follows it
  --destdir DIR  install under DIR instead of / (also: DESTDIR=DIR), to
                 stage a package or to inspect the layout

Installs:
  PREFIX/bin/cairn                              0755, replaced when it differs
  PREFIX/bin/cairn-{shim,helper}                0755, likewise (the agent's)
  /etc/systemd/system/cairn-{server,agent}.service  0644, replaced
  /etc/cairn/                                   0755
  /etc/cairn/{cluster.env,server1..4.yaml,agent.yaml}  0644, only when missing
  /var/lib/cairn/{,server,agent}                0700 (data directories)
  /var/backups/cairn                            0700 (snapshot copies)
EOF
}

die() {
	echo "install.sh: $*" >&2
	exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=""
prefix=/usr/local
destdir=${DESTDIR:-}

while [ $# -gt 0 ]; do
	case $1 in
	--bin) bin=${2:?--bin needs a file}; shift 2 ;;
	--bin=*) bin=${1#--bin=}; shift ;;
	--prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
	--prefix=*) prefix=${1#--prefix=}; shift ;;
	--destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
	--destdir=*) destdir=${1#--destdir=}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

case $prefix in
/*) ;;
*) die "--prefix must be an absolute path, not $prefix" ;;
esac
prefix=${prefix%/}
destdir=${destdir%/}

if [ -z "$bin" ]; then
	# cd, not "$here/..", so that a symlinked deploy/ still finds its release.
	top=$(cd "$here/.." && pwd)
	for candidate in "$top/bin/cairn" "$top/cairn"; do
		if [ -f "$candidate" ]; then
			bin=$candidate
			break
		fi
	done
	[ -n "$bin" ] || die "no cairn binary in $top/bin/cairn or $top/cairn: run \`make build\` or pass --bin FILE"
fi
if ! [ -f "$bin" ] || ! [ -x "$bin" ]; then
	die "--bin $bin is not an executable file"
fi
# A binary for another architecture or a truncated download fails here,
# before anything is installed.
version=$("$bin" version) || die "$bin does not run on this machine"

if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
	die "run as root (or pass --destdir DIR to install elsewhere)"
fi

# dir MODE PATH creates one of Cairn's directories and sets its mode, also
# when it exists.
dir() {
	install -d -m "$1" "$destdir$2"
	chmod "$1" "$destdir$2"
}

# sysdir PATH creates a system directory when it is missing, and leaves an
# existing one as it is.
sysdir() {
	[ -d "$destdir$1" ] || install -d -m 0755 "$destdir$1"
}

# config SRC DEST installs a configuration file unless one is there.
config() {
	if [ -e "$destdir$2" ]; then
		echo "kept      $2 (exists)"
		return
	fi
	install -m 0644 "$1" "$destdir$2"
	echo "installed $2"
}

sysdir "$prefix/bin"
target=$destdir$prefix/bin/cairn
if [ -e "$target" ] && { [ "$bin" -ef "$target" ] || cmp -s "$bin" "$target"; }; then
	echo "kept      $prefix/bin/cairn (same binary: $version)"
else
	# Copy then rename, so a running server keeps its old binary intact and
	# the path never holds half a file.
	install -m 0755 "$bin" "$target.new"
	mv -f "$target.new" "$target"
	echo "installed $prefix/bin/cairn ($version)"
fi
# The agent's container shim and helper go next to cairn, where the agent
# looks for them: without cairn-shim the embedded runtime cannot start
# containers; without cairn-helper the agent runs its own binary for
# execs instead (slower). One left from another version is removed
# rather than kept.
for name in cairn-shim cairn-helper; do
	src=$(dirname "$bin")/$name
	target=$destdir$prefix/bin/$name
	if [ -f "$src" ] && [ -x "$src" ]; then
		if ! { [ -e "$target" ] && { [ "$src" -ef "$target" ] || cmp -s "$src" "$target"; }; }; then
			install -m 0755 "$src" "$target.new"
			mv -f "$target.new" "$target"
			echo "installed $prefix/bin/$name"
		fi
	else
		case $name in
		cairn-shim) echo "warning: no cairn-shim next to $bin (make build makes it): an agent on the embedded runtime cannot start containers" >&2 ;;
		*) echo "warning: no $name next to $bin: the agent will run execs with cairn itself (slower)" >&2 ;;
		esac
		rm -f "$target"
	fi
done

sysdir /etc/systemd/system
for unit in cairn-server.service cairn-agent.service; do
	sed "s#/usr/local/bin/cairn#$prefix/bin/cairn#g" "$here/systemd/$unit" >"$destdir/etc/systemd/system/$unit.new"
	chmod 0644 "$destdir/etc/systemd/system/$unit.new"
	mv -f "$destdir/etc/systemd/system/$unit.new" "$destdir/etc/systemd/system/$unit"
	echo "installed /etc/systemd/system/$unit"
done

dir 0755 /etc/cairn
for example in "$here"/examples/*; do
	config "$example" "/etc/cairn/$(basename "$example")"
done

dir 0700 /var/lib/cairn
dir 0700 /var/lib/cairn/server
dir 0700 /var/lib/cairn/agent
sysdir /var/backups
dir 0700 /var/backups/cairn

if [ -z "$destdir" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi

cat <<EOF

Next (docs/runbooks/bootstrap.md): on a server, create /etc/cairn/server.yaml
from /etc/cairn/serverN.yaml and run \`systemctl enable --now cairn-server\`;
on a node, edit /etc/cairn/agent.yaml and run \`systemctl enable --now cairn-agent\`.
EOF
