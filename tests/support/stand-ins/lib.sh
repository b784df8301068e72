# Shared by the stand-ins of tests/support/stand-ins (installed in the test root as
# /usr/libexec/stand-ins/lib.sh): where they record their calls and keep the state of
# the root's "OS", an ostree-like set of deployments.
#
#   /var/lib/boot-probe/called   one line per call: boot=N UPTIME PROGRAM ARGS...
#   /var/lib/boot-probe/boot     the number of the boot under way (the harness writes it)
#   /usr/lib/stand-ins/os.env    what the booted OS ships (versions of its programs),
#                                with /usr/lib/os-release; absent on a plain test root
#   /var/lib/stand-in-ostree/    deploy/NAME/ (os-release, os.env, checksum, origin,
#                                kargs, tree: the base root of its tree, - for the
#                                bootimage's), booted, staged (names), repo/CHECKSUM/
#                                (commits imported by deploy-from-self)
#   /var/lib/stand-in-images/    os-image (the ref of the cluster's OS image) and os/
#                                (the commit it carries: os-release, os.env, checksum,
#                                tree)
#   /usr/lib/stand-ins/deployment  the deployment whose tree the root's /usr is
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
probe=/var/lib/boot-probe
ostree_state=/var/lib/stand-in-ostree
images=/var/lib/stand-in-images

record() { # record PROGRAM ARGS...: one line in the call log
  boot=$(cat "$probe/boot" 2>/dev/null || echo 1)
  echo "boot=$boot $(cut -d' ' -f1 /proc/uptime) $*" >>"$probe/called"
}

# The booted OS's program versions (RPMOSTREE_VERSION, RPMOSTREE_FEATURES,
# PODMAN_VERSION, SKOPEO_VERSION); empty on a plain test root.
if [ -r /usr/lib/stand-ins/os.env ]; then
  . /usr/lib/stand-ins/os.env
fi

has_os() { [ -r /usr/lib/stand-ins/os.env ] && [ -d "$ostree_state" ]; }

os_image() { cat "$images/os-image" 2>/dev/null; }
