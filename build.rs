//! Marks the interop tests whose stock peer is not installed as ignored: see
//! `xroot-testkit/src/probes.rs`.

// The probes are the test kit's module, compiled in here by path: a build
// script cannot take the test kit as a build-dependency without compiling
// the whole kit (server, client, cache) a second time for the host, and the
// published crates' build scripts (xroot-sec, xroot-object-store) cannot
// depend on an unpublished crate at all.
#[path = "xroot-testkit/src/probes.rs"]
mod probes;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=xroot-testkit/src/probes.rs");
    probes::emit();
}
