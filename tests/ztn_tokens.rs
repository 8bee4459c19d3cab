//! The server's token validator against tokens minted here (ES256 and
//! RS256 keys made by `openssl`, a JWKS file written by the test), and key
//! discovery over HTTPS from `openssl s_server -WWW` (a real HTTPS peer).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use jsonwebtoken::Algorithm;
use serde_json::json;
use xroot::server::authz::{allowed, Action};
use xroot::server::jwks::{IssuerConfig, KeySource};
use xroot::server::token::WLCG_ANY_AUDIENCE;
use xroot::server::{TokenConfig, TokenError, TokenValidator};
use xroot_testkit::pki::TestPki;
use xroot_testkit::tokens::{self, now, TestIssuer, AUDIENCE, ISSUER};

fn validator(issuer: &TestIssuer, audiences: &[&str]) -> TokenValidator {
    let mut config = TokenConfig::new(vec![issuer.arg().parse().unwrap()]);
    config.audiences = audiences.iter().map(|a| a.to_string()).collect();
    TokenValidator::new(config).unwrap()
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn accepts_es256_and_rs256() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);
    for token in [
        iss.es256(&iss.claims("storage.read:/data storage.create:/data/out")),
        iss.rs256(&iss.claims("storage.read:/data storage.create:/data/out")),
    ] {
        let ok = v.validate(&token).unwrap();
        assert_eq!(ok.name, "alice");
        assert_eq!(ok.issuer, ISSUER);
        let scopes: Vec<String> = ok.scopes.iter().map(|s| s.to_string()).collect();
        assert_eq!(scopes, ["storage.read:/data", "storage.create:/data/out"]);
    }
    // a key found without a kid when only one suits the algorithm
    let t = iss.sign(Algorithm::ES256, None, &iss.claims("storage.read:/"));
    assert!(v.validate(&t).is_ok());
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn refuses_bad_times() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);
    let mut c = iss.claims("storage.read:/");
    c["iat"] = json!(now() - 7200);
    c["nbf"] = json!(now() - 7200);
    c["exp"] = json!(now() - 3600);
    assert_eq!(v.validate(&iss.es256(&c)), Err(TokenError::Expired));

    let mut c = iss.claims("storage.read:/");
    c["nbf"] = json!(now() + 3600);
    assert_eq!(v.validate(&iss.rs256(&c)), Err(TokenError::NotYetValid));

    let mut c = iss.claims("storage.read:/");
    c["iat"] = json!(now() + 3600);
    assert_eq!(v.validate(&iss.es256(&c)), Err(TokenError::IssuedInFuture));

    let mut c = iss.claims("storage.read:/");
    c.as_object_mut().unwrap().remove("exp");
    assert_eq!(
        v.validate(&iss.es256(&c)),
        Err(TokenError::MissingClaim("exp".into()))
    );
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn audiences() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);
    let mut c = iss.claims("storage.read:/");
    c["aud"] = json!("https://elsewhere.test");
    assert_eq!(v.validate(&iss.es256(&c)), Err(TokenError::Audience));
    c["aud"] = json!(["https://elsewhere.test", AUDIENCE]);
    assert!(v.validate(&iss.es256(&c)).is_ok());
    c["aud"] = json!(WLCG_ANY_AUDIENCE);
    assert!(v.validate(&iss.es256(&c)).is_ok());
    c.as_object_mut().unwrap().remove("aud");
    assert_eq!(
        v.validate(&iss.es256(&c)),
        Err(TokenError::MissingClaim("aud".into()))
    );
    // without configured audiences any (or no) aud goes
    let open = validator(&iss, &[]);
    assert!(open.validate(&iss.es256(&c)).is_ok());
    c["aud"] = json!("https://elsewhere.test");
    assert!(open.validate(&iss.es256(&c)).is_ok());
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn refuses_untrusted_issuers_and_signatures() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);

    let other = TestIssuer::new("https://other.test/iss");
    assert_eq!(
        v.validate(&other.es256(&other.claims("storage.read:/"))),
        Err(TokenError::UntrustedIssuer("https://other.test/iss".into()))
    );

    // the trusted iss and kid, signed with someone else's keys
    let forger = TestIssuer::new(ISSUER);
    for t in [
        forger.es256(&iss.claims("storage.read:/")),
        forger.rs256(&iss.claims("storage.read:/")),
    ] {
        assert_eq!(v.validate(&t), Err(TokenError::Signature));
    }

    // a signature altered by one character
    let t = iss.es256(&iss.claims("storage.read:/"));
    let (body, sig) = t.rsplit_once('.').unwrap();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    let bad = format!("{body}.{flipped}{}", &sig[1..]);
    assert_eq!(v.validate(&bad), Err(TokenError::Signature));

    // claims altered after signing: more scope
    let good = iss.es256(&iss.claims("storage.read:/data"));
    let parts: Vec<&str> = good.split('.').collect();
    let forged_claims = {
        use base64ct::{Base64UrlUnpadded, Encoding};
        Base64UrlUnpadded::encode_string(iss.claims("storage.modify:/").to_string().as_bytes())
    };
    let spliced = format!("{}.{}.{}", parts[0], forged_claims, parts[2]);
    assert_eq!(v.validate(&spliced), Err(TokenError::Signature));

    // an unknown key id
    let t = iss.sign(
        Algorithm::ES256,
        Some("nope"),
        &iss.claims("storage.read:/"),
    );
    assert!(matches!(
        v.validate(&t),
        Err(TokenError::UnknownKey { kid: Some(k), .. }) if k == "nope"
    ));
    // an RSA key id for an ES256 token
    let t = iss.sign(
        Algorithm::ES256,
        Some("rsa1"),
        &iss.claims("storage.read:/"),
    );
    assert!(matches!(v.validate(&t), Err(TokenError::UnknownKey { .. })));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn refuses_alg_none_and_hmac() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);
    let c = iss.claims("storage.read:/");
    assert_eq!(
        v.validate(&tokens::unsigned(&c)),
        Err(TokenError::Algorithm("none".into()))
    );
    // HS256 with the public key as the secret: the classic confusion
    let mut h = jsonwebtoken::Header::new(Algorithm::HS256);
    h.kid = Some("rsa1".into());
    let secret = std::fs::read(&iss.ec_pub).unwrap();
    let key = jsonwebtoken::EncodingKey::from_secret(&secret).unwrap();
    let t = jsonwebtoken::encode(&h, &c, &key).unwrap();
    assert_eq!(v.validate(&t), Err(TokenError::Algorithm("HS256".into())));
    for junk in ["", "a.b", "a.b.c", "x.y.z.w"] {
        assert!(
            matches!(v.validate(junk), Err(TokenError::Malformed(_))),
            "{junk:?}"
        );
    }
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn scopes_bound_what_a_token_allows() {
    let iss = TestIssuer::new(ISSUER);
    let v = validator(&iss, &[AUDIENCE]);
    let read = v
        .validate(&iss.es256(&iss.claims("storage.read:/data")))
        .unwrap()
        .scopes;
    assert!(allowed(&read, Action::Read, "/data/f.root"));
    // a scope for another path
    assert!(!allowed(&read, Action::Read, "/other/f.root"));
    assert!(!allowed(&read, Action::Read, "/data2/f.root"));
    // a write with a read scope
    assert!(!allowed(&read, Action::Create, "/data/new.root"));
    assert!(!allowed(&read, Action::Modify, "/data/f.root"));
    // no scope claim: nothing
    let mut c = iss.claims("");
    c.as_object_mut().unwrap().remove("scope");
    let none = v.validate(&iss.es256(&c)).unwrap().scopes;
    assert!(none.is_empty());
}

