//! Keytabs as `xrdsssadmin` writes them (XrdSecsssKT.cc, `ktDecode0` and
//! `getKeyTab`): one key per line,
//!
//! ```text
//! 0 u:<user> g:<group> n:<keyname> N:<keyid> c:<created> e:<expires> f:<flags> k:<hex key>
//! ```
//!
//! Times are Unix seconds (`e:0` never expires). Fields may come in any
//! order; unknown `x:` fields are ignored; a missing `u:` means `nobody`,
//! `g:` `nogroup` and `n:` `nowhere`, while `k:` and `N:` are required. Lines
//! start with the format `0` (or `1`). Keys that have expired are dropped
//! when the keytab is read, as the stock client and server do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest key the keytab format holds, bytes (`ktEnt::maxKLen`).
pub const MAX_KEY_LEN: usize = 128;
/// Longest key name (`ktEnt::NameSZ`).
pub const MAX_NAME_LEN: usize = 192;
/// Longest user name (`ktEnt::UserSZ`).
pub const MAX_USER_LEN: usize = 128;
/// Longest group name (`ktEnt::GrupSZ`).
pub const MAX_GROUP_LEN: usize = 64;

/// Why a keytab cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeytabError {
    /// The file cannot be read (absent, no permission...).
    #[error("cannot read keytab {path}: {source}")]
    Io {
        /// The keytab's path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file grants permissions to its group or others (only group read
    /// is allowed, for a name ending in `.grp`): the stock code refuses it
    /// with "Keytab file is not secure!".
    #[error("keytab {path} is not secure: mode {mode:04o} lets group or others in (chmod 600)")]
    Insecure {
        /// The keytab's path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A line does not parse.
    #[error("invalid keytab{}: line {line}: {what}", path_suffix(.path))]
    Malformed {
        /// The keytab's path, when it came from a file.
        path: Option<PathBuf>,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// No key left (none in the file, or all expired): "Keytable is empty.".
    #[error("keytab{} holds no usable key (empty, or every key expired)", path_suffix(.path))]
    Empty {
        /// The keytab's path, when it came from a file.
        path: Option<PathBuf>,
    },
}

fn path_suffix(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| format!(" {}", p.display()))
        .unwrap_or_default()
}

/// One shared key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    /// The key id (`N:`), sent in every credential's header.
    pub id: i64,
    /// The key name (`n:`); a name ending in `+` turns off the check of
    /// the credential's host against the client's address.
    pub name: String,
    /// The user (`u:`): the identity a credential sealed with this key is
    /// given, or `anybody` / `allusers` for "the name the client sends".
    pub user: String,
    /// The group (`g:`): the group given, or `anygroup` ("the group the
    /// client sends") / `usrgroup` (none).
    pub group: String,
    /// Creation time, Unix seconds (`c:`).
    pub created: i64,
    /// Expiry, Unix seconds (`e:`); 0 never.
    pub expires: i64,
    /// `f:` (reserved by the stock code).
    pub flags: i64,
    /// The secret, 1 to 128 bytes.
    value: Vec<u8>,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("user", &self.user)
            .field("group", &self.group)
            .field("created", &self.created)
            .field("expires", &self.expires)
            .field("len", &self.value.len())
            .finish_non_exhaustive()
    }
}

impl Key {
    /// A key from its parts (for tests and tools; keytabs come from
    /// [`Keytab::parse`]). `value` must be 1 to 128 bytes.
    pub fn new(id: i64, name: &str, user: &str, group: &str, value: &[u8]) -> Key {
        assert!(
            (1..=MAX_KEY_LEN).contains(&value.len()),
            "a key is 1 to {MAX_KEY_LEN} bytes"
        );
        Key {
            id,
            name: name.to_string(),
            user: user.to_string(),
            group: group.to_string(),
            created: 0,
            expires: 0,
            flags: 0,
            value: value.to_vec(),
        }
    }

