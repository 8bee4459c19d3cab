//! The minimum Rust versions the project states, checked against what the
//! dependencies locked in `Cargo.lock` declare.
//!
//! Three kinds of statement, all in the manifests:
//! - each library crate's `rust-version` (its `[package]`): what its normal
//!   dependency closure (normal and build dependencies, followed
//!   transitively) needs;
//! - `[workspace.metadata.msrv] examples`: what the examples, tests and
//!   benches of every crate but `xroot-object-store` need (their
//!   dev-dependencies' closures too);
//! - `[workspace.metadata.msrv] datafusion`: the same for
//!   `xroot-object-store`, whose `sql` example and tests use DataFusion.
//!
//! The README's "Minimum Rust versions" quotes the three figures; this
//! test checks that it does. The dependency graph and every package's `rust-version` come from
//! `cargo metadata` (the lockfile does not carry `rust-version`), without
//! touching `Cargo.lock`. Every platform's dependencies count, so cargo
//! downloads the packages of other platforms a fresh machine lacks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::process::Command;

use serde_json::Value;

/// A Rust version as `rust-version` writes it (`1.85`, `1.87.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct RustVersion(u64, u64, u64);

impl RustVersion {
    fn parse(text: &str) -> RustVersion {
        let mut parts = text.split('.').map(|part| {
            part.parse::<u64>()
                .unwrap_or_else(|_| panic!("not a Rust version: {text:?}"))
        });
        let major = parts.next().expect("a major version");
        let minor = parts.next().unwrap_or(0);
        let patch = parts.next().unwrap_or(0);
        assert!(parts.next().is_none(), "not a Rust version: {text:?}");
        RustVersion(major, minor, patch)
    }
}

impl fmt::Display for RustVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)?;
        if self.2 != 0 {
            write!(f, ".{}", self.2)?;
        }
        Ok(())
    }
}

struct Package {
    name: String,
    version: String,
    rust_version: Option<RustVersion>,
}

/// The resolved graph: packages by id, and each package's dependency edges
/// (target id, whether the edge is a dev-dependency only).
struct Graph {
    packages: HashMap<String, Package>,
    edges: HashMap<String, Vec<(String, bool)>>,
    members: Vec<String>,
    msrv: Value,
}

fn metadata() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = Command::new(cargo)
        // not --offline: every platform's dependencies count, and a fresh
        // machine has downloaded only its own platform's; cargo fetches the
        // others' manifests from the registry the build uses
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--manifest-path", manifest])
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");

    let packages = json["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let id = p["id"].as_str().expect("package id").to_owned();
            let package = Package {
                name: p["name"].as_str().expect("name").to_owned(),
                version: p["version"].as_str().expect("version").to_owned(),
                rust_version: p["rust_version"].as_str().map(RustVersion::parse),
            };
            (id, package)
        })
        .collect();
    let edges = json["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .map(|dep| {
                    let kinds = dep["dep_kinds"].as_array().expect("dep_kinds");
                    assert!(!kinds.is_empty(), "a dependency edge without kinds");
                    let dev_only = kinds.iter().all(|k| k["kind"].as_str() == Some("dev"));
                    (dep["pkg"].as_str().expect("pkg").to_owned(), dev_only)
                })
                .collect();
            (node["id"].as_str().expect("node id").to_owned(), deps)
        })
        .collect();
    let members = json["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .map(|m| m.as_str().expect("member id").to_owned())
        .collect();
    Graph {
        packages,
        edges,
        members,
        msrv: json["metadata"]["msrv"].clone(),
    }
}

