//! The one response driver every request goes through (PROTOCOL.md §8, §9,
//! §12.2): it sends the request, collects `kXR_oksofar` chunks or
//! `kXR_status` frames until the final response, resends after `kXR_wait`,
//! waits out `kXR_waitresp` for its `kXR_attn` asynresp, follows
//! `kXR_redirect` (to another channel whenever the channel key differs) up
//! to the hop limit, retries at the load balancer with `tried=` and
//! `triedrc=` after the errors the reference retries, and turns `kXR_error` into
//! [`Error::Server`]. The whole exchange runs under the request deadline.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use xroot_proto::request::{OpenOptions, QueryCode, Request};
use xroot_proto::response::{RedirectMode, Response, StatusResponse};
use xroot_proto::url::{parse_cgi, Url};
use xroot_proto::{ErrorCode, RequestId};

use crate::channel::{InFlight, Link};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::key::ChannelKey;

/// The final answer to a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The bodies of the `kXR_oksofar` frames and the final `kXR_ok`, in order.
    Data(Vec<Bytes>),
    /// The `kXR_status` frames, the Final one last.
    Status(Vec<StatusResponse>),
}

impl Reply {
    /// The data as one buffer (no copy when it came in one frame).
    /// Errors: [`Error::UnexpectedResponse`] for a status reply.
    pub(crate) fn into_bytes(self, id: RequestId) -> Result<Bytes> {
        match self {
            Reply::Data(mut chunks) if chunks.len() == 1 => Ok(chunks.pop().unwrap()),
            Reply::Data(chunks) => Ok(chunks.concat().into()),
            Reply::Status(_) => Err(Error::unexpected(id, "a kXR_status reply")),
        }
    }

    /// The status frames. Errors: [`Error::UnexpectedResponse`] for a data reply.
    pub(crate) fn into_status(self, id: RequestId) -> Result<Vec<StatusResponse>> {
        match self {
            Reply::Status(s) => Ok(s),
            Reply::Data(_) => Err(Error::unexpected(
                id,
                "a kXR_ok reply where kXR_status was due",
            )),
        }
    }
}

/// Where a request was finally answered.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) reply: Reply,
    /// The connection that answered (where a file's handle lives).
    pub(crate) link: Arc<Link>,
    /// The URL of the server that answered, after redirects.
    pub(crate) url: Url,
}

/// What one exchange on one link ended in.
enum Step {
    Done(Reply),
    Redirect(Url),
    Failed(Error),
}

/// Runs one request on one link until its final response; `kXR_wait` is
/// handled here (same link, same streamid).
async fn exchange(link: &Arc<Link>, req: &Request, from: &Url) -> Result<Step> {
    let mut flight: InFlight = link.send(req)?;
    let mut chunks = Vec::new();
    let mut statuses = Vec::new();
    loop {
        let frame = flight.next().await?;
        let resp = Response::decode(frame).map_err(|source| Error::Protocol {
            endpoint: link.endpoint.clone(),
            source,
        })?;
        match resp {
            Response::OkSoFar(b) => chunks.push(b),
            Response::Ok(b) => {
                chunks.push(b);
                return Ok(Step::Done(Reply::Data(chunks)));
            }
            Response::Status(s) => {
                let last = s.is_final();
                statuses.push(s);
                if last {
                    return Ok(Step::Done(Reply::Status(statuses)));
                }
            }
            Response::Error(e) => return Ok(Step::Failed(crate::channel::login::server_error(e))),
            Response::Wait(w) => {
                tokio::time::sleep(Duration::from_secs(w.seconds.max(0) as u64)).await;
                flight.resend(req)?;
            }
            Response::WaitResp(_) => {}
            Response::Redirect(r) => return redirect_target(&r, from).map(Step::Redirect),
            other => {
                return Err(Error::unexpected(req.id(), format!("{other:?}")));
            }
        }
    }
}

/// The URL a redirect points at, keeping the original's user and the
/// `xrdcl.*` CGI (which select the channel), and `roots` when the redirect
/// says `root` (PROTOCOL.md §8.3).
fn redirect_target(r: &xroot_proto::response::Redirect, from: &Url) -> Result<Url> {
    let host = String::from_utf8_lossy(&r.host).into_owned();
    let mut url = match r.mode() {
        RedirectMode::HostPort(port) => Url {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: port as u16,
            ..from.clone()
        },
        RedirectMode::HostAsIs => match host.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => Url {
                host: h.to_string(),
                port: p.parse().unwrap(),
                ..from.clone()
            },
            _ => Url {
                host,
                ..from.clone()
            },
        },
        RedirectMode::Url | RedirectMode::Flags(_) => {
            let mut u = Url::parse(&host).map_err(|_| Error::ForeignRedirect(host.clone()))?;
            if from.is_tls() && !u.is_tls() {
                u.scheme = "roots".into();
            }
            if u.user.is_none() {
                u.user = from.user.clone();
            }
            if u.path == "/" {
                u.path = from.path.clone();
            }
            u
        }
    };
    for (k, v) in from.cgi.iter().filter(|(k, _)| k.starts_with("xrdcl.")) {
        if url.cgi_value(k).is_none() {
            url.cgi.push((k.clone(), v.clone()));
        }
    }
    // the redirect's CGI replaces a key already there (a map, as XrdCl
    // keeps it): hop after hop, a key is sent once, with its latest value
    for part in [&r.opaque, &r.token].into_iter().flatten() {
        for (k, v) in parse_cgi(&String::from_utf8_lossy(part)) {
            match url.cgi.iter_mut().find(|(key, _)| *key == k) {
                Some(kv) => kv.1 = v,
                None => url.cgi.push((k, v)),
            }
        }
    }
    Ok(url)
}

