#!/usr/bin/env bash
# tests/vm/run.sh - run a command as root in a small QEMU guest whose kernel has
# user_events, for hosts whose own kernel lacks it.  See tests/vm/README.md.
#
#   tests/vm/run.sh --setup              install qemu + build deps (apt, only what is
#                                        missing), build the guest kernel (cached)
#   tests/vm/run.sh [OPTIONS] 'COMMAND'  boot the guest, run COMMAND with bash as root
#                                        in the current directory, exit with its status
#                                        (124 timeout, 125 the guest broke)
# OPTIONS: --timeout SECONDS (default 1800)  --cpus N (default: host cores)
#          --mem SIZE (default 2G)  --keep (keep the run dir with the console log)
# Environment: EHTOOL_GUEST_CACHE (default /var/cache/ehtool-guest),
#   EHTOOL_GUEST_OUT (default /tmp/ehtool-guest-out: written through to the host),
#   EHTOOL_GUEST_ACCEL=kvm|tcg (default: kvm only on VMX/SVM hardware, else tcg).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${EHTOOL_GUEST_CACHE:-/var/cache/ehtool-guest}
KERNEL=$CACHE/vmlinux
FRAGMENT=$HERE/guest.config
SRC_PKG=linux-source-6.12
PACKAGES=(qemu-system-x86 build-essential flex bison bc libelf-dev libssl-dev xz-utils "$SRC_PKG")

say() { echo "tests/vm: $*" >&2; }
die() { say "$*"; exit 125; }

# --setup: idempotent; the kernel is rebuilt only when the source package version or
# guest.config changes (stamp file next to vmlinux).  A lock serialises parallel calls.
setup() {
    local t0=$SECONDS missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    if ((${#missing[@]})); then
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    mkdir -p "$CACHE"
    exec 9>"$CACHE/lock"
    flock 9
    local ver stamp
    ver=$(dpkg-query -W -f '${Version}' "$SRC_PKG")
    stamp="$SRC_PKG $ver config $(sha256sum <"$FRAGMENT" | cut -c1-16)"
    if [[ -f $KERNEL && "$(cat "$CACHE/stamp" 2>/dev/null)" == "$stamp" ]]; then
        say "guest kernel up to date ($stamp)"
        return
    fi
    if [[ "$(cat "$CACHE/src/.ehtool-version" 2>/dev/null)" != "$ver" ]]; then
        say "unpacking /usr/src/$SRC_PKG.tar.xz"
        rm -rf "$CACHE/src" "$CACHE/build"
        mkdir -p "$CACHE/src"
        tar -xJf "/usr/src/$SRC_PKG.tar.xz" -C "$CACHE/src" --strip-components=1
        echo "$ver" >"$CACHE/src/.ehtool-version"
    fi
    local make=(make -s -C "$CACHE/src" O="$CACHE/build" ARCH=x86_64)
    mkdir -p "$CACHE/build"
    "${make[@]}" tinyconfig
    "$CACHE/src/scripts/kconfig/merge_config.sh" -m -O "$CACHE/build" \
        "$CACHE/build/.config" "$FRAGMENT" >/dev/null
    "${make[@]}" olddefconfig
    # every CONFIG_X=y of the fragment must have survived the dependency resolution
    local opt lost=()
    for opt in $(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=y$/\1/p' "$FRAGMENT"); do
        grep -qx "$opt=y" "$CACHE/build/.config" || lost+=("$opt")
    done
    ((${#lost[@]} == 0)) || die "guest.config options not taken: ${lost[*]}"
    say "building the guest kernel ($ver; ~6-10 min on 2 cores)"
    "${make[@]}" -j"$(nproc)" vmlinux
    cp "$CACHE/build/vmlinux" "$KERNEL.new"
    mv "$KERNEL.new" "$KERNEL"
    echo "$stamp" >"$CACHE/stamp"
    say "guest kernel built in $((SECONDS - t0)) s: $KERNEL"
}

case "${1:-}" in
    --setup) setup; exit 0 ;;
    -h|--help|"") sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
esac