    /// The secret.
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// Whether a credential's host item must match the client's address:
    /// false for a key name ending in `+` (`ktEnt::noIPCK`).
    pub fn checks_host(&self) -> bool {
        !self.name.ends_with('+')
    }

    /// Whether the identity comes from the credential's name item (user
    /// `anybody` or `allusers`) rather than the keytab.
    pub fn any_user(&self) -> bool {
        self.user == "anybody" || self.user == "allusers"
    }

    /// Whether the key has expired at `now` (Unix seconds).
    pub fn expired_at(&self, now: i64) -> bool {
        self.expires != 0 && self.expires <= now
    }

    fn identity(&self) -> (&str, &str, &str) {
        (&self.name, &self.user, &self.group)
    }
}

/// The keys of one keytab, in file order, expired ones dropped.
#[derive(Debug, Clone, Default)]
pub struct Keytab {
    keys: Vec<Key>,
    path: Option<PathBuf>,
}

/// Unix seconds of `t` (0 before the epoch).
pub(crate) fn unix(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Keytab {
    /// Reads the keytab at `path`, refusing one whose permissions let its
    /// group or others in (only group read, for a name ending in `.grp`),
    /// as the stock code does, and dropping keys expired at `now`.
    ///
    /// Errors: [`KeytabError::Io`], [`KeytabError::Insecure`],
    /// [`KeytabError::Malformed`], [`KeytabError::Empty`].
    pub fn load(path: &Path, now: SystemTime) -> Result<Keytab, KeytabError> {
        use std::os::unix::fs::PermissionsExt;
        let io = |source| KeytabError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        let mode = meta.permissions().mode() & 0o7777;
        let allowed = if path.to_string_lossy().ends_with(".grp") && path.as_os_str().len() >= 5 {
            0o040
        } else {
            0
        };
        if mode & 0o077 & !allowed != 0 {
            return Err(KeytabError::Insecure {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = std::fs::read(path).map_err(io)?;
        let text = String::from_utf8_lossy(&text);
        let mut kt = Keytab::parse_at(&text, now, Some(path.to_path_buf()))?;
        kt.path = Some(path.to_path_buf());
        Ok(kt)
    }

    /// Parses keytab text, dropping keys expired at `now`.
    ///
    /// Errors: [`KeytabError::Malformed`] naming the line,
    /// [`KeytabError::Empty`] when no key is left.
    pub fn parse(text: &str, now: SystemTime) -> Result<Keytab, KeytabError> {
        Keytab::parse_at(text, now, None)
    }

    fn parse_at(text: &str, now: SystemTime, path: Option<PathBuf>) -> Result<Keytab, KeytabError> {
        let now = unix(now);
        let mut keys = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut words = line.split_ascii_whitespace();
            let Some(format) = words.next() else {
                continue;
            };
            let bad = |what: String| KeytabError::Malformed {
                path: path.clone(),
                line: i + 1,
                what,
            };
            if format != "0" && format != "1" {
                return Err(bad("keytable format missing or unsupported".into()));
            }
            let key = parse_key(words).map_err(bad)?;
            if !key.expired_at(now) {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(KeytabError::Empty { path });
        }
        Ok(Keytab { keys, path })
    }

    /// A keytab of these keys (for tests and tools).
    pub fn from_keys(keys: Vec<Key>) -> Keytab {
        Keytab { keys, path: None }
    }

    /// Where it was read from, if from a file.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The keys, in file order.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// The key with id `id` (the server's lookup: the key name a client
    /// sends is ignored unless the stock server runs with `-k`), if it has
    /// not expired at `now` (Unix seconds).
    pub fn find(&self, id: i64, now: i64) -> Option<&Key> {
        self.keys
            .iter()
            .find(|k| k.id == id)
            .filter(|k| !k.expired_at(now))
    }

    /// The keys a credential with key id `id` and key name `name` may have
    /// been sealed with, in the order to try them: those not expired at
    /// `now` (Unix seconds) with that id, the ones named `name` first, then
    /// the others, each group last in the file first. Two keytabs made in
    /// the same second by `xrdsssadmin` give their keys the same id; once
    /// concatenated, the stock server keeps only the last (clients of the
    /// first are refused, xrootd#1683): trying each lets every key of the
    /// keytab authenticate.
    pub fn candidates<'a>(
        &'a self,
        id: i64,
        name: &'a str,
        now: i64,
    ) -> impl Iterator<Item = &'a Key> + 'a {
        let usable = move |named: bool| {
            self.keys
                .iter()
                .rev()
                .filter(move |k| k.id == id && !k.expired_at(now) && (k.name == name) == named)
        };
        usable(true).chain(usable(false))
    }

    /// The key a client seals with, chosen as the stock client does
    /// (`getKeyTab` in client mode, then `getKey`): keys of one identity
    /// (name, user, group) merge into the one expiring last (never beats
    /// any time), and the identity that appears last in the file wins.
    /// `None` when it has expired at `now` (Unix seconds).
    pub fn client_key(&self, now: i64) -> Option<&Key> {
        let first_seen = |k: &Key| self.keys.iter().position(|o| o.identity() == k.identity());
        let chosen = self
            .keys
            .iter()
            .enumerate()
            .rev()
            .find(|(i, k)| first_seen(k) == Some(*i))
            .map(|(_, k)| k)?;
        // the stock client replaces a key by a later one of the same
        // identity when that one expires later (0 = never)
        let outlives =
            |k: &Key, b: &Key| b.expires != 0 && (k.expires == 0 || b.expires < k.expires);
        let mut best: Option<&Key> = None;
        for k in self
            .keys
            .iter()
            .filter(|k| k.identity() == chosen.identity())
        {
            match best {
                Some(b) if !outlives(k, b) => {}
                _ => best = Some(k),
            }
        }
        best.filter(|k| !k.expired_at(now))
    }
}

/// One line's fields after the format word.
fn parse_key<'a>(words: impl Iterator<Item = &'a str>) -> Result<Key, String> {
    let (mut id, mut value) = (None, None);
    let mut key = Key {
        id: 0,
        name: "nowhere".into(),
        user: "nobody".into(),
        group: "nogroup".into(),
        created: 0,
        expires: 0,
        flags: 0,
        value: Vec::new(),
    };
    for word in words {
        let Some((tag, val)) = word.split_once(':').filter(|(t, _)| t.len() == 1) else {
            continue;
        };
        let number = |what: &str| {
            val.parse::<i64>()
                .map_err(|_| format!("{what} has invalid value"))
        };
        let text = |what: &str, max: usize| {
            if val.len() > max {
                Err(format!("{what} is too long"))
            } else {
                Ok(val.to_string())
            }
        };
        match tag {
            "c" => key.created = number("crtdt")?,
            "e" => key.expires = number("expdt")?,
            "f" => key.flags = number("flags")?,
            "N" => id = Some(number("keynum")?),
            "g" => key.group = text("group", MAX_GROUP_LEN)?,
            "n" => key.name = text("keyname", MAX_NAME_LEN)?,
            "u" => key.user = text("user", MAX_USER_LEN)?,
            "k" => value = Some(hex(val)?),
            _ => {}
        }
    }
    key.value = value.ok_or("keyval not found")?;
    key.id = id.ok_or("keynum not found")?;
    Ok(key)
}

fn hex(text: &str) -> Result<Vec<u8>, String> {
    if text.is_empty() || !text.len().is_multiple_of(2) || text.len() > 2 * MAX_KEY_LEN {
        return Err(format!(
            "keyval must be 2 to {} hex digits, an even number",
            2 * MAX_KEY_LEN
        ));
    }
    // checked first: slicing non-ASCII text at byte offsets would panic,
    // and from_str_radix takes a sign ("+1")
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("keyval is not hex".to_string());
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| (c as char).to_digit(16).expect("checked") as u8;
            digit(pair[0]) << 4 | digit(pair[1])
        })
        .map(Ok)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn key_values_that_are_not_plain_hex_are_refused() {
        // found by fuzz/sss_text: a multi-byte character panicked the
        // parser, a sign was taken as part of a hex byte
        for bad in ["k:+1+1", "k:\u{39b}1", "k:1\u{39b}", "k:0x", "k:-1"] {
            let line = format!("0 n:k N:1 {bad}");
            assert!(Keytab::parse(&line, at(0)).is_err(), "{line}");
        }
        let kt = Keytab::parse("0 n:k N:1 k:0aFf", at(0)).unwrap();
        assert_eq!(kt.keys()[0].value(), &[0x0a, 0xff]);
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    const TWO: &str = "0 u:bob g:wheel n:other+ N:7714337265975033858 c:1796134111 e:1796169600 f:0 k:0958e56163fe6b597c1f151d950740e96b870fae3d877fd59e97f1b6cdebbf74\n\
0 u:anybody g:users n:mykey N:7714337257385099265 c:1796134109 e:0 f:0 k:8ee24aea3eebb697052c9f96045ec2327968d803bd39350b02d74e968aa62fa7\n\
0 u:alice n:small N:3 c:1796134111 e:0 f:0 k:e62d831ab3364f01";

    #[test]
    fn parses_what_xrdsssadmin_writes() {
        let kt = Keytab::parse(TWO, at(1796134200)).unwrap();
        assert_eq!(kt.keys().len(), 3);
        let k = &kt.keys()[0];
        assert_eq!(
            (k.id, k.name.as_str(), k.user.as_str(), k.group.as_str()),
            (7714337265975033858, "other+", "bob", "wheel")
        );
        assert_eq!(k.expires, 1796169600);
        assert_eq!(k.value()[..3], [0x09, 0x58, 0xe5]);
        assert!(!k.checks_host());
        assert!(kt.keys()[1].checks_host() && kt.keys()[1].any_user());
        assert_eq!(kt.keys()[2].group, "nogroup");
        assert_eq!(kt.keys()[2].value().len(), 8);
        assert_eq!(kt.find(7714337257385099265, 0).unwrap().name, "mykey");
        assert!(kt.find(1, 0).is_none());
        // the key of the last identity in the file
        assert_eq!(kt.client_key(1796134200).unwrap().name, "small");
        // no key material in Debug
        assert!(!format!("{k:?}").contains("0958"));
    }

    #[test]
    fn expired_keys_are_dropped() {
        let kt = Keytab::parse(TWO, at(1796169600)).unwrap();
        assert_eq!(kt.keys().len(), 2);
        assert!(kt.find(7714337265975033858, 0).is_none());
        let only_old = TWO.lines().next().unwrap();
        assert!(matches!(
            Keytab::parse(only_old, at(1796169601)),
            Err(KeytabError::Empty { .. })
        ));
        // a key that expires after loading is no longer found
        let kt = Keytab::parse(TWO, at(0)).unwrap();
        assert!(kt.find(7714337265975033858, 1796169600).is_none());
    }

    #[test]
    fn client_merges_one_identity_into_the_longest_lived_key() {
        let text = "0 n:a u:x g:y N:1 e:100 k:01020304\n0 n:b N:2 k:01020304\n0 n:a u:x g:y N:3 e:0 k:05060708\n0 n:a u:x g:y N:4 e:200 k:01020304";
        let kt = Keytab::parse(text, at(50)).unwrap();
        // identities in order of first appearance: a, b; b is last
        assert_eq!(kt.client_key(50).unwrap().id, 2);
        let text = "0 n:b N:2 k:01020304\n0 n:a u:x g:y N:1 e:100 k:01020304\n0 n:a u:x g:y N:3 e:0 k:05060708\n0 n:a N:9 k:01";
        let kt = Keytab::parse(text, at(50)).unwrap();
        assert_eq!(kt.client_key(50).unwrap().id, 9);
        let text = "0 n:b N:2 k:01020304\n0 n:a u:x g:y N:1 e:100 k:01020304\n0 n:a u:x g:y N:3 e:0 k:05060708";
        let kt = Keytab::parse(text, at(50)).unwrap();
        assert_eq!(kt.client_key(50).unwrap().id, 3);
    }

    #[test]
    fn malformed_lines_are_named() {
        for (text, what) in [
            ("2 n:a N:1 k:00", "format"),
            ("0 n:a k:00", "keynum"),
            ("0 n:a N:1", "keyval"),
            ("0 n:a N:x k:00", "keynum has invalid value"),
            ("0 n:a N:1 k:0g", "not hex"),
            ("0 n:a N:1 k:000", "even"),
        ] {
            let text = format!("\n{text}");
            match Keytab::parse(&text, at(0)) {
                Err(KeytabError::Malformed {
                    line: 2, what: w, ..
                }) => {
                    assert!(w.contains(what), "{text}: {w}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let long = format!("0 n:{} N:1 k:00", "x".repeat(193));
        assert!(matches!(
            Keytab::parse(&long, at(0)),
            Err(KeytabError::Malformed { .. })
        ));
        assert!(matches!(
            Keytab::parse("\n\n", at(0)),
            Err(KeytabError::Empty { .. })
        ));
    }

    #[test]
    fn load_refuses_a_keytab_others_can_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt");
        std::fs::write(&path, TWO).unwrap();
        for (mode, ok) in [
            (0o600, true),
            (0o400, true),
            (0o640, false),
            (0o604, false),
            (0o610, false),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let got = Keytab::load(&path, at(0));
            assert_eq!(got.is_ok(), ok, "{mode:o}: {got:?}");
            if !ok {
                assert!(matches!(got, Err(KeytabError::Insecure { .. })));
            }
        }
        let grp = dir.path().join("kt.grp");
        std::fs::write(&grp, TWO).unwrap();
        std::fs::set_permissions(&grp, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(Keytab::load(&grp, at(0)).is_ok());
        std::fs::set_permissions(&grp, std::fs::Permissions::from_mode(0o660)).unwrap();
        assert!(Keytab::load(&grp, at(0)).is_err());
        assert!(matches!(
            Keytab::load(&dir.path().join("none"), at(0)),
            Err(KeytabError::Io { .. })
        ));
    }

    /// A keytab the real `xrdsssadmin` wrote (two keys), read back.
    #[test]
    #[cfg_attr(missing_xrootd, ignore = "needs xrdsssadmin (xrootd-server)")]
    fn reads_a_keytab_xrdsssadmin_wrote() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sss.keytab");
        let add = |name: &str, user: &str, group: &str| {
            let mut child = Command::new("xrdsssadmin")
                .args(["-k", name, "-u", user, "-g", group, "add"])
                .arg(&path)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run xrdsssadmin (apt-get install xrootd-server)");
            // it asks whether to create the file
            let _ = child.stdin.take().unwrap().write_all(b"y\n");
            assert!(child.wait().unwrap().success(), "xrdsssadmin add {name}");
        };
        add("first", "anybody", "users");
        add("second+", "bob", "wheel");
        let kt = Keytab::load(&path, SystemTime::now()).unwrap();
        let names: Vec<_> = kt.keys().iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names.len(), 2);
        assert!(
            names.contains(&"first") && names.contains(&"second+"),
            "{names:?}"
        );
        for k in kt.keys() {
            assert_eq!(k.value().len(), 32, "xrdsssadmin's default key length");
            assert_eq!(k.expires, 0);
            assert!(k.created > 0 && k.id > 0);
        }
        let first = kt.keys().iter().find(|k| k.name == "first").unwrap();
        assert_eq!(
            (first.user.as_str(), first.group.as_str()),
            ("anybody", "users")
        );
        assert!(kt.client_key(unix(SystemTime::now())).is_some());
    }
}
