//! The bootimage as pipelines name it: `--bootimage` with an OpenShift version, an RHCOS
//! build ID or a cloud image name, and `--bootimage-file` with stream metadata, a qcow2 or
//! raw disk image (plain, gzip, xz) or a live ISO, made here by the real tools
//! (tests/support/make-bootimage.sh: sgdisk, mkfs.ext4, qemu-img, gzip, xz, xorriso).
//! Every name of one build gives the same config, byte for byte; the report says which
//! form was read; a damaged file of each kind is an error (exit 1) and writes nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::harness::{crate_root, fixture, inject, mcd_inject, require_tools, Run};

/// The files of three builds: RHCOS 4.2 (the 2019 layout, `boot` first), RHCOS 4.10 (the
/// 2020 layout, `boot` third) and Fedora CoreOS 33 (OKD 4.6's pin, the 2020 layout),
/// made once.
fn builds() -> &'static (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    static B: OnceLock<(tempfile::TempDir, PathBuf, PathBuf, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        require_tools(&["sgdisk", "mkfs.ext4", "qemu-img", "gzip", "xz", "xorriso"]);
        let dir = tempfile::tempdir().unwrap();
        let make_os = |name: &str, id: &str, os: (&str, &str), layout: &str| {
            let out = dir.path().join(name);
            let status = Command::new("bash")
                .arg(crate_root().join("tests/support/make-bootimage.sh"))
                .args([out.to_str().unwrap(), id, os.0, os.1, layout])
                .status()
                .unwrap();
            assert!(status.success(), "make-bootimage.sh {id}");
            out
        };
        let rhcos = ("Red Hat Enterprise Linux CoreOS @ID@ (Ootpa)", "rhcos");
        let make = |name: &str, id: &str, layout: &str| make_os(name, id, rhcos, layout);
        // Fedora CoreOS: its BLS title and its ISO's volume ID (fedora-coreos-ID).
        let b33 = make_os(
            "33",
            "33.20201201.3.0",
            ("Fedora CoreOS @ID@", "fedora-coreos"),
            "2020",
        );
        // The installer's data/data/fcos.json of OKD 4.6 (stream metadata).
        fs::write(
            b33.join("fcos.json"),
            r#"{
  "stream": "stable",
  "metadata": {"last-modified": "2020-12-16T20:53:15Z"},
  "architectures": {
    "x86_64": {
      "artifacts": {
        "metal": {"release": "33.20201201.3.0", "formats": {"raw.xz": {"disk": {"location": "https://example.com/fedora-coreos-33.20201201.3.0-metal.x86_64.raw.xz", "sha256": "ee"}}}},
        "qemu": {"release": "33.20201201.3.0", "formats": {"qcow2.xz": {"disk": {"location": "https://example.com/fedora-coreos-33.20201201.3.0-qemu.x86_64.qcow2.xz", "sha256": "ff"}}}}
      }
    }
  }
}
"#,
        )
        .unwrap();
        let b42 = make("42", "42.80.20191002.0", "2019");
        let b410 = make("410", "410.84.202205191234-0", "2020");
        // RHCOS ships its qemu image as qcow2.gz.
        let gz = Command::new("gzip")
            .args(["-k", "-1", b42.join("disk.qcow2").to_str().unwrap()])
            .status()
            .unwrap();
        assert!(gz.success());
        // The installer's data/data/rhcos.json of 4.2 (before stream metadata), its
        // shape: an AMI per region, the build, its images. (The AMI IDs are made up.)
        fs::write(
            b42.join("rhcos.json"),
            r#"{
    "amis": {
        "ap-northeast-1": {
            "hvm": "ami-0c63b39219b8123e5"
        },
        "eu-west-1": {
            "hvm": "ami-01ba4be3b4bbc9fc8"
        },
        "us-east-1": {
            "hvm": "ami-01e7fdcb66157b224"
        },
        "us-west-2": {
            "hvm": "ami-08e10b201e19fd5e7"
        }
    },
    "azure": {
        "image": "rhcos-42.80.20191002.0.vhd",
        "url": "https://example.com/imagebucket/rhcos-42.80.20191002.0.vhd"
    },
    "baseURI": "https://example.com/art/storage/releases/rhcos-4.2/42.80.20191002.0/",
    "buildid": "42.80.20191002.0",
    "gcp": {
        "image": "rhcos-42-80-20191002-0",
        "url": "https://example.com/rhcos/rhcos/42.80.20191002.0.tar.gz"
    },
    "images": {
        "aws": {
            "path": "rhcos-42.80.20191002.0-aws.vmdk.gz",
            "sha256": "3c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d",
            "size": 779389954,
            "uncompressed-sha256": "4c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d",
            "uncompressed-size": 799152128
        },
        "metal-bios": {
            "path": "rhcos-42.80.20191002.0-metal-bios.raw.gz",
            "sha256": "5c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d"
        },
        "qemu": {
            "path": "rhcos-42.80.20191002.0-qemu.qcow2",
            "sha256": "6c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d"
        },
        "vmware": {
            "path": "rhcos-42.80.20191002.0-vmware.ova",
            "sha256": "7c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d",
            "size": 817879040
        }
    },
    "oscontainer": {
        "digest": "sha256:8c5a3a7ac3f5b7b52e2c6d1f6f8b1b1f3a2a7c1d5e4f3b2a1c0d9e8f7a6b5c4d",
        "image": "example.com/openshift-release-dev/ocp-v4.0-art-dev"
    },
    "ostree-commit": "1a2b3c",
    "ostree-version": "42.80.20191002.0"
}
"#,
        )
        .unwrap();
        // `openshift-install coreos print-stream-json`: one release per architecture.
        let stream = r#"{
  "stream": "rhcos-4.10",
  "metadata": {"last-modified": "2022-05-19T12:34:56Z", "generator": "plume cosa2stream 0.12.0"},
  "architectures": {
    "aarch64": {
      "artifacts": {
        "metal": {"release": "410.84.202205191023-0", "formats": {"raw.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191023-0-metal.aarch64.raw.gz", "sha256": "aa"}}}}
      }
    },
    "x86_64": {
      "artifacts": {
        "metal": {"release": "410.84.202205191234-0", "formats": {"iso": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-live.x86_64.iso", "sha256": "bb"}}, "raw.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-metal.x86_64.raw.gz", "sha256": "cc"}}}},
        "qemu": {"release": "410.84.202205191234-0", "formats": {"qcow2.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-qemu.x86_64.qcow2.gz", "sha256": "dd"}}}}
      },
      "images": {"gcp": {"release": "410.84.202205191234-0", "project": "rhcos-cloud", "name": "rhcos-410-84-202205191234-0-gcp-x86-64"}}
    }
  }
}
"#;
        fs::write(b410.join("stream.json"), stream).unwrap();
        // The installer's data/data/coreos/rhcos.json (4.8 and later) in its shape: the
        // artifacts per platform and the cloud images, AWS's per region.
        fs::write(
            b410.join("installer-stream.json"),
            r#"{
  "stream": "rhcos-4.10",
  "metadata": {
    "last-modified": "2022-05-19T12:34:56Z",
    "generator": "plume cosa2stream 0.12.0+69-gf7ee53ab"
  },
  "architectures": {
    "aarch64": {
      "artifacts": {
        "aws": {"release": "410.84.202205191023-0", "formats": {"vmdk.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191023-0-aws.aarch64.vmdk.gz", "sha256": "a1", "uncompressed-sha256": "a2"}}}}
      },
      "images": {
        "aws": {"regions": {"us-east-1": {"release": "410.84.202205191023-0", "image": "ami-0b2bc8b2d9eb2a0b1"}}}
      }
    },
    "x86_64": {
      "artifacts": {
        "aws": {"release": "410.84.202205191234-0", "formats": {"vmdk.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-aws.x86_64.vmdk.gz", "sha256": "b1", "uncompressed-sha256": "b2"}}}},
        "azure": {"release": "410.84.202205191234-0", "formats": {"vhd.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-azure.x86_64.vhd.gz", "sha256": "c1", "uncompressed-sha256": "c2"}}}},
        "gcp": {"release": "410.84.202205191234-0", "formats": {"tar.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-gcp.x86_64.tar.gz", "sha256": "d1"}}}},
        "metal": {"release": "410.84.202205191234-0", "formats": {"4k.raw.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-metal4k.x86_64.raw.gz", "sha256": "e1", "uncompressed-sha256": "e2"}}, "iso": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-live.x86_64.iso", "sha256": "e3"}}, "raw.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-metal.x86_64.raw.gz", "sha256": "e4", "uncompressed-sha256": "e5"}}}},
        "qemu": {"release": "410.84.202205191234-0", "formats": {"qcow2.gz": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-qemu.x86_64.qcow2.gz", "sha256": "f1", "uncompressed-sha256": "f2"}}}},
        "vmware": {"release": "410.84.202205191234-0", "formats": {"ova": {"disk": {"location": "https://example.com/rhcos-410.84.202205191234-0-vmware.x86_64.ova", "sha256": "f3"}}}}
      },
      "images": {
        "aws": {
          "regions": {
            "ap-northeast-1": {"release": "410.84.202205191234-0", "image": "ami-0b0eb4e1b5ac6ec4b"},
            "eu-west-1": {"release": "410.84.202205191234-0", "image": "ami-0e9c8e1b2f0e4a1c2"},
            "us-east-1": {"release": "410.84.202205191234-0", "image": "ami-0722eb0819717090f"}
          }
        },
        "gcp": {"release": "410.84.202205191234-0", "project": "rhcos-cloud", "name": "rhcos-410-84-202205191234-0-gcp-x86-64"}
      },
      "rhel-coreos-extensions": {
        "azure-disk": {"release": "410.84.202205191234-0", "url": "https://example.com/rhcos-410.84.202205191234-0-azure.x86_64.vhd"}
      }
    }
  }
}
"#,
        )
        .unwrap();
        // The cluster's coreos-bootimages ConfigMap, as `oc get -o yaml` prints it.
        let indented: String = stream.lines().map(|l| format!("    {l}\n")).collect();
        fs::write(
            b410.join("coreos-bootimages.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: coreos-bootimages\n  namespace: openshift-machine-config-operator\ndata:\n  releaseVersion: 4.10.16\n  stream: |\n{indented}"
            ),
        )
        .unwrap();
        (dir, b42, b410, b33)
    })
}

