# The install script's part for a build delivered with its closure (units.rs puts it
# in place of the script's @CLOSURE@ line, after the build is unpacked into $tmp).
# closure_files: the loader and libraries of the build's own image (NAME:SHA256, the
# loader first); closure_native: the RHEL majors whose hosts run the build without
# them. The bootimage's build runs through them on every other host.
closure_files=@CLOSURE_FILES@
closure_native=@CLOSURE_NATIVE@
# Where the build and its closure lie, as the node sees them.
closure_run=/run/mcd-inject
use_closure=true
[ "$payload" = "$root/var/lib/mcd-inject/machine-config-daemon.gz" ] || use_closure=false
for r in $closure_native; do
    if [ "$host" = "$r" ]; then use_closure=false; fi
done
if $use_closure; then
    # The build with its closure: the loader and libraries in a directory of their own,
    # labelled as the host labels its own; the build runs through that loader with that
    # directory as its only library path (an argument, not the environment: the programs
    # the MCD starts keep the host's libraries).
    libref="$root/usr/lib64"
    [ -d "$libref" ] || libref="$root/usr/lib"
    new="$root$closure_run.new"
    rm -rf "$new"
    mkdir -p "$new/closure"
    label "$libref" "$new"
    label "$libref" "$new/closure"
    loader=""
    count=0
    for entry in $closure_files; do
        name="${entry%%:*}"
        want="${entry#*:}"
        file="$new/closure/$name"
        unpack "$root/var/lib/mcd-inject/closure/$name.gz" "$file" "$want"
        count=$((count + 1))
        if [ -z "$loader" ]; then
            loader="$name"
            chmod 0755 "$file"
            # Labelled like the host's own loader, where RHEL and Debian keep it.
            ref="$libref"
            for d in lib64 lib usr/lib64 usr/lib; do
                if [ -e "$root/$d/$name" ]; then
                    ref="$root/$d/$name"
                    break
                fi
            done
            label "$ref" "$file"
        else
            chmod 0644 "$file"
            label "$libref" "$file"
        fi
    done
    mv -f "$tmp" "$new/machine-config-daemon"
    rm -rf "$root$closure_run"
    mv -f "$new" "$root$closure_run"
    wrapper="$(mktemp "$bindir/.machine-config-daemon.XXXXXX")"
    trap 'rm -f "$wrapper"' EXIT
    printf '%s\n' '#!/bin/sh' \
        '# mcd-inject: the machine-config-daemon, through the loader and libraries of its image.' \
        "exec $closure_run/closure/$loader --library-path $closure_run/closure $closure_run/machine-config-daemon \"\$@\"" \
        >"$wrapper"
    chmod 0755 "$wrapper"
    label "$root/usr/bin/true" "$wrapper"
    mv -f "$wrapper" "$dest"
    trap - EXIT
    echo "mco-mcd-install: installed $dest from ${payload#"$root"} (sha256 $actual), through its closure of $count files in $closure_run/closure"
    exit 0
fi
