//! ELF facts of a candidate binary: what it needs from the system it runs on.
//!
//! The file is mapped, not read: `object` parses lazily, so only the headers, the
//! dynamic section and the version-needs section of an 80 MB binary are touched.

use std::cmp::Ordering;
use std::fmt;
use std::fs::File;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::FileKind;
use serde::Serialize;

/// How a binary is linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Linkage {
    /// No interpreter and no shared libraries: runs on any kernel of its machine.
    Static,
    /// Linked against shared libraries, through a program interpreter.
    Dynamic,
}

/// A dotted version such as a glibc version (`2.28`) or `2.2.5`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DottedVersion(pub Vec<u32>);

impl Ord for DottedVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        for i in 0..n {
            let a = self.0.get(i).copied().unwrap_or(0);
            let b = other.0.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => continue,
                o => return o,
            }
        }
        Ordering::Equal
    }
}

impl PartialOrd for DottedVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for DottedVersion {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map(DottedVersion)
    }
}

impl fmt::Display for DottedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

impl Serialize for DottedVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What the ELF headers say about a binary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ElfFacts {
    /// The OCI architecture name of the machine (`amd64`, `arm64`, ...), or `em-N`.
    pub arch: String,
    /// 32 or 64.
    pub class: u8,
    /// Static or dynamic.
    pub linkage: Linkage,
    /// The program interpreter (`PT_INTERP`), for dynamic binaries.
    pub interpreter: Option<String>,
    /// DT_NEEDED sonames, in file order.
    pub needed: Vec<String>,
    /// The highest `GLIBC_x.y` version node needed.
    pub max_glibc: Option<DottedVersion>,
    /// `OPENSSL_*` version nodes needed (from libcrypto or libssl), sorted.
    pub openssl_versions: Vec<String>,
    /// `DT_RUNPATH` directories, as written (`$ORIGIN` unexpanded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runpath: Vec<String>,
    /// `DT_RPATH` directories, as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rpath: Vec<String>,
    /// The oldest Linux kernel the object runs on, from its `NT_GNU_ABI_TAG` note (glibc
    /// marks its loader and libc so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_kernel: Option<DottedVersion>,
}

impl ElfFacts {
    /// The libcrypto soname the binary links, if any.
    pub fn libcrypto(&self) -> Option<&str> {
        self.needed
            .iter()
            .map(String::as_str)
            .find(|n| n.starts_with("libcrypto.so"))
    }

    /// A one-line summary for reports.
    pub fn summary(&self) -> String {
        match self.linkage {
            Linkage::Static => format!("{} ELF{} static", self.arch, self.class),
            Linkage::Dynamic => {
                let glibc = self
                    .max_glibc
                    .as_ref()
                    .map(|v| format!("GLIBC_{v}"))
                    .unwrap_or_else(|| "no GLIBC version".into());
                format!(
                    "{} ELF{} dynamic, {glibc}, needs {}",
                    self.arch,
                    self.class,
                    self.needed.join(" ")
                )
            }
        }
    }
}

/// Reads the ELF facts of a file, mapping it rather than reading it.
pub fn read_facts(path: &Path) -> Result<ElfFacts> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = file.metadata()?.len();
    if len == 0 {
        bail!("{} is empty, not an ELF file", path.display());
    }
    // SAFETY: the file is a private spool file or a user-named input that nothing
    // else is expected to truncate while it is parsed; object checks every bound.
    let map = unsafe { memmap2::Mmap::map(&file) }
        .with_context(|| format!("mapping {}", path.display()))?;
    facts_of(&map).with_context(|| format!("reading the ELF headers of {}", path.display()))
}

/// Reads the ELF facts of bytes in memory.
pub fn facts_of(data: &[u8]) -> Result<ElfFacts> {
    match FileKind::parse(data) {
        Ok(FileKind::Elf64) => facts::<elf::FileHeader64<object::Endianness>>(data),
        Ok(FileKind::Elf32) => facts::<elf::FileHeader32<object::Endianness>>(data),
        Ok(k) => bail!("not an ELF file ({k:?})"),
        Err(_) => bail!("not an ELF file"),
    }
}

