//! Host names as TPC compares them. The stock names a client by its
//! address's host name (XrdNetAddr `Name`, a reverse lookup), both in the
//! `tpc.org` a destination sends and in the grant a source records; and a
//! source checks the destination against the `tpc.dst` name the client
//! gave. Here the reverse lookup is `getnameinfo` (`NI_NAMEREQD`, in a
//! blocking task), falling back to the address's text; a name is matched
//! against an address by resolving it forward.
//!
//! `getnameinfo` has no safe binding in the crate's dependencies, so this
//! module holds an `unsafe` call.
#![allow(unsafe_code)]

use std::net::{IpAddr, SocketAddr};

/// The host name of `ip` (IPv4-mapped IPv6 as IPv4): its reverse lookup,
/// else its text.
pub(crate) async fn name_of(ip: IpAddr) -> String {
    let ip = ip.to_canonical();
    tokio::task::spawn_blocking(move || reverse(ip))
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| ip.to_string())
}

/// The addresses `name` (a host name or an address, IPv6 maybe in
/// brackets) stands for, IPv4-mapped ones as IPv4; none when it does not
/// resolve.
pub(crate) async fn addresses(name: &str) -> Vec<IpAddr> {
    let host = name.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return vec![ip.to_canonical()];
    }
    match tokio::net::lookup_host((host, 0)).await {
        Ok(addrs) => addrs.map(|a| a.ip().to_canonical()).collect(),
        Err(_) => Vec::new(),
    }
}

/// `getnameinfo(NI_NAMEREQD)` of `ip`: `None` when it has no name.
fn reverse(ip: IpAddr) -> Option<String> {
    let sa = raw_sockaddr(SocketAddr::new(ip, 0));
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: `sa` is a valid sockaddr of the length given; `host` is a
    // writable buffer of the length given; no service buffer is asked for.
    let rc = unsafe {
        libc::getnameinfo(
            sa.as_ptr(),
            sa.len(),
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    let bytes: Vec<u8> = host
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(bytes).ok().filter(|s| !s.is_empty())
}

/// A `sockaddr_in` or `sockaddr_in6` for `addr`.
enum Raw {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
}

impl Raw {
    fn as_ptr(&self) -> *const libc::sockaddr {
        match self {
            Raw::V4(a) => (a as *const libc::sockaddr_in).cast(),
            Raw::V6(a) => (a as *const libc::sockaddr_in6).cast(),
        }
    }

    fn len(&self) -> libc::socklen_t {
        (match self {
            Raw::V4(_) => std::mem::size_of::<libc::sockaddr_in>(),
            Raw::V6(_) => std::mem::size_of::<libc::sockaddr_in6>(),
        }) as libc::socklen_t
    }
}

fn raw_sockaddr(addr: SocketAddr) -> Raw {
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: an all-zero sockaddr_in is valid; the fields are set below.
            let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            Raw::V4(s)
        }
        SocketAddr::V6(a) => {
            // SAFETY: an all-zero sockaddr_in6 is valid; the fields are set below.
            let mut s: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_addr.s6_addr = a.ip().octets();
            Raw::V6(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_is_localhost_both_ways() {
        let lo = IpAddr::from([127, 0, 0, 1]);
        // /etc/hosts names 127.0.0.1 localhost on every Linux we run on
        assert_eq!(name_of(lo).await, "localhost");
        assert!(addresses("localhost").await.contains(&lo));
        assert_eq!(addresses("::ffff:127.0.0.1").await, [lo]);
        assert!(addresses("no-such-host.invalid").await.is_empty());
    }
}
