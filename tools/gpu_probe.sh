#!/bin/sh
# Print, from a real NVIDIA GPU host, the files and tool outputs the
# nvidia driver's test fixtures mirror (tests/fixtures/drivers/nvidia/,
# gpu_host.py, vgpu_vfio_host.py), so they can be checked byte for byte.
# Read only: it writes nothing to sysfs and changes no GPU. Not part of
# the test suite.
#
#   tools/gpu_probe.sh [OUTDIR]     (default: ./gpu-probe-<hostname>)
#
# Each file is copied as read (cat, no reformatting) into OUTDIR; a
# command's stdout goes to <name>.out, its stderr and exit status to
# <name>.err and <name>.rc, so a refusal is recorded too.
set -u
OUT=${1:-./gpu-probe-$(hostname)}
mkdir -p "$OUT" || exit 1
SYS=${SYSFS_ROOT:-/sys}

run() {     # run NAME COMMAND...: outputs under $OUT/NAME.{out,err,rc}
    name=$1; shift
    if command -v "$1" >/dev/null 2>&1; then
        timeout 60 "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
        echo $? >"$OUT/$name.rc"
    else
        echo "$1: not found" >"$OUT/$name.err"; echo 127 >"$OUT/$name.rc"
    fi
}

copy() {    # copy FILE DEST: the file's bytes, or why it could not be read
    if [ -e "$1" ]; then
        cat "$1" >"$2" 2>"$2.err" || true
        [ -s "$2.err" ] || rm -f "$2.err"
    fi
}

uname -r >"$OUT/uname-r.out"
run nvidia-smi-q-x nvidia-smi -q -x
run nvidia-smi-q nvidia-smi -q
run nvidia-smi-L nvidia-smi -L
run mig-lgip nvidia-smi mig -lgip
run mig-lgipp nvidia-smi mig -lgipp
run mig-lgi nvidia-smi mig -lgi
run mig-lci nvidia-smi mig -lci
run vgpu-s-v nvidia-smi vgpu -s -v
run vgpu-c-v nvidia-smi vgpu -c -v
run vgpu-q nvidia-smi vgpu -q
[ -d "$SYS/class/mdev_bus" ] && ls -l "$SYS/class/mdev_bus" >"$OUT/mdev_bus.ls"

for dev in "$SYS"/bus/pci/devices/*; do
    [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] || continue
    case "$(cat "$dev/class" 2>/dev/null)" in 0x03*) ;; *) continue ;; esac
    addr=$(basename "$dev")
    d="$OUT/pci/$addr"
    mkdir -p "$d"
    run "pci/$addr/lspci-vvv" lspci -vvv -nn -s "$addr"
    ls -l "$dev/" >"$d/ls-l" 2>&1
    for f in vendor device subsystem_vendor subsystem_device class \
             revision numa_node local_cpulist driver_override \
             sriov_totalvfs sriov_numvfs sriov_offset sriov_stride \
             sriov_vf_device current_link_speed current_link_width \
             max_link_speed max_link_width aer_dev_correctable \
             aer_dev_fatal aer_dev_nonfatal; do
        copy "$dev/$f" "$d/$f"
    done
    readlink "$dev/driver" >"$d/driver.link" 2>/dev/null
    readlink "$dev/physfn" >"$d/physfn.link" 2>/dev/null
    for link in "$dev"/virtfn*; do
        [ -e "$link" ] && echo "$(basename "$link") -> $(readlink "$link")"
    done >"$d/virtfn.links"
    if [ -d "$dev/nvidia" ]; then
        ls -l "$dev/nvidia/" >"$d/nvidia.ls-l" 2>&1
        for f in creatable_vgpu_types current_vgpu_type gpu_instance_id \
                 placement_id vgpu_params; do
            copy "$dev/nvidia/$f" "$d/nvidia.$f"
        done
    fi
    if [ -d "$dev/mdev_supported_types" ]; then
        for t in "$dev"/mdev_supported_types/*; do
            for f in name available_instances device_api description; do
                copy "$t/$f" "$d/mdev.$(basename "$t").$f"
            done
        done
    fi
done
echo "written to $OUT"
