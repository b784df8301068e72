#!/bin/sh
# The probe of a test boot (tests/support/boot-root.sh): waits until the first boot
# settles, or until the firstboot unit logs what /var/lib/boot-probe/wait-for names (a
# real MCD retries for ever), or 90 s; records the units, the installed binary (with its
# SELinux labels, under SELinux) and the failed units in /var/lib/boot-probe; powers off.
# In a VM the awaited line comes from the kernel command line, boot_probe.wait_for=LINE
# (no spaces). When the boot ends otherwise (a reboot the MCD asked for), the probe
# records the same when systemd stops it.
out=/var/lib/boot-probe
cat /proc/sys/kernel/random/boot_id >"$out/boot-id"
wait_for=$(cat "$out/wait-for" 2>/dev/null || true)
if [ -z "$wait_for" ]; then
  for arg in $(cat /proc/cmdline); do
    case $arg in boot_probe.wait_for=*) wait_for=${arg#boot_probe.wait_for=} ;; esac
  done
fi
units="mco-mcd-install.service machine-config-daemon-firstboot.service machine-config-daemon-pull.service pivot.service crio.service kubelet.service kubelet-dependencies.target firstboot-osupdate.target ostree-finalize-staged.service"
uptime_s() { cut -d. -f1 /proc/uptime; }
# What systemd loaded for each unit (its drop-ins, its load and enablement state) does
# not change within a boot: recorded by `boot-probe.sh loaded`, the probe unit's
# ExecStartPre, which the firstboot unit waits for, so a reboot the MCD asks for cannot
# come first, however loaded the machine.
# It also records the booted OS's ABI: its glibc, and how each program in
# /var/lib/boot-probe/controls fares when run (`NAME version`): `control.NAME=0`, or its
# exit code and the loader's complaint (the negative controls of the three-boot tests:
# a build that this OS's glibc or libraries cannot run).
if [ "${1:-}" = loaded ]; then
  {
    for u in $units; do
      systemctl show "$u" -p Id,LoadState,UnitFileState,DropInPaths | sed "s/^/unit.$u./"
    done
    echo "os.glibc=$(getconf GNU_LIBC_VERSION)"
    for c in "$out"/controls/*; do
      [ -x "$c" ] || continue
      if "$c" version >/dev/null 2>"$out/control.err"; then
        echo "control.$(basename "$c")=0"
      else
        rc=$?
        echo "control.$(basename "$c")=$rc $(head -n1 "$out/control.err")"
      fi
    done
    rm -f "$out/control.err"
  } >"$out/loaded.$$"
  mv "$out/loaded.$$" "$out/loaded"
  exit 0
fi
report() { # report STATE: what the probe records
  # What systemd loaded, recorded now if the probe unit's ExecStartPre has not (a boot
  # the firstboot's reboot ended first, on a loaded machine).
  [ -s "$out/loaded" ] || "$0" loaded
  {
    echo "state=$1"
    cat "$out/loaded"
    for u in $units; do
      systemctl show "$u" -p ActiveState,SubState,Result,ExecMainStatus \
        -p InactiveExitTimestampMonotonic,ActiveEnterTimestampMonotonic \
        -p ExecMainStartTimestampMonotonic,ExecMainExitTimestampMonotonic |
        sed "s/^/unit.$u./"
    done
    if [ -e /run/bin/machine-config-daemon ]; then
      echo "bin.sha256=$(sha256sum /run/bin/machine-config-daemon | cut -d' ' -f1)"
      echo "bin.mode=$(stat -c %a /run/bin/machine-config-daemon)"
      echo "bin.script=$([ "$(head -c2 /run/bin/machine-config-daemon)" = '#!' ] && echo yes || echo no)"
    fi
    # A build delivered with its closure (the wrapper at /run/bin runs it).
    if [ -e /run/mcd-inject/machine-config-daemon ]; then
      echo "closure.bin.sha256=$(sha256sum /run/mcd-inject/machine-config-daemon | cut -d' ' -f1)"
      echo "closure.files=$(ls /run/mcd-inject/closure | tr '\n' ' ')"
    fi
    if [ -e /sys/fs/selinux/enforce ]; then
      echo "selinux.enforce=$(cat /sys/fs/selinux/enforce)"
      for p in /run/bin/machine-config-daemon /run/bin /usr/bin/true /usr/bin \
        /var/lib/mcd-inject/machine-config-daemon.gz /var/lib/mcd-inject/mco-mcd-install.sh; do
        echo "label.$p=$(stat -c %C "$p" 2>/dev/null)"
      done
      # A closure's files, and what the install script labels them after (links followed).
      for p in /run/mcd-inject/closure /run/mcd-inject/closure/ld-linux-x86-64.so.2 \
        /run/mcd-inject/closure/libc.so.6 /run/mcd-inject/machine-config-daemon \
        /lib64/ld-linux-x86-64.so.2 /usr/lib64 /usr/lib; do
        echo "label.$p=$(stat -L -c %C "$p" 2>/dev/null)"
      done
    fi
    systemctl list-units --failed --plain --no-legend --no-pager | sed 's/^/failed=/'
  } >"$out/report.tmp"
  mv "$out/report.tmp" "$out/report"
  sync
}
# Units that stop at shutdown may be unloaded before the probe stops, their timestamps
# gone: a report is made as soon as the firstboot unit starts (the install unit has
# finished by then), and at shutdown only the state is added to it.
early=""
stopped() {
  if [ -n "$early" ]; then
    echo "state=$state (stopped: the system is shutting down)" >>"$out/report"
    sync
  else
    report "$state (stopped: the system is shutting down)"
  fi
  exit 0
}
state=starting
trap stopped TERM
deadline=$(($(uptime_s) + 90))
while :; do
  # First, and every round: the firstboot may reboot the node within half a second.
  if [ -z "$early" ] && [ "$(systemctl show -p ExecMainStartTimestampMonotonic --value \
    machine-config-daemon-firstboot.service)" != 0 ]; then
    report "$state (the firstboot unit started)"
    early=yes
  fi
  state=$(systemctl is-system-running 2>/dev/null)
  case $state in running | degraded) break ;; esac
  if [ -n "$wait_for" ] && journalctl -b -o cat -u machine-config-daemon-firstboot.service |
    grep -qF -- "$wait_for"; then
    state="$state (stopped waiting: the firstboot unit logged the awaited line)"
    break
  fi
  if [ "$(uptime_s)" -ge "$deadline" ]; then
    state="$state (timed out)"
    break
  fi
  sleep 0.1
done
report "$state"
trap - TERM
systemctl poweroff --no-block
