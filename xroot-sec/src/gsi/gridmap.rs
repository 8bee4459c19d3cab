//! The grid-mapfile: which local user a DN is (xrootd `XrdOucGMap`).
//!
//! One mapping a line, `"DN" user` (the DN quoted when it has blanks) or
//! `DN user`; the user may be a comma-separated list, of which the first
//! is taken; `#` starts a comment.

use std::collections::HashMap;
use std::path::Path;

use super::error::GsiError;

/// A grid-mapfile.
#[derive(Debug, Clone, Default)]
pub struct Gridmap {
    map: HashMap<String, String>,
}

impl Gridmap {
    /// Reads one. Errors: [`GsiError::Config`] when it cannot be read.
    pub fn load(path: &Path) -> Result<Gridmap, GsiError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| GsiError::Config(format!("gridmap {}: {e}", path.display())))?;
        Ok(Gridmap::parse(&text))
    }

    /// Reads one from text; lines that do not parse are skipped.
    pub fn parse(text: &str) -> Gridmap {
        let mut map = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (dn, rest) = match line.strip_prefix('"') {
                Some(q) => match q.split_once('"') {
                    Some(pair) => pair,
                    None => continue,
                },
                None => match line.split_once(char::is_whitespace) {
                    Some(pair) => pair,
                    None => continue,
                },
            };
            let Some(user) = rest
                .split_whitespace()
                .next()
                .and_then(|u| u.split(',').next())
            else {
                continue;
            };
            if !user.is_empty() {
                map.entry(dn.to_string())
                    .or_insert_with(|| user.to_string());
            }
        }
        Gridmap { map }
    }

    /// The user `dn` maps to.
    pub fn lookup(&self, dn: &str) -> Option<&str> {
        self.map.get(dn).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_bare_dns() {
        let g = Gridmap::parse(
            "# comment\n\"/C=CH/O=xroot-test/CN=Alice User\" alice,bob\n/DC=org/CN=carol carol\n\"broken\n",
        );
        assert_eq!(g.lookup("/C=CH/O=xroot-test/CN=Alice User"), Some("alice"));
        assert_eq!(g.lookup("/DC=org/CN=carol"), Some("carol"));
        assert_eq!(g.lookup("/CN=nobody"), None);
    }
}