/// `openssl s_server -WWW` serving `dir` over HTTPS with the PKI's host
/// certificate; killed on drop.
struct Https {
    child: Child,
    port: u16,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Https {
    fn start(pki: &TestPki, dir: &std::path::Path) -> Https {
        let port = xroot_testkit::stock::free_port();
        let mut child = Command::new("openssl")
            .args(["s_server", "-WWW", "-accept"])
            .arg(port.to_string())
            .arg("-cert")
            .arg(&pki.host_cert)
            .arg("-key")
            .arg(&pki.host_key)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl s_server");
        // it prints ACCEPT once listening
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while out.read_line(&mut line).unwrap() > 0 && !line.contains("ACCEPT") {
            line.clear();
        }
        assert!(line.contains("ACCEPT"), "s_server did not start");
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Https { child, port }
    }
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn keys_by_discovery_over_https() {
    let pki = TestPki::new();
    let web = tempfile::tempdir().unwrap();
    let mut https = Https::start(&pki, web.path());
    let issuer_url = format!("https://localhost:{}/iss", https.port);
    let iss = TestIssuer::new(&issuer_url);
    std::fs::create_dir_all(web.path().join("iss/.well-known")).unwrap();
    std::fs::write(
        web.path().join("iss/.well-known/openid-configuration"),
        json!({"issuer": issuer_url, "jwks_uri": format!("https://localhost:{}/keys.json", https.port)})
            .to_string(),
    )
    .unwrap();
    std::fs::write(web.path().join("keys.json"), iss.jwks_json()).unwrap();

    let mut config = TokenConfig::new(vec![IssuerConfig {
        issuer: issuer_url.clone(),
        keys: KeySource::Discover,
    }]);
    config.ca_dir = Some(pki.ca_dir.clone());
    let v = TokenValidator::new(config).unwrap();
    let ok = v
        .validate(&iss.es256(&iss.claims("storage.read:/a")))
        .unwrap();
    assert_eq!(ok.issuer, issuer_url);
    assert!(v
        .validate(&iss.rs256(&iss.claims("storage.read:/a")))
        .is_ok());

    // a CA this client does not trust: no keys, tokens refused with why
    let other = TestPki::new();
    let mut config = TokenConfig::new(vec![IssuerConfig {
        issuer: issuer_url.clone(),
        keys: KeySource::Discover,
    }]);
    config.ca_dir = Some(other.ca_dir.clone());
    let v = TokenValidator::new(config).unwrap();
    match v.validate(&iss.es256(&iss.claims("storage.read:/a"))) {
        Err(TokenError::NoKeys { why: Some(w), .. }) => {
            assert!(w.contains("openid-configuration"), "{w}")
        }
        other => panic!("expected NoKeys, got {other:?}"),
    }
    drop(v);
    let _ = https.child.kill();
}

/// No clock skew is allowed by default, as the stock server's SciTokens
/// library: a token that expired ten seconds ago is refused (a leeway of
/// 60 s let it through); a leeway set by the site lets it through again.
#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn no_leeway_by_default() {
    let iss = TestIssuer::new(ISSUER);
    let mut c = iss.claims("storage.read:/");
    c["iat"] = json!(now() - 600);
    c["nbf"] = json!(now() - 600);
    c["exp"] = json!(now() - 10);
    let token = iss.es256(&c);
    let v = validator(&iss, &[AUDIENCE]);
    assert_eq!(v.validate(&token), Err(TokenError::Expired));
    let mut config = TokenConfig::new(vec![iss.arg().parse().unwrap()]);
    config.audiences = vec![AUDIENCE.to_string()];
    config.leeway = std::time::Duration::from_secs(30);
    let lenient = TokenValidator::new(config).unwrap();
    assert!(lenient.validate(&token).is_ok());
}
