#!/usr/bin/env bash
# Makes the files a pipeline holds for one CoreOS bootimage build, laid out as
# coreos-assembler lays them out, for the --bootimage-file tests:
#   OUT/disk.raw            a GPT disk (sgdisk, the partitions of create_disk.sh) whose
#                           ext4 partition `boot` (mkfs.ext4 -d) holds the ostree BLS entry
#                           loader.1/entries/ostree-1-<os>.conf, `loader` -> loader.1;
#   OUT/disk.qcow2          that disk as qemu-img writes it (compressed clusters, -c),
#   OUT/disk-zstd.qcow2     and with zstd-compressed clusters;
#   OUT/disk.raw.gz, .xz    that disk compressed (as RHCOS and FCOS ship metal images);
#   OUT/disk.vhd, .vhd.gz   that disk as a fixed VHD (qemu-img -O vpc, as Azure takes it);
#   OUT/gcp.tar.gz          that disk as disk.raw in a GNU sparse tar (oldgnu), gzip, as
#                           GCP takes its images;
#   OUT/disk.ova            an OVA (tar, OVF first) of the disk as a streamOptimized VMDK,
#                           the OVF naming the build in its ProductSection, as
#                           coreos-assembler writes it; OUT/noversion.ova without it;
#   OUT/disk.vmdk           that VMDK alone;
#   OUT/disk-4kn.raw        the disk on 4096-byte sectors (a GPT of 4 KiB blocks, ext4 of 4 KiB);
#   OUT/live.iso            an ISO 9660 image (xorriso) with the build's volume ID, an El
#                           Torito boot record (isolinux) and an isohybrid MBR.
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
mkdir -p "$work/iso/coreos" "$work/iso/isolinux"
printf '{"build": "%s"}\n' "$id" >"$work/iso/coreos/igninfo.json"
cp /usr/lib/ISOLINUX/isolinux.bin "$work/iso/isolinux/"
xorriso -as mkisofs -quiet -V "$os_id-$id" -o "$out/live.iso" \
  -isohybrid-mbr /usr/lib/ISOLINUX/isohdpfx.bin -b isolinux/isolinux.bin -c isolinux/boot.cat \
  -no-emul-boot -boot-load-size 4 -boot-info-table "$work/iso" 2>/dev/null

# Azure: a fixed VHD, plain and gzip.
qemu-img convert -q -f raw -O vpc -o subformat=fixed,force_size=on "$disk" "$out/disk.vhd"
gzip -1 -c "$out/disk.vhd" >"$out/disk.vhd.gz"

# GCP: disk.raw in a sparse GNU tar (its holes not stored), gzip.
mkdir -p "$work/gcp"
cp --sparse=always "$disk" "$work/gcp/disk.raw"
tar --sparse --format=oldgnu -C "$work/gcp" -czf "$out/gcp.tar.gz" disk.raw
rm -f "$work/gcp/disk.raw"

# vSphere: an OVA, the OVF first, then the streamOptimized VMDK.
mkdir -p "$work/ova"
qemu-img convert -q -f raw -O vmdk -o subformat=streamOptimized,adapter_type=lsilogic \
  "$disk" "$work/ova/disk.vmdk"
ovf() { # ovf VERSION_ELEMENT
  cat <<OVF
<?xml version="1.0"?>
<Envelope xmlns="http://schemas.dmtf.org/ovf/envelope/1" xmlns:ovf="http://schemas.dmtf.org/ovf/envelope/1">
  <References><File ovf:href="disk.vmdk" ovf:id="file1" ovf:size="$(stat -c %s "$work/ova/disk.vmdk")"/></References>
  <DiskSection><Info>Virtual disk information</Info>
    <Disk ovf:capacity="$(stat -c %s "$disk")" ovf:capacityAllocationUnits="byte" ovf:diskId="vmdisk1" ovf:fileRef="file1" ovf:format="http://www.vmware.com/interfaces/specifications/vmdk.html#streamOptimized"/>
  </DiskSection>
  <VirtualSystem ovf:id="image"><Info>A virtual machine</Info><Name>$os_id-$id</Name>
    <ProductSection><Info>Information about the installed software</Info>
      <Product>${os_name/ @ID@*/}</Product><Vendor>CoreOS</Vendor>$1
      <Property ovf:userConfigurable="true" ovf:type="string" ovf:key="guestinfo.ignition.config.data" ovf:value=""><Label>Ignition config data</Label></Property>
    </ProductSection>
  </VirtualSystem>
</Envelope>
OVF
}
ovf "<Version>$id</Version>" >"$work/ova/disk.ovf"
tar --format=ustar -C "$work/ova" -cf "$out/disk.ova" disk.ovf disk.vmdk
ovf "" >"$work/ova/disk.ovf"
tar --format=ustar -C "$work/ova" -cf "$out/noversion.ova" disk.ovf disk.vmdk
mv "$work/ova/disk.vmdk" "$out/disk.vmdk"

# A 4Kn disk: the same partitions on 4096-byte sectors, `boot` third.
k=$out/disk-4kn.raw
rm -f "$k"
truncate -s 640M "$k"
# sgdisk and sfdisk write 512-byte sectors to a file: the GPT is written here, as the
# UEFI specification lays it out for 4096-byte blocks (primary and backup).
kfirst=$(python3 - "$k" "$bios" "$esp" "$linux" <<'GPT'
import struct, sys, uuid, zlib
path, bios, esp, linux = sys.argv[1:]
B = 4096
total = 640 * 2**20 // B
parts = [(bios, "BIOS-BOOT", 256, 256), (esp, "EFI-SYSTEM", 512, 32512),
         (linux, "boot", 33024, 98304)]
parts.append((linux, "root", 33024 + 98304, total - 6 - (33024 + 98304)))
entries = b"".join(
    uuid.UUID(t).bytes_le + uuid.UUID(int=i + 1).bytes_le
    + struct.pack("<QQQ", first, first + n - 1, 0) + name.encode("utf-16-le").ljust(72, b"\0")
    for i, (t, name, first, n) in enumerate(parts)).ljust(128 * 128, b"\0")
def header(mine, other, table):
    h = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, mine, other, 6,
                    total - 6, uuid.UUID(int=0xc0de).bytes_le, table, 128, 128,
                    zlib.crc32(entries))
    return h[:16] + struct.pack("<I", zlib.crc32(h)) + h[20:]
mbr = bytearray(512)
mbr[446:462] = struct.pack("<BBBBBBBBII", 0, 0, 2, 0, 0xEE, 0xFF, 0xFF, 0xFF, 1, min(total - 1, 2**32 - 1))
mbr[510:] = b"\x55\xaa"
with open(path, "r+b") as f:
    f.write(mbr)
    f.seek(B); f.write(header(1, total - 1, 2))
    f.seek(2 * B); f.write(entries)
    f.seek((total - 5) * B); f.write(entries)
    f.seek((total - 1) * B); f.write(header(total - 1, 1, total - 5))
print(parts[2][2])
GPT
)
mkfs.ext4 -q -F -b 4096 -L boot -d "$boot" -E offset=$((kfirst * 4096)) "$k" $((98304 * 4))k