impl Graph {
    /// What building `root` pulls in: its normal and build dependencies
    /// (with `dev`, its dev-dependencies too), then theirs, without their
    /// dev-dependencies.
    fn closure(&self, root: &str, dev: bool) -> HashSet<&str> {
        let mut seen = HashSet::new();
        let mut stack: Vec<&str> = self.edges[root]
            .iter()
            .filter(|(_, dev_only)| dev || !dev_only)
            .map(|(id, _)| id.as_str())
            .collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(
                    self.edges[id]
                        .iter()
                        .filter(|(_, dev_only)| !dev_only)
                        .map(|(id, _)| id.as_str()),
                );
            }
        }
        seen
    }

    /// The highest `rust-version` in a closure and the packages that set it.
    fn highest(&self, closure: &HashSet<&str>) -> (Option<RustVersion>, Vec<String>) {
        let top = closure
            .iter()
            .filter_map(|id| self.packages[*id].rust_version)
            .max();
        let mut setters: Vec<String> = closure
            .iter()
            .map(|id| &self.packages[*id])
            .filter(|p| top.is_some() && p.rust_version == top)
            .map(|p| format!("{} {}", p.name, p.version))
            .collect();
        setters.sort();
        // the workspace's own crates last: the dependency that sets the
        // figure is the news
        setters.sort_by_key(|s| s.starts_with("xroot"));
        (top, setters)
    }

    /// Every package of a closure that needs more than `limit`.
    fn above(&self, closure: &HashSet<&str>, limit: RustVersion) -> Vec<String> {
        let mut above: Vec<String> = closure
            .iter()
            .map(|id| &self.packages[*id])
            .filter(|p| p.rust_version.is_some_and(|v| v > limit))
            .map(|p| format!("{} {} ({})", p.name, p.version, p.rust_version.unwrap()))
            .collect();
        above.sort();
        above
    }

    fn stated(&self, key: &str) -> RustVersion {
        let text = self.msrv[key].as_str().unwrap_or_else(|| {
            panic!("[workspace.metadata.msrv] {key} is missing from the root Cargo.toml")
        });
        RustVersion::parse(text)
    }
}

/// At most `most` names, then how many more.
fn shorten(names: &[String], most: usize) -> String {
    let mut text = names
        .iter()
        .take(most)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > most {
        text.push_str(&format!(" and {} more", names.len() - most));
    }
    text
}

#[test]
fn stated_minimum_rust_versions_hold() {
    let graph = metadata();
    let examples = graph.stated("examples");
    let datafusion = graph.stated("datafusion");

    let mut failures = Vec::new();
    let mut figures = BTreeMap::new();
    for member in &graph.members {
        let package = &graph.packages[member];
        let own = package
            .rust_version
            .unwrap_or_else(|| panic!("{} states no rust-version", package.name));
        let dev_limit = if package.name == "xroot-object-store" {
            ("datafusion", datafusion)
        } else {
            ("examples", examples)
        };
        if own > dev_limit.1 {
            failures.push(format!(
                "{}: rust-version {own} is above [workspace.metadata.msrv] {} = {}",
                package.name, dev_limit.0, dev_limit.1
            ));
        }
        for (dev, limit, what) in [
            (false, own, format!("its rust-version {own}")),
            (
                true,
                dev_limit.1,
                format!("msrv.{} = {}", dev_limit.0, dev_limit.1),
            ),
        ] {
            let closure = graph.closure(member, dev);
            let (top, setters) = graph.highest(&closure);
            let kind = if dev { "with dev-deps" } else { "library" };
            figures.insert(
                (package.name.clone(), dev),
                format!(
                    "{:<20} {kind:<14} {:>4} packages, highest {} ({}), limit {limit}",
                    package.name,
                    closure.len(),
                    top.map_or("none".to_owned(), |v| v.to_string()),
                    shorten(&setters, 3),
                ),
            );
            let above = graph.above(&closure, limit);
            if !above.is_empty() {
                failures.push(format!(
                    "{} ({kind}) needs more than {what}: {}",
                    package.name,
                    shorten(&above, 8)
                ));
            }
        }
    }
    for line in figures.values() {
        println!("{line}");
    }

    // The README's "Minimum Rust versions" quotes the figures.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let quickstart = readme
        .split("### Minimum Rust versions")
        .nth(1)
        .and_then(|rest| rest.split("\n#").next())
        .expect("README.md has a Minimum Rust versions section");
    for member in &graph.members {
        let name = &graph.packages[member].name;
        let named = if name == "xroot" {
            "the facade".to_owned()
        } else {
            format!("`{name}`")
        };
        if !quickstart.contains(&named) {
            failures.push(format!(
                "README.md's Minimum Rust versions does not say what {name} needs"
            ));
        }
    }
    let mut quoted: Vec<RustVersion> = graph
        .members
        .iter()
        .filter_map(|m| graph.packages[m].rust_version)
        .collect();
    quoted.extend([examples, datafusion]);
    for version in quoted {
        let text = version.to_string();
        if !quickstart.contains(&text) {
            failures.push(format!(
                "README.md's Minimum Rust versions does not mention Rust {text}"
            ));
        }
    }

    assert!(
        failures.is_empty(),
        "stated minimum Rust versions do not hold:\n  {}",
        failures.join("\n  ")
    );
}
