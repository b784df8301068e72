#!/usr/bin/env python3
"""Writes an OCI image layout holding given machine-config-daemon builds, shaped like an
MCO image (a RHEL base layer with os-release, the binaries in a top layer), for the
boot tests. Uses the fixture generator's writers (fixtures/generate.py).

    mcd_image.py [--gzip] [--closure-of FILE [--without SONAME]] OUTDIR RHEL_VERSION
                 /usr/bin/NAME=FILE [...]

RHEL_VERSION is `8.6`, `9.4`...; `centos-8` or `centos-9` gives a CentOS Stream base,
as OKD's MCO images have.

The layers are plain tars, or gzip with --gzip (as registries serve MCO images).
--closure-of FILE puts in the base layer, under /usr/lib64 as a RHEL root holds them,
the dynamic loader and every library that FILE links on this machine (`ldd`: the
libraries of the root it was linked against), each under its real file name with its
soname as a link to it, and the /etc/ld.so.cache that `ldconfig -r` makes of them;
--without SONAME leaves that library out (an image that lacks one).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
import generate  # noqa: E402


def closure_entries(binary: str, without: str = "") -> list:
    """The loader and libraries `ldd` resolves for `binary`, with their cache."""
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == without:
            continue
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(parts[2])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])  # the loader
    entries = []
    with tempfile.TemporaryDirectory() as stage:
        lib64 = Path(stage, "usr/lib64")
        lib64.mkdir(parents=True)
        Path(stage, "lib64").symlink_to("usr/lib64")
        Path(stage, "etc").mkdir()
        Path(stage, "etc/ld.so.conf").write_text("/usr/lib64\n")
        for lib in libs:
            real = os.path.realpath(lib)
            soname, name = os.path.basename(lib), os.path.basename(real)
            data = Path(real).read_bytes()
            (lib64 / name).write_bytes(data)
            mode = 0o755 if os.access(real, os.X_OK) else 0o644
            entries.append(generate.F(f"usr/lib64/{name}", data, mode))
            if soname != name:
                (lib64 / soname).symlink_to(name)
                entries.append(generate.S(f"usr/lib64/{soname}", name))
        subprocess.run(["ldconfig", "-r", stage, "-X"], check=True)
        entries.append(generate.F("etc/ld.so.cache", Path(stage, "etc/ld.so.cache").read_bytes()))
    return entries


def main() -> None:
    args = sys.argv[1:]
    compression = "none"
    closure_of, without = None, ""
    while args[:1] in (["--gzip"], ["--closure-of"], ["--without"]):
        if args[0] == "--gzip":
            compression, args = "gzip", args[1:]
        elif args[0] == "--closure-of":
            closure_of, args = args[1], args[2:]
        else:
            without, args = args[1], args[2:]
    closure = closure_entries(closure_of, without) if closure_of else []
    outdir, rhel, *files = args
    if not files:
        sys.exit(__doc__)
    if rhel.startswith("centos-"):
        # OKD's MCO images are built on CentOS Stream.
        release = generate.centos_stream_os_release(rhel.removeprefix("centos-"))
    else:
        major = rhel.split(".")[0]
        release = generate.os_release(rhel, "Ootpa" if major == "8" else "Plow")
    top = []
    for spec in files:
        path, _, source = spec.partition("=")
        top.append(generate.X(path.lstrip("/"), Path(source).read_bytes()))
    image = generate.Image([generate.base_layer(release, compression, closure),
                            generate.Layer(top, compression)])
    writer = generate.LayoutWriter(Path(outdir))
    writer.finish({**writer.image(image), "platform": image.platform()})


if __name__ == "__main__":
    main()
