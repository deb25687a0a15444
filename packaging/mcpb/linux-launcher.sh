#!/bin/sh
# Linux entry point of the MCPB bundle (server/linux/nandi-proxmox-mcp). An MCPB manifest picks
# a command per operating system only — platform_overrides keys are darwin, win32 and linux,
# with no key for the CPU — so the one bundle carries a static binary per CPU
# (server/linux/x86_64/, server/linux/aarch64/) and this picks the one for this machine and
# replaces itself with it (`exec`: no shell stays behind, arguments, stdio and the exit
# status are the binary's own). POSIX sh only: every Linux has /bin/sh.
set -u
dir=$(dirname "$0")
machine=$(uname -m)
case "$machine" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *)
        echo "nandi-proxmox-mcp: this bundle has no binary for the CPU '$machine' (it carries x86_64 and aarch64)" >&2
        exit 1
        ;;
esac
bin="$dir/$arch/nandi-proxmox-mcp"
if [ ! -x "$bin" ]; then
    echo "nandi-proxmox-mcp: $bin is missing from this bundle (or not executable)" >&2
    exit 1
fi
exec "$bin" "$@"
