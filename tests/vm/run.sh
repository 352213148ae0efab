#!/usr/bin/env bash
# tests/vm/run.sh - run a command as root in a small QEMU guest whose kernel has
# user_events, for hosts whose own kernel lacks it.  See tests/vm/README.md.
#
#   tests/vm/run.sh --setup              install qemu + build deps (apt, only what is
#                                        missing), build the guest kernel (cached)
#   tests/vm/run.sh [OPTIONS] 'COMMAND'  boot the guest, run COMMAND with bash as root
#                                        in the current directory, exit with its status
#                                        (124 timeout, 125 the guest broke)
#                                        (2: bad usage)
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
usage() { say "$* (see --help)"; exit 2; }

# --setup: idempotent; the kernel is rebuilt only when the source package version or
# guest.config changes (stamp file next to vmlinux).  A lock serialises parallel calls.
setup() {
    local t0=$SECONDS missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    if ((${#missing[@]})); then
        ((EUID == 0)) || die "run --setup as root: apt must install ${missing[*]}"
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

# kvm only where it is hardware-assisted: a /dev/kvm backed by PVM (kvm_pvm module,
# no vmx/svm flags, as on some cloud VMs) crawls with stock kernels, then fails.
accel() {
    case "${EHTOOL_GUEST_ACCEL:-}" in kvm|tcg) echo "$EHTOOL_GUEST_ACCEL"; return ;; esac
    if [[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
        echo kvm
    else
        echo tcg
    fi
}

timeout=1800 cpus=$(nproc) mem=2G keep=0
while (($# > 1)); do
    case "$1" in
        --timeout) timeout=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --mem) mem=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --) shift; break ;;
        -*) usage "unknown option $1" ;;
        *) break ;;
    esac
done
(($# == 1)) || usage "give one COMMAND, quoted"
[[ $HERE != *[[:space:],]* ]] || die "the checkout's path must not hold blanks or commas: $HERE"
[[ -f $KERNEL ]] || die "no guest kernel at $KERNEL: run $0 --setup"
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64: run $0 --setup"

out=$(realpath -m "${EHTOOL_GUEST_OUT:-/tmp/ehtool-guest-out}")
mkdir -p "$out"
run=$(mktemp -d /tmp/ehtool-guest.XXXXXX)
trap '((keep)) && say "kept $run" || rm -rf "$run"' EXIT

cwd=$(pwd -P)
printf '%s\n' "$1" >"$run/cmd"
echo "$cwd" >"$run/cwd"
echo "$out" >"$run/out"
export -p | grep -vE '^declare -x (PWD|OLDPWD|SHLVL|_)(=|$)' >"$run/env" || true
# A pyenv shim costs seconds per call under TCG: put the real interpreter first on PATH.
if [[ "$(command -v python3)" == */shims/python3 ]] && py=$(pyenv which python3 2>/dev/null); then
    echo "export PATH=\"${py%/*}:\$PATH\"" >>"$run/env"
fi
{   # writable (discarded) dirs: /tmp, /var, /root and the current dir
    printf '%s\n' /tmp /var /root
    case "$cwd/" in /|/tmp/|/var/|/root/|"$out"/*) ;; *) echo "$cwd" ;; esac
} >"$run/overlays"

if [[ $(accel) == kvm ]]; then accel=(-accel kvm -cpu host); else accel=(-accel tcg -cpu max); fi
share="security_model=none,multidevs=remap"
append="console=ttyS1 panic=-1 tsc=reliable clocksource=tsc init=$HERE/guest-init"
append+=" root=root rootfstype=9p ro"
append+=" rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose,access=any"

# The guest has no ACPI: only one CPU per socket makes the BIOS tables list every CPU.
set +e
timeout -k 5 "$timeout" qemu-system-x86_64 -nodefaults -no-user-config -display none \
    -no-reboot -M pc "${accel[@]}" -smp "$cpus,sockets=$cpus,cores=1,threads=1" -m "$mem" \
    -kernel "$KERNEL" -append "$append" \
    -virtfs "local,path=/,mount_tag=root,readonly=on,$share" \
    -virtfs "local,path=$run,mount_tag=ctl,$share" \
    -virtfs "local,path=$out,mount_tag=out,$share" \
    -chardev stdio,id=cmd,signal=off -serial chardev:cmd -serial "file:$run/console.log" \
    -device virtio-rng-pci </dev/null
qemu=$?
set -e
if [[ -s $run/status ]]; then
    status=$(<"$run/status")
    ((status != 125)) || tail -n 20 "$run/console.log" >&2
    exit "$status"
fi
((qemu != 124)) || { say "timeout after $timeout s"; exit 124; }
say "the guest ended without a status (qemu exit $qemu); end of its kernel log:"
tail -n 20 "$run/console.log" >&2 || true
exit 125