fn inject_file(reference: &str, file: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "inject".to_string(),
        "--image".into(),
        reference.into(),
        "--bootimage-file".into(),
        file.display().to_string(),
        "--ign".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    mcd_inject(args)
}

/// Every name of the 4.2 build, and every file of it, gives the config `--bootimage 4.2`
/// gives; the report carries the form read; verify takes them too. The qcow2 files hold
/// compressed clusters (deflate and zstd), as qemu-img's map shows.
#[test]
fn every_name_and_file_of_a_build_gives_the_same_config() {
    let (_dir, b42, b410, b33) = builds();
    let work = tempfile::tempdir().unwrap();
    for q in ["disk.qcow2", "disk-zstd.qcow2"] {
        let map = Command::new("qemu-img")
            .args(["map", "--output=json", b42.join(q).to_str().unwrap()])
            .output()
            .unwrap();
        let map: Value = serde_json::from_slice(&map.stdout).unwrap();
        assert!(
            map.as_array()
                .unwrap()
                .iter()
                .any(|e| e["compressed"] == true),
            "{q} has no compressed cluster"
        );
    }
    assert_made_as_real_ones_are(b42);
    let entry = "loader/entries/ostree-1-fedora-coreos.conf";
    for (release, form, image, names, files) in [
        (
            "4.2",
            "build-id",
            "mco-4.16",
            &[
                "42.80.20191002.0",
                "rhcos-42.80.20191002.0",
                "rhcos-42-80-20191002-0-gcp-x86-64",
            ][..],
            &[
                ("rhcos.json", "stream metadata", "buildid"),
                (
                    "disk.qcow2",
                    "qcow2 disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk-zstd.qcow2",
                    "qcow2 disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.qcow2.gz",
                    "gzip-compressed qcow2 disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.raw",
                    "raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.raw.gz",
                    "gzip-compressed raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.raw.xz",
                    "xz-compressed raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                ("live.iso", "live ISO", "the ISO 9660 volume ID"),
                ("disk.ova", "OVA", "the OVF's ProductSection Version"),
                (
                    "noversion.ova",
                    "OVA",
                    "loader/entries/ostree-1-rhcos.conf in disk.vmdk",
                ),
                (
                    "disk.vmdk",
                    "VMDK disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "gcp.tar.gz",
                    "gzip-compressed tar archive",
                    "loader/entries/ostree-1-rhcos.conf in disk.raw",
                ),
                (
                    "disk.vhd",
                    "fixed VHD",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.vhd.gz",
                    "gzip-compressed raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk-4kn.raw",
                    "raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
            ][..],
        ),
        (
            "4.10",
            "build-id",
            "mco-4.16",
            &[
                "410.84.202205191234-0",
                "rhcos-410-84-202205191234-0-gcp-x86-64",
            ][..],
            &[
                (
                    "stream.json",
                    "stream metadata",
                    "architectures.x86_64.artifacts",
                ),
                (
                    "coreos-bootimages.yaml",
                    "stream metadata",
                    "the ConfigMap's data.stream, architectures.x86_64.artifacts",
                ),
                (
                    "disk.qcow2",
                    "qcow2 disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk.raw.xz",
                    "xz-compressed raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                ("live.iso", "live ISO", "the ISO 9660 volume ID"),
                ("disk.ova", "OVA", "the OVF's ProductSection Version"),
                (
                    "noversion.ova",
                    "OVA",
                    "loader/entries/ostree-1-rhcos.conf in disk.vmdk",
                ),
                (
                    "gcp.tar.gz",
                    "gzip-compressed tar archive",
                    "loader/entries/ostree-1-rhcos.conf in disk.raw",
                ),
                (
                    "disk.vhd",
                    "fixed VHD",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                (
                    "disk-4kn.raw",
                    "raw disk image",
                    "loader/entries/ostree-1-rhcos.conf",
                ),
                // The installer's stream metadata of 4.12 and later, and an AMI of it.
                (
                    "installer-stream.json",
                    "stream metadata",
                    "architectures.x86_64.artifacts",
                ),
            ][..],
        ),
        // OKD: an FCOS build, as its ID, its okd- release and its files, with an OKD
        // MCO image.
        (
            "fcos-33",
            "fcos-build-id",
            "okd-4.7",
            &["33.20201201.3.0", "fcos-33.20201201.3.0"][..],
            &[
                (
                    "fcos.json",
                    "stream metadata",
                    "architectures.x86_64.artifacts",
                ),
                ("disk.qcow2", "qcow2 disk image", entry),
                ("disk.raw.xz", "xz-compressed raw disk image", entry),
                ("live.iso", "live ISO", "the ISO 9660 volume ID"),
            ][..],
        ),
    ] {
        let reference = fixture(image).reference("oci");
        let dir = match release {
            "4.2" => b42,
            "4.10" => b410,
            _ => b33,
        };
        let want_out = work.path().join(format!("{release}.ign"));
        let run = inject(&reference, release, &want_out, &[]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        let want = fs::read(&want_out).unwrap();
        for name in names {
            let out = work.path().join("named.ign");
            let run = inject(&reference, name, &out, &[]);
            assert_eq!(run.code, Some(0), "{name}: {}", run.describe());
            assert!(
                fs::read(&out).unwrap() == want,
                "{name} gives another config than {release}"
            );
            assert!(
                run.stderr.contains(&format!("for bootimage {release} (")),
                "{name}: {}",
                run.stderr
            );
        }
        for (file, kind, within) in files {
            let out = work.path().join("file.ign");
            let report = work.path().join("report.json");
            let path = dir.join(file);
            let run = inject_file(
                &reference,
                &path,
                &out,
                &["--json-out", report.to_str().unwrap()],
            );
            assert_eq!(run.code, Some(0), "{file}: {}", run.describe());
            assert!(
                fs::read(&out).unwrap() == want,
                "{file} gives another config than {release}"
            );
            let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
            let named = &r["target"]["bootimage_named"];
            assert_eq!(r["target"]["bootimage"], release, "{file}");
            assert_eq!(named["version"], release, "{file}");
            assert_eq!(named["form"], form, "{file}: {named}");
            assert_eq!(named["file"]["kind"], *kind, "{file}: {named}");
            assert_eq!(named["file"]["within"], *within, "{file}: {named}");
            assert_eq!(named["file"]["path"], path.display().to_string(), "{file}");
            assert!(
                run.stderr
                    .contains(&format!("in {within} of {kind} {}", path.display())),
                "{file}: {}",
                run.stderr
            );
            let run = mcd_inject([
                "verify",
                out.to_str().unwrap(),
                "--bootimage-file",
                path.to_str().unwrap(),
            ]);
            assert_eq!(run.code, Some(0), "verify {file}: {}", run.describe());
        }
    }
    // An OKD release names the bootimage its installer pins: the same config.
    let reference = fixture("okd-4.7").reference("oci");
    let (a, b) = (work.path().join("a.ign"), work.path().join("b.ign"));
    for (name, out) in [("okd-4.6", &a), ("fcos-33.20201201.3.0", &b)] {
        let run = inject(&reference, name, out, &[]);
        assert_eq!(run.code, Some(0), "{name}: {}", run.describe());
    }
    assert!(fs::read(&a).unwrap() == fs::read(&b).unwrap());
    // A name the report quotes as given; the version form keeps the short line.
    let reference = fixture("mco-4.16").reference("oci");
    let out = work.path().join("v.ign");
    let run = inject(&reference, "4.2", &out, &["--json"]);
    let r: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(r["target"]["bootimage_named"]["form"], "version");
    assert_eq!(r["target"]["bootimage_named"]["file"], Value::Null);
}

/// `--bootimage ami-…` with the installer's file that maps it: rhcos.json's `amis` (4.1
/// to 4.7), stream metadata's `architectures.ARCH.images.aws.regions`; the region the
/// one that holds the AMI, or `--region`. The config is the release's, byte for byte.
#[test]
fn an_ami_with_the_installers_file_gives_its_releases_config() {
    let (_dir, b42, b410, _) = builds();
    let reference = fixture("mco-4.16").reference("oci");
    let work = tempfile::tempdir().unwrap();
    for (release, ami, file, within) in [
        (
            "4.2",
            "ami-01e7fdcb66157b224",
            b42.join("rhcos.json"),
            "amis.us-east-1.hvm (AMI ami-01e7fdcb66157b224)",
        ),
        (
            "4.10",
            "ami-0e9c8e1b2f0e4a1c2",
            b410.join("installer-stream.json"),
            "architectures.x86_64.images.aws.regions.eu-west-1 (AMI ami-0e9c8e1b2f0e4a1c2)",
        ),
    ] {
        let want = work.path().join(format!("{release}.ign"));
        let run = inject(&reference, release, &want, &[]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        let out = work.path().join("ami.ign");
        let run = inject_file(&reference, &file, &out, &["--bootimage", ami, "--json"]);
        assert_eq!(run.code, Some(0), "{ami}: {}", run.describe());
        assert!(
            fs::read(&out).unwrap() == fs::read(&want).unwrap(),
            "{ami} gives another config than {release}"
        );
        let r: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(r["target"]["bootimage"], release);
        assert_eq!(r["target"]["bootimage_named"]["file"]["within"], within);
        assert_eq!(
            r["target"]["bootimage_named"]["file"]["kind"],
            "stream metadata"
        );
        let path = within.split(' ').next().unwrap();
        let region = path
            .split('.')
            .nth(if release == "4.2" { 1 } else { 5 })
            .unwrap();
        let run = inject_file(
            &reference,
            &file,
            &out,
            &["--bootimage", ami, "--region", region],
        );
        assert_eq!(run.code, Some(0), "{ami} in {region}: {}", run.describe());
    }
    // Refused: an AMI of another region than --region, an AMI the file does not hold
    // (exit 1, nothing written); an AMI without its file, an AMI ID of the wrong form, a
    // --region without an AMI (exit 2).
    let rhcos = b42.join("rhcos.json");
    for (extra, code, says) in [
        (
            &["--bootimage", "ami-01e7fdcb66157b224", "--region", "eu-west-1"][..],
            1,
            "ami-01e7fdcb66157b224 is not the AWS image of region eu-west-1 (--region) in it, but of us-east-1",
        ),
        (
            &["--bootimage", "ami-0123456789abcdef0"][..],
            1,
            "no region's AWS image in it is ami-0123456789abcdef0",
        ),
    ] {
        let out = work.path().join("refused.ign");
        let run = inject_file(&reference, &rhcos, &out, extra);
        assert_eq!(run.code, Some(code), "{extra:?}: {}", run.describe());
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(run.stderr.contains(&format!("--bootimage-file {}", rhcos.display())));
        assert!(!out.exists());
    }
    let out = work.path().join("refused.ign");
    let run = inject_file(
        &reference,
        &b42.join("disk.qcow2"),
        &out,
        &["--bootimage", "ami-01e7fdcb66157b224"],
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr
            .contains("is looked up in the installer's rhcos.json"),
        "{}",
        run.stderr
    );
    for (args, says) in [
        (
            &["--bootimage", "ami-01e7fdcb66157b224"][..],
            "give that file with --bootimage-file",
        ),
        (&["--bootimage", "ami-xyz"][..], "is not an AMI ID"),
        (
            &["--bootimage", "4.2", "--region", "us-east-1"][..],
            "--region is read only with --bootimage ami-",
        ),
    ] {
        let mut all = vec![
            "inject",
            "--image",
            &reference,
            "--ign",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let run = mcd_inject(all);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.describe());
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
}

/// The test images are what the platforms ship: an isohybrid ISO with an El Torito boot
/// record, a GPT on 4096-byte sectors, an OVA with its OVF first and a streamOptimized
/// VMDK, a GNU sparse tar (oldgnu) of disk.raw, a fixed VHD.
fn assert_made_as_real_ones_are(dir: &Path) {
    let iso = fs::read(dir.join("live.iso")).unwrap();
    assert_eq!(&iso[510..512], b"\x55\xaa", "no isohybrid MBR");
    // The boot record volume descriptor (ECMA-119 8.2) follows the primary one.
    assert_eq!(&iso[0x8800..0x8800 + 6], b"\x00CD001");
    assert_eq!(&iso[0x8807..0x8807 + 23], b"EL TORITO SPECIFICATION");
    let head = |name: &str, n: usize| {
        let mut f = fs::File::open(dir.join(name)).unwrap();
        let mut b = vec![0u8; n];
        std::io::Read::read_exact(&mut f, &mut b).unwrap();
        b
    };
    let kn = head("disk-4kn.raw", 8192);
    assert_eq!(&kn[4096..4104], b"EFI PART");
    assert_ne!(&kn[512..520], b"EFI PART");
    let ova = head("disk.ova", 1024);
    assert!(ova.starts_with(b"disk.ovf\0"), "the OVF is not first");
    let vmdk = head("disk.vmdk", 512);
    assert_eq!(&vmdk[..4], b"KDMV");
    assert_eq!(
        vmdk[10], 3,
        "not streamOptimized (compressed grains with markers)"
    );
    let tar = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "gzip -dc {} | head -c 512",
            dir.join("gcp.tar.gz").display()
        ))
        .output()
        .unwrap()
        .stdout;
    assert_eq!(&tar[..8], b"disk.raw");
    assert_eq!(tar[156], b'S', "disk.raw is not a GNU sparse member");
    assert_eq!(&tar[257..265], b"ustar  \0", "not the oldgnu format");
    let size = fs::metadata(dir.join("disk.vhd")).unwrap().len();
    let mut f = fs::File::open(dir.join("disk.vhd")).unwrap();
    let mut footer = [0u8; 512];
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(size - 512)).unwrap();
    std::io::Read::read_exact(&mut f, &mut footer).unwrap();
    assert_eq!(&footer[..8], b"conectix");
    assert_eq!(&footer[60..64], &2u32.to_be_bytes(), "not a fixed VHD");
}

/// The provenance record of a config, and the config without it.
fn split_provenance(ign: &[u8]) -> (Value, Value) {
    let mut cfg: Value = serde_json::from_slice(ign).unwrap();
    let files = cfg["storage"]["files"].as_array_mut().unwrap();
    let at = files
        .iter()
        .position(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .expect("the config carries a provenance record");
    let f = files.remove(at);
    let bytes =
        mcd_inject::ignition::decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap();
    (serde_json::from_slice(&bytes).unwrap(), cfg)
}

/// A release's version as the cluster reports it (`4.2.36`) names its X.Y row: the same
/// config, byte for byte. An RHCOS build ID of 4.19 on names RHEL 9.6, the bootimage of
/// 4.19, 4.20 and 4.21, which give the same build and spec: the config of each, apart
/// from the provenance's target, which records the range.
#[test]
fn release_versions_and_shared_build_ids_give_their_rows_config() {
    let reference = fixture("mco-4.16").reference("oci");
    let work = tempfile::tempdir().unwrap();
    let config = |name: &str, extra: &[&str]| {
        let out = work.path().join(format!("{name}.ign"));
        let run = inject(&reference, name, &out, extra);
        assert_eq!(run.code, Some(0), "{name}: {}", run.describe());
        (fs::read(&out).unwrap(), run)
    };
    let (want, _) = config("4.2", &[]);
    let (got, run) = config("4.2.36", &["--json"]);
    assert!(got == want, "4.2.36 gives another config than 4.2");
    let r: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(r["target"]["bootimage"], "4.2");
    assert_eq!(r["target"]["bootimage_named"]["form"], "release-version");
    assert_eq!(r["target"]["bootimage_named"]["value"], "4.2.36");

    let rows = ["4.19", "4.20", "4.21"];
    let (shared, run) = config("9.6.20250121-0", &["--json"]);
    assert!(
        run.stderr
            .contains("for bootimage 4.19-4.21 (RHCOS build ID 9.6.20250121-0)"),
        "{}",
        run.stderr
    );
    let r: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        r["target"]["bootimage_named"]["range"],
        serde_json::json!(rows)
    );
    let (p, rest) = split_provenance(&shared);
    assert_eq!(p["target"]["bootimage"], "4.19");
    assert_eq!(p["target"]["bootimage_range"], serde_json::json!(rows));
    for row in rows {
        let (bytes, _) = config(row, &[]);
        let (mut row_p, row_rest) = split_provenance(&bytes);
        assert!(
            row_rest == rest,
            "{row}: the config differs outside the provenance"
        );
        assert_eq!(row_p["target"]["bootimage"], row);
        let mut shared_p = p.clone();
        row_p.as_object_mut().unwrap().remove("target");
        shared_p.as_object_mut().unwrap().remove("target");
        assert_eq!(
            row_p, shared_p,
            "{row}: the provenance differs outside its target"
        );
    }
    // RHEL 10.2 is the bootimage of 5.0 and 5.1.
    let (_, run) = config("10.2.20260301-0", &["--json"]);
    let r: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        r["target"]["bootimage_named"]["range"],
        serde_json::json!(["5.0", "5.1"])
    );
}

/// A damaged or truncated file of each kind, a file of no kind, a missing file: exit 1,
/// a message naming the file, what it was read as and what is wrong, and no output.
#[test]
fn damaged_bootimage_files_are_refused_naming_what_is_wrong() {
    let (_dir, b42, b410, _) = builds();
    let reference = fixture("mco-4.16").reference("oci");
    let work = tempfile::tempdir().unwrap();
    let made = |name: &str, from: &Path, edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = fs::read(from).unwrap();
        edit(&mut bytes);
        let p = work.path().join(name);
        fs::write(&p, bytes).unwrap();
        p
    };
    let raw_head = |n: usize| {
        // The first n bytes of the raw disk (it is 640 MiB, mostly holes).
        let mut f = fs::File::open(b42.join("disk.raw")).unwrap();
        let mut buf = vec![0u8; n];
        std::io::Read::read_exact(&mut f, &mut buf).unwrap();
        let p = work.path().join(format!("head-{n}.raw"));
        fs::write(&p, buf).unwrap();
        p
    };
    let truncate = |n: usize| move |b: &mut Vec<u8>| b.truncate(n);
    let cases: Vec<(PathBuf, &[&str])> = vec![
        (
            made("short.qcow2", &b42.join("disk.qcow2"), &|b| {
                b.truncate(b.len() / 2)
            }),
            &["qcow2 disk image", "ends early (truncated?)"],
        ),
        (
            made("v9.qcow2", &b42.join("disk.qcow2"), &|b| b[7] = 9),
            &["qcow2 disk image", "qcow2 version 9, not 2 or 3"],
        ),
        (
            made("backed.qcow2", &b42.join("disk.qcow2"), &|b| b[15] = 200),
            &["qcow2 disk image", "it has a backing file"],
        ),
        (
            made("cluster.qcow2", &b42.join("disk.qcow2"), &|b| {
                // The first bytes of every compressed cluster the first L2 table maps
                // overwritten (the header and tables stay as they are).
                let be = |b: &[u8], at: usize, n: usize| {
                    b[at..at + n]
                        .iter()
                        .fold(0u64, |v, &x| v << 8 | u64::from(x))
                };
                let cluster_bits = be(b, 20, 4);
                let l1 = be(b, 40, 8) as usize;
                let l2 = be(b, l1, 8) & 0x00ff_ffff_ffff_fe00;
                let x = 62 - (cluster_bits - 8);
                let mut damaged = 0;
                for i in 0..1usize << (cluster_bits - 3) {
                    let entry = be(b, l2 as usize + 8 * i, 8);
                    if entry & 1 << 62 != 0 {
                        let host = (entry & ((1 << x) - 1)) as usize;
                        b[host..host + 16].fill(0xff);
                        damaged += 1;
                    }
                }
                assert!(damaged > 0, "no compressed cluster in the first L2 table");
            }),
            &["qcow2 disk image", "a compressed cluster at host offset"],
        ),
        (
            raw_head(2 << 20),
            &["raw disk image", "past the disk's end", "(truncated?)"],
        ),
        (
            {
                let p = raw_head(1 << 20);
                let mut b = fs::read(&p).unwrap();
                b[512 + 16] ^= 0xff; // the header's CRC32
                fs::write(&p, b).unwrap();
                p
            },
            &["raw disk image", "GUID partition table is damaged"],
        ),
        (
            made("short.raw.gz", &b42.join("disk.raw.gz"), &truncate(600)),
            &["gzip data", "ends early (truncated?)"],
        ),
        (
            made("short.raw.xz", &b42.join("disk.raw.xz"), &truncate(300)),
            &["xz data", "ends early (truncated?)"],
        ),
        (
            made("blank.iso", &b42.join("live.iso"), &|b| {
                b[32768 + 40..32768 + 72].fill(b' ')
            }),
            &["live ISO", "volume ID is empty"],
        ),
        (
            made("other.iso", &b42.join("live.iso"), &|b| {
                b[32768 + 40..32768 + 72].copy_from_slice(b"Fedora-WS-Live-40               ")
            }),
            &[
                "the volume ID",
                "live ISO",
                "\"Fedora-WS-Live-40\"",
                "an RHCOS build ID",
            ],
        ),
        (
            made("short.json", &b410.join("stream.json"), &truncate(300)),
            &["stream metadata", "not valid JSON (line", "it ends early"],
        ),
        (
            made("noarch.json", &b410.join("stream.json"), &|b| {
                *b = String::from_utf8(b.clone())
                    .unwrap()
                    .replace("\"x86_64\"", "\"s390x\"")
                    .into_bytes()
            }),
            &[
                "stream metadata",
                "no architecture x86_64 (from --platform); it has aarch64, s390x",
            ],
        ),
        (
            made("notes.txt", &b410.join("stream.json"), &|b| {
                *b = b"bootimage: the usual one\n".to_vec()
            }),
            &[
                "not a bootimage file",
                "stream metadata JSON",
                "qcow2 or raw disk image",
            ],
        ),
        (
            work.path().join("missing.qcow2"),
            &["missing.qcow2", "No such file"],
        ),
        (
            made("far.vmdk", &b42.join("disk.vmdk"), &|b| {
                // The first grain the first grain table maps, moved past the end.
                let le = |b: &[u8], at: usize, n: usize| {
                    b[at..at + n]
                        .iter()
                        .rev()
                        .fold(0u64, |v, &x| v << 8 | u64::from(x))
                };
                let gd = le(b, 56, 8) as usize * 512;
                let gt = le(b, gd, 4) as usize * 512;
                let first = (0..512)
                    .map(|i| gt + 4 * i)
                    .find(|&at| le(b, at, 4) != 0)
                    .expect("an allocated grain");
                b[first..first + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
            }),
            &["VMDK disk image", "past the end of the extent"],
        ),
        (
            made("short.ova", &b42.join("disk.ova"), &|b| {
                b.truncate(b.len() / 2)
            }),
            &[
                "OVA",
                "tar member disk.vmdk",
                "past the end of the archive",
                "(truncated?)",
            ],
        ),
        (
            {
                // A sparse copy (the disk is 640 MiB, mostly holes), one footer byte
                // changed.
                let p = work.path().join("sum.vhd");
                let cp = Command::new("cp")
                    .arg("--sparse=always")
                    .arg(b42.join("disk.vhd"))
                    .arg(&p)
                    .status()
                    .unwrap();
                assert!(cp.success());
                let len = fs::metadata(&p).unwrap().len();
                let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
                std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(len - 512 + 47)).unwrap();
                std::io::Write::write_all(&mut f, b"\x01").unwrap();
                p
            },
            &["fixed VHD", "footer's checksum does not match"],
        ),
        (
            {
                // The archive cut inside disk.raw's data, gzip again: a whole gzip
                // stream of a truncated tar.
                let p = work.path().join("short.tar.gz");
                let cut = Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "gzip -dc '{}' | head -c 65536 | gzip -1 >'{}'",
                        b42.join("gcp.tar.gz").display(),
                        p.display()
                    ))
                    .status()
                    .unwrap();
                assert!(cut.success());
                p
            },
            &["gzip-compressed tar archive", "(truncated?)"],
        ),
    ];
    for (path, says) in cases {
        let out = work.path().join("out.ign");
        let run = inject_file(&reference, &path, &out, &[]);
        assert_eq!(run.code, Some(1), "{}: {}", path.display(), run.describe());
        assert!(
            run.stderr
                .contains(&format!("--bootimage-file {}", path.display())),
            "{}",
            run.stderr
        );
        for s in says {
            assert!(
                run.stderr.contains(s),
                "{}: {s:?} in {}",
                path.display(),
                run.stderr
            );
        }
        assert!(!out.exists(), "{}: an output was written", path.display());
    }
    // --bootimage and --bootimage-file together cannot be parsed.
    let out = work.path().join("out.ign");
    let mut run = inject_file(
        &reference,
        &b42.join("disk.qcow2"),
        &out,
        &["--bootimage", "4.2"],
    );
    assert_eq!(run.code, Some(2), "{}", run.describe());
    run = mcd_inject(["verify", "x.ign", "--target-rhel", "8"]);
    assert_eq!(run.code, Some(2), "{}", run.describe());
}

