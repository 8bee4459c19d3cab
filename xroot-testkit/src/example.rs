//! Locates the binary of one of the workspace's examples for a test or
//! bench, building it first: `$CARGO build --workspace --example NAME` into
//! the target dir and profile of the running test. `--workspace` resolves
//! features as `scripts/test` (`cargo test --workspace`) does, so after
//! that command built the examples this build is a no-op; a build for one
//! package would resolve them differently and rebuild much of the tree
//! (tokio, DataFusion). Cargo holds no lock while tests run, so the nested
//! build does not wait.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/examples/NAME`, built for the profile of the running
/// test or bench binary (`target/<profile>/deps/...`). Panics when cargo
/// fails.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--workspace", "--example", name, "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
        .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap());
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some(profile) => {
            cargo.args(["--profile", profile]);
        }
        None => panic!("unexpected target dir {}", profile_dir.display()),
    }
    let out = cargo.output().expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build --example {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}
