//! `inject --secret-out`: the user-data Secret a MachineSet's `userDataSecret` names,
//! judged by kubectl. `kubectl create --dry-run=client -o yaml -f` decodes the manifest
//! into a typed Secret and prints it as it would send it; it must print the manifest
//! unchanged (a field it does not know would be dropped, a `data` value that is not
//! base64 refused). kubectl's own generator (`kubectl create secret generic`) must make
//! the same `data` of the same config. kubectl asks a server which kinds exist before
//! it reads a manifest: `tests/support/kube_discovery.py` answers that on loopback.

use std::fs;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::harness::node::run;
use crate::harness::{crate_root, fixture, mcd_inject};

/// The discovery stand-in, killed when dropped.
struct Discovery {
    child: std::process::Child,
    port: u16,
}

impl Discovery {
    fn start() -> Discovery {
        let mut child = Command::new("python3")
            .arg(crate_root().join("tests/support/kube_discovery.py"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the discovery stand-in");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .expect("kube_discovery.py prints its port");
        Discovery { child, port }
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl() -> Command {
    assert!(
        Command::new("kubectl")
            .args(["version", "--client"])
            .output()
            .is_ok_and(|o| o.status.success()),
        "kubectl is missing: apt-get install kubernetes-client"
    );
    let mut c = Command::new("kubectl");
    // No kubeconfig of the machine's.
    c.env("KUBECONFIG", "/dev/null");
    c
}

fn yaml(bytes: &[u8]) -> Value {
    serde_yaml_ng::from_slice(bytes).expect("kubectl prints YAML")
}

#[test]
fn kubectl_reads_the_secret_back_unchanged_and_makes_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("worker.ign");
    let secret = dir.path().join("secret.yaml");
    let reference = fixture("mco-4.16").reference("oci");
    let r = mcd_inject([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.2",
        "--ign",
        cfg.to_str().unwrap(),
        "--secret-out",
        secret.to_str().unwrap(),
        "--secret-name",
        "worker-user-data-old-bootimages",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let ours = yaml(&fs::read(&secret).unwrap());

    let discovery = Discovery::start();
    let server = format!("http://127.0.0.1:{}", discovery.port);
    let (ok, text) = run(kubectl()
        .args(["--server", &server, "create", "--dry-run=client"])
        .args(["--validate=false", "-o", "yaml", "-f"])
        .arg(&secret));
    assert!(ok, "kubectl create -f: {text}");
    assert_eq!(yaml(text.as_bytes()), ours, "kubectl changed the manifest");

    let (ok, text) = run(kubectl()
        .args([
            "create",
            "secret",
            "generic",
            "worker-user-data-old-bootimages",
        ])
        .args([
            "-n",
            "openshift-machine-api",
            "--dry-run=client",
            "-o",
            "yaml",
        ])
        .arg(format!("--from-file=userData={}", cfg.display()))
        .arg("--from-literal=disableTemplating=true\n"));
    assert!(ok, "kubectl create secret generic: {text}");
    let made = yaml(text.as_bytes());
    assert_eq!(
        made["data"], ours["data"],
        "kubectl's own Secret of the config"
    );
    assert_eq!(made["metadata"]["name"], ours["metadata"]["name"]);
    assert_eq!(made["metadata"]["namespace"], ours["metadata"]["namespace"]);
}
