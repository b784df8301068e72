#!/usr/bin/env python3
"""Writes an OCI image layout holding given machine-config-daemon builds, shaped like an
MCO image (a RHEL base layer with os-release, the binaries in a top layer), for the
boot tests. Uses the fixture generator's writers (fixtures/generate.py).

    mcd_image.py [--gzip] OUTDIR RHEL_VERSION /usr/bin/NAME=FILE [...]

The layers are plain tars, or gzip with --gzip (as registries serve MCO images).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
import generate  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    compression = "none"
    if args[:1] == ["--gzip"]:
        compression, args = "gzip", args[1:]
    outdir, rhel, *files = args
    if not files:
        sys.exit(__doc__)
    major = rhel.split(".")[0]
    release = generate.os_release(rhel, "Ootpa" if major == "8" else "Plow")
    top = []
    for spec in files:
        path, _, source = spec.partition("=")
        top.append(generate.X(path.lstrip("/"), Path(source).read_bytes()))
    image = generate.Image([generate.base_layer(release, compression),
                            generate.Layer(top, compression)])
    writer = generate.LayoutWriter(Path(outdir))
    writer.finish({**writer.image(image), "platform": image.platform()})


if __name__ == "__main__":
    main()
