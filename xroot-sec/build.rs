//! Marks this crate's unit tests whose tool (`openssl`, `xrdsssadmin`) is
//! not installed as ignored: see `xroot-testkit/src/probes.rs`. Not in the
//! published package (`exclude` in Cargo.toml), which has no build script.

// The test kit's probes, compiled in by path: this crate is published, and
// a published crate cannot have the unpublished test kit as a
// build-dependency (the script itself is left out of the package).
#[path = "../xroot-testkit/src/probes.rs"]
mod probes;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../xroot-testkit/src/probes.rs");
    probes::emit();
}
