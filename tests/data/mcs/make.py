#!/usr/bin/env python3
"""Writes the MCS-shaped configs of this directory: what the Machine Config Server of a
cluster serves a worker at boot, for three MCO generations, reduced to what decides a
first boot (see README.md). Run it to regenerate them: python3 tests/data/mcs/make.py"""

import base64
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MCO_IMAGE = "registry.example.com/openshift/release@sha256:" + "1" * 64
OS_IMAGE = "registry.example.com/openshift/release@sha256:" + "2" * 64

MACHINE_CONFIG = json.dumps({
    "kind": "MachineConfig",
    "apiVersion": "machineconfiguration.openshift.io/v1",
    "metadata": {"name": "rendered-worker-boot-test"},
    "spec": {"osImageURL": OS_IMAGE, "config": {"ignition": {"version": "3.2.0"}}},
}, separators=(",", ":")).encode()

# templates/common/_base/units/machine-config-daemon-firstboot.service.yaml
FIRSTBOOT_46 = f"""[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
After=machine-config-daemon-pull.service
Before=crio.service crio-wipe.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
# Disable existing repos (if any) so that OS extensions would use embedded RPMs only
ExecStartPre=-/usr/bin/sh -c "sed -i 's/enabled=1/enabled=0/' /etc/yum.repos.d/*.repo"
ExecStart=/run/bin/machine-config-daemon firstboot-complete-machineconfig

[Install]
WantedBy=multi-user.target
RequiredBy=crio.service kubelet.service
"""

PULL_46 = f"""[Unit]
Description=Machine Config Daemon Pull
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# This "stamp file" is unlinked when we complete
# machine-config-daemon-firstboot.service
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
# See https://github.com/coreos/fedora-coreos-tracker/issues/354
ExecStart=/bin/sh -c '/bin/mkdir -p /run/bin && chcon --reference=/usr/bin /run/bin'
ExecStart=/bin/sh -c "while ! /usr/bin/podman pull --authfile=/var/lib/kubelet/config.json --quiet '{MCO_IMAGE}'; do sleep 1; done"
ExecStart=/bin/sh -c "/usr/bin/podman run --rm --quiet --net=host --entrypoint=cat '{MCO_IMAGE}' /usr/bin/machine-config-daemon > /run/bin/machine-config-daemon.tmp"
ExecStart=/bin/sh -c '/usr/bin/chmod a+x /run/bin/machine-config-daemon.tmp && mv /run/bin/machine-config-daemon.tmp /run/bin/machine-config-daemon'

[Install]
RequiredBy=machine-config-daemon-firstboot.service
"""

FIRSTBOOT_412 = """[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
After=machine-config-daemon-pull.service
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
# Disable existing repos (if any) so that OS extensions would use embedded RPMs only
ExecStartPre=-/usr/bin/sh -c "sed -i 's/enabled=1/enabled=0/' /etc/yum.repos.d/*.repo"
ExecStart=/run/bin/machine-config-daemon firstboot-complete-machineconfig

[Install]
RequiredBy=firstboot-osupdate.target
"""

PULL_412 = f"""[Unit]
Description=Machine Config Daemon Pull
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# This "stamp file" is unlinked when we complete
# machine-config-daemon-firstboot.service
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
# Run after crio-wipe so the pulled MCD image is protected against a corrupted storage from a forced shutdown
Wants=crio-wipe.service NetworkManager-wait-online.service
After=crio-wipe.service NetworkManager-wait-online.service network.service

[Service]
Type=oneshot
RemainAfterExit=yes
# See https://github.com/coreos/fedora-coreos-tracker/issues/354
ExecStart=/bin/sh -c '/bin/mkdir -p /run/bin && chcon --reference=/usr/bin /run/bin'
ExecStart=/bin/sh -c "while ! /usr/bin/podman pull --authfile=/var/lib/kubelet/config.json --quiet '{MCO_IMAGE}'; do sleep 1; done"
ExecStart=/usr/bin/podman run --rm --quiet --net=host -v /run/bin:/host/run/bin:z --entrypoint=cp '{MCO_IMAGE}' /usr/bin/machine-config-daemon /host/run/bin
ExecStart=/bin/chcon system_u:object_r:bin_t:s0 /run/bin/machine-config-daemon

[Install]
RequiredBy=machine-config-daemon-firstboot.service
"""

# main (4.23, 5.x): the firstboot runs the MCD of the MCO image through podman, after a
# NIC-persisting pass (4.13-4.15 spell it --maybe-persist-nics).
FIRSTBOOT_MAIN = f"""[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
After=machine-config-daemon-pull.service
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
# Disable existing repos (if any) so that OS extensions would use embedded RPMs only
ExecStartPre=-/usr/bin/sh -c "sed -i 's/enabled=1/enabled=0/' /etc/yum.repos.d/*.repo"
ExecStartPre=-/usr/bin/sh -c "cp /sysroot/ostree/repo/config /run/ostree-bootstrap-config && printf '\\n[core]\\nfsync = false\\n' >> /run/ostree-bootstrap-config && mount --bind /run/ostree-bootstrap-config /sysroot/ostree/repo/config"
# Run this via podman because we want to use the nmstatectl binary in our container
ExecStart=/usr/bin/podman run --rm --privileged --net=host -v /:/rootfs  --entrypoint machine-config-daemon '{MCO_IMAGE}' firstboot-complete-machineconfig --persist-nics
ExecStart=/usr/bin/podman run --rm --privileged --pid=host --net=host -v /:/rootfs  --entrypoint machine-config-daemon '{MCO_IMAGE}' firstboot-complete-machineconfig
ExecStopPost=-/usr/bin/umount /sysroot/ostree/repo/config

[Install]
RequiredBy=firstboot-osupdate.target
"""

