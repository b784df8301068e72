//! An OVA, as vSphere takes its images: a tar archive of an OVF descriptor (first) and a
//! streamOptimized VMDK. The build is the `Version` of the OVF's `ProductSection`, where
//! coreos-assembler writes it; else the BLS entries of the VMDK's `boot` partition, read
//! grain by grain ([`super::vmdk`]).

use std::fs::File;

use super::tar::{self, MemberFile};
use super::vmdk::Vmdk;
use super::{bad, disk, quotable, Bad, ReadAt};

/// An OVF descriptor is a few KiB.
const MAX_OVF: u64 = 1 << 20;

/// Whether the archive's members include an OVF descriptor.
pub(super) fn is_ova(file: &mut File) -> Result<bool, Bad> {
    Ok(tar::members(file, &|n| n.ends_with(".ovf"))?
        .iter()
        .any(|m| m.name.ends_with(".ovf")))
}

/// The build the OVA names, and where.
pub(super) fn read(mut file: File) -> Result<(String, String), Bad> {
    let (mut ovf, mut vmdk) = (None, None);
    for m in tar::members(&mut file, &|_| false)? {
        if m.name.ends_with(".ovf") && ovf.is_none() {
            ovf = Some(m);
        } else if m.name.ends_with(".vmdk") && vmdk.is_none() {
            vmdk = Some(m);
        }
    }
    let Some(ovf) = ovf else {
        return bad("no OVF descriptor (*.ovf) among its tar members");
    };
    let Some(vmdk) = vmdk else {
        return bad("no disk (*.vmdk) among its tar members");
    };
    let mut descriptor = MemberFile::new(&mut file, ovf);
    let len = descriptor.size().unwrap_or(0);
    if len > MAX_OVF {
        return bad(format!(
            "its OVF descriptor is {len} bytes, more than one holds"
        ));
    }
    let mut text = vec![0u8; len as usize];
    descriptor.read_at(0, &mut text)?;
    if let Some(version) = product_version(&String::from_utf8_lossy(&text)) {
        return Ok((version, "the OVF's ProductSection Version".to_string()));
    }
    let name = if quotable(&vmdk.name) {
        vmdk.name.clone()
    } else {
        "its VMDK".to_string()
    };
    let disk = Vmdk::open(MemberFile::new(file, vmdk))?;
    let (id, entry) = disk::read_boot_entry(Box::new(disk))?;
    Ok((id, format!("{entry} in {name}")))
}

/// The `Version` in the OVF's `ProductSection` (of any namespace prefix), when it is a
/// name a report may quote.
fn product_version(ovf: &str) -> Option<String> {
    let start = ovf.find("ProductSection")?;
    let section = &ovf[start..];
    let section = &section[..section[1..]
        .find("ProductSection")
        .map_or(section.len(), |e| e + 1)];
    let open = ["<Version>", ":Version>"]
        .iter()
        .filter_map(|tag| section.find(tag).map(|at| at + tag.len()))
        .min()?;
    let value = &section[open..];
    let value = value[..value.find('<')?].trim();
    quotable(value).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::product_version;

    #[test]
    fn reads_the_product_version() {
        let ovf = r#"<Envelope><VirtualSystem ovf:id="image"><Name>rhcos</Name>
            <ProductSection><Info>Information about the installed software</Info>
            <Product>Red Hat Enterprise Linux CoreOS</Product><Vendor>Red Hat</Vendor>
            <Version>42.80.20191002.0</Version></ProductSection></VirtualSystem></Envelope>"#;
        assert_eq!(product_version(ovf).as_deref(), Some("42.80.20191002.0"));
        let prefixed = ovf
            .replace("<Version>", "<ovf:Version>")
            .replace("</Version>", "</ovf:Version>");
        assert_eq!(
            product_version(&prefixed).as_deref(),
            Some("42.80.20191002.0")
        );
        for none in [
            "<Envelope><VirtualSystem/></Envelope>",
            "<ProductSection><Version></Version></ProductSection>",
            "<ProductSection><Version>a b</Version></ProductSection>",
            "<ProductSection></ProductSection><Version>1.2</Version>",
        ] {
            assert_eq!(product_version(none), None, "{none}");
        }
    }
}
