#!/usr/bin/env bash
# Makes the files a pipeline holds for one CoreOS bootimage build, laid out as
# coreos-assembler lays them out, for the --bootimage-file tests:
#   OUT/disk.raw            a GPT disk (sgdisk, the partitions of create_disk.sh) whose
#                           ext4 partition `boot` (mkfs.ext4 -d) holds the ostree BLS entry
#                           loader.1/entries/ostree-1-<os>.conf, `loader` -> loader.1;
#   OUT/disk.qcow2          that disk as qemu-img writes it (compressed clusters, -c),
#   OUT/disk-zstd.qcow2     and with zstd-compressed clusters;
#   OUT/disk.raw.gz, .xz    that disk compressed (as RHCOS and FCOS ship metal images);
#   OUT/live.iso            an ISO 9660 image (xorriso) with the build's volume ID.
# usage: make-bootimage.sh OUT BUILD_ID OS_NAME OS_ID LAYOUT
#   OS_NAME: the BLS title, @ID@ standing for the build ID ("Red Hat Enterprise Linux
#   CoreOS @ID@ (Ootpa)");
#   OS_ID: rhcos, fedora-coreos, scos; LAYOUT: 2019 (boot first, as 4.1-4.5 bootimages)
#   or 2020 (BIOS-BOOT, EFI-SYSTEM, boot, root, as later ones).
# ROOT_FILL_MIB=N (benches/bootimage-file.sh) grows the disk by N MiB and fills the start
# of `root` with that much of this machine's /usr (binaries and libraries, which
# compress as an OS tree does); by default `root` is empty.
set -euo pipefail
out=$1 id=$2 os_name=$3 os_id=$4 layout=$5
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
boot=$work/boot
mkdir -p "$boot/loader.1/entries" "$boot/ostree/$os_id-0123abcd"
ln -s loader.1 "$boot/loader"
cat >"$boot/loader.1/entries/ostree-1-$os_id.conf" <<ENTRY
title ${os_name/@ID@/$id} (ostree)
version 1
options ignition.firstboot rd.neednet=1 console=tty0 console=ttyS0,115200n8 ignition.platform.id=metal ostree=/ostree/boot.1/$os_id/0123abcd/0
linux /ostree/$os_id-0123abcd/vmlinuz
initrd /ostree/$os_id-0123abcd/initramfs.img
ENTRY
: >"$boot/ostree/$os_id-0123abcd/vmlinuz"
: >"$boot/ignition.firstboot"

disk=$out/disk.raw
rm -f "$disk"
fill=${ROOT_FILL_MIB:-0}
truncate -s $((640 + fill))M "$disk"
esp=C12A7328-F81F-11D2-BA4B-00A0C93EC93B bios=21686148-6449-6E6F-744E-656564454649
linux=0FC63DAF-8483-4772-8E79-3D69D8477DE4
case $layout in
2019) sgdisk -o -U 00000000-0000-4000-a000-000000000001 \
  -n 1:0:+384M -c 1:boot \
  -n 2:0:+127M -c 2:EFI-SYSTEM -t 2:$esp \
  -n 3:0:+1M -c 3:BIOS-BOOT -t 3:$bios \
  -n 4:0:0 -c 4:root -t 4:$linux "$disk" >/dev/null
  n=1 ;;
2020) sgdisk -o -U 00000000-0000-4000-a000-000000000001 \
  -n 1:0:+1M -c 1:BIOS-BOOT -t 1:$bios \
  -n 2:0:+127M -c 2:EFI-SYSTEM -t 2:$esp \
  -n 3:0:+384M -c 3:boot -t 3:$linux \
  -n 4:0:0 -c 4:root -t 4:$linux "$disk" >/dev/null
  n=3 ;;
*) echo "layout: 2019 or 2020" >&2; exit 2 ;;
esac
first=$(sgdisk -i "$n" "$disk" | awk '/^First sector/ {print $3}')
last=$(sgdisk -i "$n" "$disk" | awk '/^Last sector/ {print $3}')
mkfs.ext4 -q -F -L boot -d "$boot" -E offset=$((first * 512)) "$disk" $(((last - first + 1) / 2))k
if ((fill > 0)); then
  root_first=$(sgdisk -i 4 "$disk" | awk '/^First sector/ {print $3}')
  (set +o pipefail
    find /usr/lib /usr/bin -type f -size +64k -print0 2>/dev/null | xargs -0 cat 2>/dev/null |
      head -c "${fill}M" |
      dd of="$disk" bs=1M seek=$((root_first * 512)) oflag=seek_bytes conv=notrunc status=none)
fi
qemu-img convert -q -c -f raw -O qcow2 "$disk" "$out/disk.qcow2"
qemu-img convert -q -c -f raw -O qcow2 -o compression_type=zstd "$disk" "$out/disk-zstd.qcow2"
gzip -1 -c "$disk" >"$out/disk.raw.gz"
xz -0 -T2 -c "$disk" >"$out/disk.raw.xz"
mkdir -p "$work/iso/coreos"
printf '{"build": "%s"}\n' "$id" >"$work/iso/coreos/igninfo.json"
xorriso -as mkisofs -quiet -V "$os_id-$id" -o "$out/live.iso" "$work/iso" 2>/dev/null