/// The path field of a request that names a path, for rewriting on redirect.
fn path_of(req: &mut Request) -> Option<&mut Bytes> {
    Some(match req {
        Request::Open(r) => &mut r.path,
        Request::Stat(r) if !r.path.is_empty() => &mut r.path,
        Request::Dirlist(r) => &mut r.path,
        Request::Mkdir(r) => &mut r.path,
        Request::Rm(r) => &mut r.path,
        Request::Rmdir(r) => &mut r.path,
        Request::Chmod(r) => &mut r.path,
        Request::Locate(r) => &mut r.path,
        Request::Truncate(r) if !r.path.is_empty() => &mut r.path,
        Request::Query(r) if names_a_path(r.infotype) => &mut r.args,
        _ => return None,
    })
}

/// Whether a `kXR_query` of this kind carries a path in its args (not
/// `kXR_Qconfig` keys, a prepare request id or statistics letters).
fn names_a_path(infotype: QueryCode) -> bool {
    matches!(
        infotype,
        QueryCode::CKSUM
            | QueryCode::XATTR
            | QueryCode::SPACE
            | QueryCode::CKSCAN
            | QueryCode::FSINFO
            | QueryCode::OPAQUF
    )
}

/// Sets the request's path to `url`'s path with its server-visible CGI.
fn retarget(req: &mut Request, url: &Url) {
    if let Some(path) = path_of(req) {
        *path = Bytes::from(url.path_with_cgi());
    }
}

/// Errors after which the reference retries at the load balancer (PROTOCOL.md §12.2).
fn retry_at_load_balancer(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::FS_ERROR
            | ErrorCode::IO_ERROR
            | ErrorCode::SERVER_ERROR
            | ErrorCode::NOT_FOUND
            | ErrorCode::OVERLOADED
            | ErrorCode::NO_MEMORY
    )
}

/// The reason a retry at the load balancer reports in `triedrc=`, as
/// XrdCl's `UpdateTriedCGI` names it (the values a cmsd manager reads,
/// `kYR_tryMISS`... in `YProtocol.hh`); `None` for the errors it gives no
/// reason for (`kXR_Overloaded`, `kXR_NoMemory`).
fn tried_reason(code: ErrorCode) -> Option<&'static str> {
    match code {
        ErrorCode::NOT_FOUND => Some("enoent"),
        ErrorCode::IO_ERROR => Some("ioerr"),
        ErrorCode::FS_ERROR => Some("fserr"),
        ErrorCode::SERVER_ERROR => Some("srverr"),
        _ => None,
    }
}

/// Runs a path-based request at `url`: redirects, waits and load-balancer
/// retries included, under the request deadline.
pub(crate) async fn execute(client: &Client, url: &Url, req: Request) -> Result<Answered> {
    let deadline = client.config().request_timeout;
    tokio::time::timeout(deadline, run(client, url.clone(), req))
        .await
        .map_err(|_| Error::Timeout {
            what: "request",
            after: deadline,
        })?
}

async fn run(client: &Client, mut url: Url, mut req: Request) -> Result<Answered> {
    let limit = client.config().redirect_limit;
    let mut hops = 0u32;
    let mut load_balancer: Option<Url> = None;
    // the hosts tried and why, comma-separated in the CGI as XrdCl merges
    // them (`tried=h1,h2&triedrc=enoent,ioerr`)
    let mut tried: Vec<String> = Vec::new();
    let mut reasons: Vec<&str> = Vec::new();
    loop {
        let channel = client.channel(&ChannelKey::of(&url));
        let link = channel.link().await?;
        if link
            .info
            .flags
            .contains(xroot_proto::response::ProtocolFlags::IS_MANAGER)
            && load_balancer.is_none()
        {
            load_balancer = Some(url.clone());
        }
        match exchange(&link, &req, &url).await? {
            Step::Done(reply) => return Ok(Answered { reply, link, url }),
            Step::Redirect(next) => {
                hops += 1;
                if hops > limit {
                    return Err(Error::RedirectLimit {
                        limit,
                        last: next.to_string(),
                    });
                }
                tracing::debug!(from = %url.host_port(), to = %next, "redirect");
                retarget(&mut req, &next);
                url = next;
            }
            Step::Failed(err) => {
                let code = err.server_code();
                let lb = match (&load_balancer, code) {
                    (Some(lb), Some(code))
                        if retry_at_load_balancer(code) && lb.host_port() != url.host_port() =>
                    {
                        lb.clone()
                    }
                    _ => return Err(err),
                };
                hops += 1;
                if hops > limit {
                    return Err(err);
                }
                tried.push(url.host.clone());
                reasons.extend(code.and_then(tried_reason));
                let mut next = lb;
                next.path = url.path.clone();
                next.cgi = url
                    .cgi
                    .iter()
                    .filter(|(k, _)| k != "tried" && k != "triedrc")
                    .cloned()
                    .collect();
                next.cgi.push(("tried".into(), tried.join(",")));
                if !reasons.is_empty() {
                    next.cgi.push(("triedrc".into(), reasons.join(",")));
                }
                if code == Some(ErrorCode::NOT_FOUND) || code == Some(ErrorCode::OVERLOADED) {
                    if let Request::Open(o) = &mut req {
                        o.options |= OpenOptions::REFRESH;
                    }
                }
                tracing::debug!(error = %err, retry_at = %next, "retrying at the load balancer");
                retarget(&mut req, &next);
                url = next;
            }
        }
    }
}

