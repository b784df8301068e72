#!/usr/bin/env bash
# The RHCOS releases the three-boot tests meet (tests/support/boot-root.sh os), as
# trees of the stand-in OS (stand-ins/lib.sh): `rhcos-os.sh NAME DIR` writes
# DIR/os-release, DIR/os.env and DIR/checksum.
#
# os-release: the shape is RHCOS's own, as MCO's pkg/daemon/osrelease/osrelease_test.go
# (main) holds it for RHCOS 4.12 (RHEL 8.6) and 4.13 (RHEL 9.0): OPENSHIFT_VERSION and
# RHEL_VERSION, VARIANT/VARIANT_ID on RHEL 9; 4.9's is given the same fields (assumed:
# no 4.9 os-release is on hand), 4.16-4.22 the RHEL 9 shape. The RHCOS 4.1 and 4.2
# bootimages' have neither field (VERSION 42.80.<date>.0, as 4.2 nodes report "Red Hat
# Enterprise Linux CoreOS 42.80.20191010.0 (Ootpa)", 410.8.<date>.0 on 4.1; VERSION_ID
# is the OpenShift version, 4.1 or 4.2).
#
# os.env: the versions of the programs the MCD asks on that OS:
#   rpm-ostree: 4.2 is a 2019 release (RHEL 8.0/8.1 era), 4.9 a 2021 one; "container"
#     from 4.12 (2022.10 with the RHEL 8 backport of rpm-ostree PR 3967) on; RHEL 9 ones
#     are 2024-2025 releases (the features per stand-ins/rpm-ostree).
#   podman, skopeo: the container-tools of that RHEL (approximate; only their order
#     against MCO's thresholds matters: podman 4.4.1, skopeo 1.22.2).
set -euo pipefail
name=$1 dir=$2
mkdir -p "$dir"

release() { # release OCP RHEL VERSION CODENAME
  local ocp=$1 rhel=$2 version=$3 codename=$4 major=${2%%.*}
  {
    echo 'NAME="Red Hat Enterprise Linux CoreOS"'
    echo 'ID="rhcos"'
    echo 'ID_LIKE="rhel fedora"'
    echo "VERSION=\"$version\""
    echo "VERSION_ID=\"$ocp\""
    if [[ $major == 9 ]]; then
      echo 'VARIANT="CoreOS"'
      echo 'VARIANT_ID=coreos'
    fi
    echo "PLATFORM_ID=\"platform:el$major\""
    echo "PRETTY_NAME=\"Red Hat Enterprise Linux CoreOS $version ($codename)\""
    echo 'ANSI_COLOR="0;31"'
    echo "CPE_NAME=\"cpe:/o:redhat:enterprise_linux:$major::coreos\""
    echo 'HOME_URL="https://www.redhat.com/"'
    echo "DOCUMENTATION_URL=\"https://docs.openshift.com/container-platform/$ocp/\""
    echo 'BUG_REPORT_URL="https://bugzilla.redhat.com/"'
    echo 'REDHAT_BUGZILLA_PRODUCT="OpenShift Container Platform"'
    echo "REDHAT_BUGZILLA_PRODUCT_VERSION=\"$ocp\""
    echo 'REDHAT_SUPPORT_PRODUCT="OpenShift Container Platform"'
    echo "REDHAT_SUPPORT_PRODUCT_VERSION=\"$ocp\""
    echo "OPENSHIFT_VERSION=\"$ocp\""
    echo "RHEL_VERSION=\"$rhel\""
    echo "OSTREE_VERSION=\"$version\""
  } >"$dir/os-release"
}

tools() { # tools RPMOSTREE_VERSION FEATURES PODMAN SKOPEO
  printf 'RPMOSTREE_VERSION=%s\nRPMOSTREE_FEATURES="%s"\nPODMAN_VERSION=%s\nSKOPEO_VERSION=%s\n' \
    "$1" "$2" "$3" "$4" >"$dir/os.env"
}

legacy() { # legacy OCP VERSION: the os-release of a 4.1/4.2 bootimage (no RHEL_VERSION)
  cat >"$dir/os-release" <<OS
NAME="Red Hat Enterprise Linux CoreOS"
VERSION="$2"
VERSION_ID="$1"
PRETTY_NAME="Red Hat Enterprise Linux CoreOS $2 (Ootpa)"
ID="rhcos"
ID_LIKE="rhel fedora"
ANSI_COLOR="0;31"
HOME_URL="https://www.redhat.com/"
BUG_REPORT_URL="https://bugzilla.redhat.com/"
REDHAT_BUGZILLA_PRODUCT="OpenShift Container Platform"
REDHAT_BUGZILLA_PRODUCT_VERSION="$1"
REDHAT_SUPPORT_PRODUCT="OpenShift Container Platform"
REDHAT_SUPPORT_PRODUCT_VERSION="$1"
OSTREE_VERSION='$2'
OS
}

case $name in
  # 4.1's build IDs are 410.8.<date>.<n> (OpenShift 4.1 on RHEL 8.0), before 4.2's
  # scheme; its rpm-ostree, podman and skopeo are the spring 2019 ones.
  rhcos-4.1) legacy 4.1 410.8.20190520.0; tools 2019.3 "compose rust" 1.0.2 0.1.36 ;;
  rhcos-4.2) legacy 4.2 42.80.20191010.0; tools 2019.5 "compose rust" 1.4.4 0.1.37 ;;
  rhcos-4.9) release 4.9 8.4 49.84.202110081407-0 Ootpa; tools 2021.10 "compose rust" 3.3.1 1.4.1 ;;
  rhcos-4.12) release 4.12 8.6 412.86.202301311551-0 Ootpa; tools 2022.10 "rust compose container" 4.2.0 1.9.4 ;;
  rhcos-4.16) release 4.16 9.4 416.94.202406172220-0 Plow; tools 2024.3 "rust compose container" 4.9.4 1.14.4 ;;
  rhcos-4.18) release 4.18 9.4 418.94.202501221327-0 Plow; tools 2024.8 "rust compose container" 5.2.2 1.16.1 ;;
  rhcos-4.22) release 4.22 9.6 422.96.202608110847-0 Plow; tools 2025.7 "rust compose container" 5.4.0 1.18.1 ;;
  *) echo "rhcos-os.sh: no such release: $name" >&2; exit 1 ;;
esac
printf '%s' "$name" | sha256sum | cut -d' ' -f1 >"$dir/checksum"