/// `--bootimage` reads an RHCOS build ID and a cloud image name as the release they name;
/// a name of no known form, or whose RHEL is not its release's, is a command-line error
/// naming the forms, and nothing is written.
#[test]
fn bad_bootimage_names_are_command_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-4.16").reference("oci");
    for (bad, says) in [
        ("42.80.2019.0", "an RHCOS build ID (42.80.20191002.0"),
        (
            "42.92.20191002.0",
            "RHCOS 4.2 is built on RHEL 8, but the build ID names RHEL 9",
        ),
        ("9.1.20250513-0", "an RHCOS build ID (42.80.20191002.0"),
        ("4.2.36.1", "an OpenShift version X.Y or X.Y.Z"),
        // A cloud image of another architecture than the node's (--platform).
        (
            "rhcos-410-84-202205191234-0-aws-aarch64",
            "a cloud image for arm64, but the node's platform is amd64",
        ),
        // OKD forms that name what the table lacks.
        (
            "40.20240416.3.1",
            "fcos-40 is not in the table; its OKD rows are fcos-31",
        ),
        ("okd-4.3", "the table knows the bootimages of OKD 4.4, 4.5"),
    ] {
        let target = dir.path().join("out.ign");
        let run = inject(&reference, bad, &target, &[]);
        assert_eq!(run.code, Some(2), "{bad}: {}", run.describe());
        assert!(run.stderr.contains(says), "{bad}: {}", run.describe());
        assert!(!target.exists(), "{bad}: an output was written");
    }
}