PULL_MAIN = f"""[Unit]
Description=Machine Config Daemon Pull
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# This "stamp file" is unlinked when we complete
# machine-config-daemon-firstboot.service
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
# Run after crio-wipe so the pulled MCD image is protected against a corrupted storage from a forced shutdown
Wants=crio-wipe.service NetworkManager-wait-online.service
After=crio-wipe.service NetworkManager-wait-online.service network.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStartPre=/etc/machine-config-daemon/generate_podman_policy_args.sh
ExecStart=/bin/sh -c "while ! /usr/bin/podman pull $(cat /tmp/podman_policy_args) --authfile=/var/lib/kubelet/config.json '{MCO_IMAGE}'; do sleep 1; done"

[Install]
RequiredBy=machine-config-daemon-firstboot.service
"""

OSUPDATE_TARGET = """[Unit]
Description=The firstboot OS update has completed
Documentation=https://github.com/openshift/machine-config-operator/
Requires=basic.target

[Install]
WantedBy=default.target
"""

KUBELET_DEPENDENCIES = """[Unit]
Description=Dependencies necessary to run kubelet
Documentation=https://github.com/openshift/machine-config-operator/
Requires=basic.target network-online.target
Wants=NetworkManager-wait-online.service crio-wipe.service
Wants=rpc-statd.service
"""

# The kubelet units keep MCO's [Unit] ordering; what they run is a stand-in.
KUBELET_46 = """[Unit]
Description=Kubernetes Kubelet
Wants=rpc-statd.service network-online.target crio.service
After=network-online.target crio.service
After=ostree-finalize-staged.service

[Service]
# Stand-in: the test root has no kubelet.
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true

[Install]
WantedBy=multi-user.target
"""

KUBELET_412 = """[Unit]
Description=Kubernetes Kubelet
Requires=crio.service kubelet-dependencies.target
After=kubelet-dependencies.target
After=ostree-finalize-staged.service

[Service]
# Stand-in: the test root has no kubelet.
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true

[Install]
WantedBy=multi-user.target
"""

CRIO_ORDERING = """[Unit]
After=kubelet-dependencies.target
Requires=kubelet-dependencies.target
"""

MADV = """[Service]
Environment="GODEBUG=x509ignoreCN=0,madvdontneed=1"
"""


def data_url(data: bytes) -> str:
    return "data:;base64," + base64.b64encode(data).decode()


def config(spec: str, units: list[dict]) -> dict:
    mc = {"path": "/etc/ignition-machine-config-encapsulated.json",
          "contents": {"source": data_url(MACHINE_CONFIG)}, "mode": 0o644}
    if spec.startswith("2."):
        mc["filesystem"] = "root"
    else:
        mc["overwrite"] = True
    return {"ignition": {"version": spec}, "storage": {"files": [mc]},
            "systemd": {"units": units}}


def generation_46() -> dict:
    return config("2.2.0", [
        {"name": "crio.service", "dropins": [{"name": "10-mco-default-madv.conf", "contents": MADV}]},
        {"name": "kubelet.service", "enabled": True, "contents": KUBELET_46},
        {"name": "machine-config-daemon-firstboot.service", "enabled": True, "contents": FIRSTBOOT_46},
        {"name": "machine-config-daemon-pull.service", "enabled": True, "contents": PULL_46},
        {"name": "pivot.service", "dropins": [{"name": "10-mco-default-env.conf", "contents": "[Unit]\n"}]},
    ])


def generation_412_plus(firstboot: str, pull: str) -> dict:
    return config("3.2.0", [
        {"name": "crio.service", "dropins": [
            {"name": "05-mco-ordering.conf", "contents": CRIO_ORDERING},
            {"name": "10-mco-default-madv.conf", "contents": MADV}]},
        {"name": "firstboot-osupdate.target", "enabled": True, "contents": OSUPDATE_TARGET},
        {"name": "kubelet-dependencies.target", "contents": KUBELET_DEPENDENCIES},
        {"name": "kubelet.service", "enabled": True, "contents": KUBELET_412},
        {"name": "machine-config-daemon-firstboot.service", "enabled": True, "contents": firstboot},
        {"name": "machine-config-daemon-pull.service", "enabled": True, "contents": pull},
        {"name": "pivot.service", "dropins": [{"name": "10-mco-default-env.conf", "contents": ""}]},
    ])


def main() -> None:
    outputs = {
        "4.6-worker.ign": generation_46(),
        "4.12-worker.ign": generation_412_plus(FIRSTBOOT_412, PULL_412),
        "4.13-worker.ign": generation_412_plus(FIRSTBOOT_MAIN, PULL_MAIN),
    }
    for name, cfg in outputs.items():
        (HERE / name).write_text(json.dumps(cfg, indent=2) + "\n")


if __name__ == "__main__":
    main()
