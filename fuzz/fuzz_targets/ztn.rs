#![no_main]
//! What a `ztn` client hands a server before it is authenticated: the
//! `kXR_auth` credential (`decode_credential`) and the JWT inside it
//! (`TokenValidator::validate`, against a fixed ES256 key set read from a
//! file, no network), and the login reply's `ztn` parameters a server
//! hands a client (`LoginParams::parse`). None may panic; a token that
//! decodes encodes back to a credential that decodes to the same token.
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use xroot_sec::ztn::{decode_credential, encode_credential, LoginParams};
use xroot_server::token::{TokenConfig, TokenValidator};

/// A P-256 public key; no token the fuzzer makes will verify against it,
/// but every step before the signature check runs.
const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"207SKz6JyNEioHKimj7z8IA0Uxl-qMtMCgdAIphIE0c","y":"zIi2r3QHY879MUY5F2UnnxSIeG8r-DZfLR_QiXtGIRQ"}]}"#;

fn validator() -> &'static TokenValidator {
    static V: OnceLock<TokenValidator> = OnceLock::new();
    V.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("ztn-fuzz-{}.jwks", std::process::id()));
        std::fs::write(&path, JWKS).unwrap();
        let issuer = format!("https://fuzz.example={}", path.display());
        let mut config = TokenConfig::new(vec![issuer.parse().unwrap()]);
        config.audiences = vec!["https://fuzz.example".into()];
        TokenValidator::new(config).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = LoginParams::parse(data);
    if let Ok(token) = decode_credential(data) {
        if let Ok(cred) = encode_credential(token, 1 << 15) {
            assert_eq!(decode_credential(&cred).unwrap(), token);
        }
        assert!(validator().validate(token).is_err());
    }
    if let Ok(text) = std::str::from_utf8(data) {
        assert!(validator().validate(text).is_err());
    }
});