/// Runs a handle-based request on the link that holds the handle: waits are
/// followed, redirects are not (the reference does not redirect stateful
/// requests).
pub(crate) async fn execute_on(
    client: &Client,
    link: &Arc<Link>,
    url: &Url,
    req: &Request,
) -> Result<Reply> {
    let deadline = client.config().request_timeout;
    let step = tokio::time::timeout(deadline, exchange(link, req, url))
        .await
        .map_err(|_| Error::Timeout {
            what: "request",
            after: deadline,
        })??;
    match step {
        Step::Done(reply) => Ok(reply),
        Step::Failed(e) => Err(e),
        Step::Redirect(to) => Err(Error::unexpected(
            req.id(),
            format!("redirect of a file-handle request to {to}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xroot_proto::response::Redirect;

    fn from() -> Url {
        Url::parse("root://alice@mgr:1094//store/f.root?xrdcl.intent=a&x=1").unwrap()
    }

    #[test]
    fn redirect_forms() {
        let r = Redirect::to_host("ds1", 2094).with_opaque("cms.tried=x");
        let u = redirect_target(&r, &from()).unwrap();
        assert_eq!((u.host.as_str(), u.port), ("ds1", 2094));
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.path, "/store/f.root");
        assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(u.cgi_value("cms.tried"), Some("x"));

        let r = Redirect::to_url("root://bob@ds2:3000//other", Default::default());
        let u = redirect_target(&r, &from()).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_deref()),
            ("ds2", 3000, Some("bob"))
        );
        assert_eq!(u.path, "/other");

        // a key the URL has already is replaced, not repeated
        let r = Redirect::to_host("ds1", 2094)
            .with_opaque("x=2&org=b")
            .with_token("authz=t");
        let u = redirect_target(&r, &from()).unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=b&authz=t");
        let r = Redirect::to_host("ds2", 2094).with_opaque("org=c");
        let u = redirect_target(&r, &u).unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=c&authz=t");

        let r = Redirect::to_url("http://web/x", Default::default());
        assert!(matches!(
            redirect_target(&r, &from()),
            Err(Error::ForeignRedirect(_))
        ));
    }

    #[test]
    fn tried_reasons_as_xrdcl_names_them() {
        let named: Vec<_> = [
            ErrorCode::NOT_FOUND,
            ErrorCode::IO_ERROR,
            ErrorCode::FS_ERROR,
            ErrorCode::SERVER_ERROR,
            ErrorCode::OVERLOADED,
            ErrorCode::NO_MEMORY,
        ]
        .into_iter()
        .map(tried_reason)
        .collect();
        assert_eq!(
            named,
            [
                Some("enoent"),
                Some("ioerr"),
                Some("fserr"),
                Some("srverr"),
                None,
                None
            ]
        );
    }

    #[test]
    fn retarget_rewrites_the_path_with_cgi() {
        let mut req = Request::Open(xroot_proto::request::Open {
            path: Bytes::from_static(b"/store/f.root"),
            ..Default::default()
        });
        let url = Url::parse("root://ds//store/f.root?xrdcl.intent=a&cms.tried=x").unwrap();
        retarget(&mut req, &url);
        let Request::Open(o) = req else {
            unreachable!()
        };
        assert_eq!(&o.path[..], b"/store/f.root?cms.tried=x");

        // a checksum query names a path; a config query's args are keys
        for (infotype, args, after) in [
            (
                QueryCode::CKSUM,
                "/store/f.root\0",
                "/store/f.root?cms.tried=x",
            ),
            (QueryCode::CONFIG, "readv_iov_max\0", "readv_iov_max\0"),
        ] {
            let mut req = Request::Query(xroot_proto::request::Query {
                infotype,
                args: Bytes::from(args),
                ..Default::default()
            });
            retarget(&mut req, &url);
            let Request::Query(q) = req else {
                unreachable!()
            };
            assert_eq!(&q.args[..], after.as_bytes(), "{infotype:?}");
        }
    }
}