fn arch_name(machine: elf::Machine, little_endian: bool, class64: bool) -> String {
    match (machine, class64) {
        (elf::EM_X86_64, true) => "amd64".into(),
        (elf::EM_AARCH64, true) => "arm64".into(),
        (elf::EM_PPC64, true) if little_endian => "ppc64le".into(),
        (elf::EM_PPC64, true) => "ppc64".into(),
        (elf::EM_S390, true) => "s390x".into(),
        (elf::EM_S390, false) => "s390".into(),
        (elf::EM_386, false) => "386".into(),
        (elf::EM_ARM, false) => "arm".into(),
        (elf::EM_RISCV, true) => "riscv64".into(),
        (m, _) => format!("em-{}", m.0),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn facts<Elf: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Result<ElfFacts> {
    let header = Elf::parse(data).context("bad ELF header")?;
    let endian = header.endian().context("bad ELF byte order")?;
    let class64 = header.is_class_64();
    let arch = arch_name(header.e_machine(endian), header.is_little_endian(), class64);

    let mut interpreter = None;
    let mut min_kernel = None;
    for ph in header
        .program_headers(endian, data)
        .context("bad program headers")?
    {
        if let Some(i) = ph.interpreter(endian, data).context("bad PT_INTERP")? {
            interpreter = Some(text(i));
        }
        if let Some(mut notes) = ph.notes(endian, data).context("bad PT_NOTE")? {
            while let Some(note) = notes.next().context("bad note")? {
                let desc = note.desc();
                if note.name() == b"GNU"
                    && note.n_type(endian) == elf::NT_GNU_ABI_TAG
                    && desc.len() >= 16
                {
                    let word = |i: usize| {
                        let b: [u8; 4] = desc[i * 4..i * 4 + 4].try_into().expect("4 bytes");
                        if header.is_little_endian() {
                            u32::from_le_bytes(b)
                        } else {
                            u32::from_be_bytes(b)
                        }
                    };
                    // The first word is the OS: 0 is Linux (ELF_NOTE_OS_LINUX).
                    if word(0) == elf::ELF_NOTE_OS_LINUX {
                        min_kernel = Some(DottedVersion(vec![word(1), word(2), word(3)]));
                    }
                }
            }
        }
    }

    let sections = header
        .sections(endian, data)
        .context("bad section headers")?;
    let mut needed = Vec::new();
    let (mut runpath, mut rpath) = (Vec::new(), Vec::new());
    if let Some((dyns, link)) = sections.dynamic(endian, data).context("bad .dynamic")? {
        let strings = sections
            .strings(endian, data, link)
            .context("bad dynamic strings")?;
        for d in dyns {
            let tag = d.d_tag(endian);
            if tag == elf::DT_NULL {
                break;
            }
            let list = match tag {
                elf::DT_NEEDED => &mut needed,
                elf::DT_RUNPATH => &mut runpath,
                elf::DT_RPATH => &mut rpath,
                _ => continue,
            };
            let off: u64 = d.d_val(endian).into();
            let value = u32::try_from(off)
                .ok()
                .and_then(|o| strings.get(o).ok())
                .context("bad dynamic string")?;
            let value = text(value);
            if tag == elf::DT_NEEDED {
                list.push(value);
            } else {
                list.extend(value.split(':').filter(|d| !d.is_empty()).map(String::from));
            }
        }
    }

    let mut max_glibc: Option<DottedVersion> = None;
    let mut openssl_versions = Vec::new();
    if let Some((mut needs, link)) = sections
        .gnu_verneed(endian, data)
        .context("bad .gnu.version_r")?
    {
        let strings = sections
            .strings(endian, data, link)
            .context("bad version strings")?;
        while let Some((_need, mut aux)) = needs.next().context("bad version need")? {
            while let Some(a) = aux.next().context("bad version need entry")? {
                let name = text(a.name(endian, strings).context("bad version name")?);
                if let Some(v) = name.strip_prefix("GLIBC_") {
                    // GLIBC_PRIVATE and the like are no version.
                    if let Ok(v) = v.parse::<DottedVersion>() {
                        if max_glibc.as_ref().is_none_or(|m| v > *m) {
                            max_glibc = Some(v);
                        }
                    }
                } else if name.starts_with("OPENSSL_") && !openssl_versions.contains(&name) {
                    openssl_versions.push(name);
                }
            }
        }
    }
    openssl_versions.sort();

    let linkage = if interpreter.is_none() && needed.is_empty() {
        Linkage::Static
    } else {
        Linkage::Dynamic
    };
    Ok(ElfFacts {
        arch,
        class: if class64 { 64 } else { 32 },
        linkage,
        interpreter,
        needed,
        max_glibc,
        openssl_versions,
        runpath,
        rpath,
        min_kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        let v = |s: &str| s.parse::<DottedVersion>().unwrap();
        assert!(v("2.28") < v("2.34"));
        assert!(v("2.2.5") < v("2.3"));
        assert!(v("2.9") < v("2.10"));
        assert_eq!(v("2.28"), v("2.28"));
        assert_eq!(v("2.28").to_string(), "2.28");
    }

    #[test]
    fn refuses_non_elf() {
        assert!(facts_of(b"#!/bin/sh\necho hi\n").is_err());
        assert!(facts_of(b"\x7fELF").is_err());
    }

    #[test]
    fn reads_the_running_test_binary() {
        let me = std::env::current_exe().unwrap();
        let f = read_facts(&me).unwrap();
        assert_eq!(f.class, 64);
        if cfg!(all(
            target_arch = "x86_64",
            target_os = "linux",
            target_env = "gnu"
        )) {
            assert_eq!(f.arch, "amd64");
            assert_eq!(f.linkage, Linkage::Dynamic);
            assert!(f.needed.iter().any(|n| n == "libc.so.6"), "{f:?}");
            assert!(f.max_glibc.is_some());
            assert!(f.interpreter.as_deref().unwrap().contains("ld-linux"));
        }
    }

    /// Builds small C programs with the system compiler, when there is one, to check
    /// static detection and OpenSSL nodes. A machine without gcc must not hide this.
    #[test]
    fn reads_gcc_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("m.c");
        std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
        let out = dir.path().join("s");
        let st = std::process::Command::new("gcc")
            .args(["-static", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("gcc is needed for this test (apt-get install gcc libc6-dev)");
        assert!(st.success());
        let f = read_facts(&out).unwrap();
        assert_eq!(f.linkage, Linkage::Static, "{f:?}");
        assert!(f.needed.is_empty());
        assert!(f.interpreter.is_none());
    }
}
