//! The source's rendezvous table: the grants clients made with `tpc.key`
//! and `tpc.dst`, each claimed once by the destination that presents the
//! key for the same file on behalf of the same client, within the grant's
//! ttl (XrdOfsTPC `Authorize`/`Validate`, XrdOfsTPCAuth; PROTOCOL.md
//! "Third-party copy").
//!
//! A claim that finds no matching grant waits for one until the ttl has
//! passed (the destination may arrive before the client's grant), then is
//! refused with `[3010] tpc authorization expired`, as the stock does for a
//! guessed, reused or late key. Grants are bounded in number; an expired
//! one is dropped when the table is next touched.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use xroot_proto::tpc::Origin;
use xroot_proto::ErrorCode;

use crate::fs::FsError;

/// What a grant allows.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// The granting client's login user and pid.
    pub(crate) user: String,
    pub(crate) pid: i32,
    /// The granting client's address and its host name.
    pub(crate) ip: IpAddr,
    pub(crate) host: String,
    /// The addresses of `tpc.dst` as the client gave it: where the claim
    /// may come from.
    pub(crate) dst: Vec<IpAddr>,
    /// The file (path without CGI).
    pub(crate) path: String,
    pub(crate) expires: Instant,
}

/// A claim: what the destination presents, and from where.
#[derive(Debug)]
pub(crate) struct Claim<'a> {
    pub(crate) key: &'a str,
    pub(crate) org: &'a Origin,
    /// The addresses of `org.host`.
    pub(crate) org_ips: &'a [IpAddr],
    pub(crate) path: &'a str,
    /// The destination's address.
    pub(crate) from: IpAddr,
}

/// The grants of one server.
#[derive(Debug)]
pub(crate) struct Rendezvous {
    grants: Mutex<HashMap<String, Grant>>,
    granted: Notify,
    max: usize,
}

impl Rendezvous {
    /// A table holding at most `max` grants.
    pub(crate) fn new(max: usize) -> Rendezvous {
        Rendezvous {
            grants: Mutex::new(HashMap::new()),
            granted: Notify::new(),
            max,
        }
    }

    /// Records `grant` under `key`. Errors: `kXR_ArgInvalid` "duplicate tpc
    /// auth request" when the key is granted and not expired (the stock's
    /// text), `kXR_Overloaded` when the table is full.
    pub(crate) fn grant(&self, key: &str, grant: Grant) -> Result<(), FsError> {
        let mut grants = self.grants.lock().unwrap();
        let now = Instant::now();
        grants.retain(|_, g| g.expires > now);
        if grants.contains_key(key) {
            return Err(FsError::new(
                ErrorCode::ARG_INVALID,
                "duplicate tpc auth request",
            ));
        }
        if grants.len() >= self.max {
            return Err(FsError::new(
                ErrorCode::OVERLOADED,
                "too many tpc grants outstanding",
            ));
        }
        grants.insert(key.to_string(), grant);
        drop(grants);
        self.granted.notify_waiters();
        Ok(())
    }

    /// Takes the grant `claim` matches, waiting up to `wait` for it:
    /// matching means the same key, path, user and pid, an origin host that
    /// is the granting client's name or address, and a destination at one
    /// of the `tpc.dst` addresses. Errors: `[3010] tpc authorization
    /// expired` when none came in time.
    pub(crate) async fn claim(&self, claim: &Claim<'_>, wait: Duration) -> Result<Grant, FsError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let granted = self.granted.notified();
            tokio::pin!(granted);
            granted.as_mut().enable();
            if let Some(g) = self.take(claim) {
                return Ok(g);
            }
            if tokio::time::timeout_at(deadline, granted).await.is_err() {
                return Err(FsError::new(
                    ErrorCode::NOT_AUTHORIZED,
                    "tpc authorization expired",
                ));
            }
        }
    }

    /// Removes and returns the live grant `claim` matches, if any.
    fn take(&self, claim: &Claim<'_>) -> Option<Grant> {
        let mut grants = self.grants.lock().unwrap();
        let g = grants.get(claim.key)?;
        let org = claim.org;
        let matches = g.expires > Instant::now()
            && g.path == claim.path
            && g.user == org.user
            && g.pid == org.pid
            && (org.host == g.host || claim.org_ips.contains(&g.ip))
            && g.dst.contains(&claim.from);
        matches.then(|| grants.remove(claim.key)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(path: &str, ttl: Duration) -> Grant {
        Grant {
            user: "u".into(),
            pid: 7,
            ip: IpAddr::from([127, 0, 0, 1]),
            host: "localhost".into(),
            dst: vec![IpAddr::from([127, 0, 0, 1])],
            path: path.into(),
            expires: Instant::now() + ttl,
        }
    }

    const LO: &[IpAddr] = &[IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)];

    fn claim<'a>(key: &'a str, org: &'a Origin, path: &'a str) -> Claim<'a> {
        Claim {
            key,
            org,
            org_ips: LO,
            path,
            from: LO[0],
        }
    }

    fn org(pid: i32) -> Origin {
        Origin {
            user: "u".into(),
            pid,
            host: "localhost".into(),
        }
    }

    #[tokio::test]
    async fn claimed_once_within_the_ttl() {
        let r = Rendezvous::new(4);
        r.grant("k", grant("/f", Duration::from_secs(10))).unwrap();
        assert!(r.grant("k", grant("/f", Duration::from_secs(10))).is_err());
        let o = org(7);
        let c = claim("k", &o, "/f");
        assert!(r.claim(&c, Duration::ZERO).await.is_ok());
        let again = r.claim(&c, Duration::from_millis(50)).await;
        assert_eq!(
            again.unwrap_err(),
            FsError::new(ErrorCode::NOT_AUTHORIZED, "tpc authorization expired")
        );
    }

    #[tokio::test]
    async fn a_claim_waits_for_its_grant_and_checks_it() {
        let r = std::sync::Arc::new(Rendezvous::new(4));
        let o = org(7);
        let late = {
            let r = r.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                r.grant("k", grant("/f", Duration::from_secs(10))).unwrap();
            })
        };
        let c = claim("k", &o, "/f");
        assert!(r.claim(&c, Duration::from_secs(5)).await.is_ok());
        late.await.unwrap();
        // another pid, another path, an expired grant: not matched
        r.grant("k2", grant("/f", Duration::from_secs(10))).unwrap();
        let o8 = org(8);
        let wrong_pid = claim("k2", &o8, "/f");
        let wrong_path = claim("k2", &o, "/g");
        let short = Duration::from_millis(20);
        assert!(r.claim(&wrong_pid, short).await.is_err());
        assert!(r.claim(&wrong_path, short).await.is_err());
        let elsewhere = Claim {
            from: IpAddr::from([192, 0, 2, 1]),
            ..claim("k2", &o, "/f")
        };
        assert!(r.claim(&elsewhere, short).await.is_err());
        assert!(r.claim(&claim("k2", &o, "/f"), short).await.is_ok());
        r.grant("k3", grant("/f", Duration::ZERO)).unwrap();
        let expired = claim("k3", &o, "/f");
        assert!(r.claim(&expired, short).await.is_err());
        let full = Rendezvous::new(1);
        full.grant("a", grant("/f", Duration::from_secs(10)))
            .unwrap();
        assert!(full
            .grant("b", grant("/f", Duration::from_secs(10)))
            .is_err());
    }
}
