//! Marks the interop tests whose stock peer is not installed as ignored: see
//! `tests/support/probes.rs`.

#[path = "tests/support/probes.rs"]
mod probes;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=tests/support/probes.rs");
    probes::emit();
}
