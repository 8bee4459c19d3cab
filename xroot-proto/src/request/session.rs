//! Session requests: protocol, login, auth, bind, endsess, ping, set and
//! sigver (PROTOCOL.md §5).

use crate::error::DecodeError;
use crate::limits::MAX_SIGNATURE;

use super::params::until_nul;

wire_newtype! {
    /// `ClientProtocolRequest::flags` (byte 8), `RequestFlags` in XProtocol.hh
    /// (PROTOCOL.md §5.1).
    flags ProtocolFlags(u8);
    /// Return the security (signing) requirements.
    SECREQS = 0x01 => "kXR_secreqs";
    /// The client can do TLS.
    ABLE_TLS = 0x02 => "kXR_ableTLS";
    /// Switch this connection to TLS now.
    WANT_TLS = 0x04 => "kXR_wantTLS";
    /// Return the bind-interface preferences.
    BIFREQS = 0x08 => "kXR_bifreqs";
}

wire_newtype! {
    /// `ClientProtocolRequest::expect` (byte 9): what the client will send next
    /// (`ExpectFlags`, low nibble, PROTOCOL.md §5.1).
    code Expect(u8);
    NONE = 0x00 => "kXR_ExpNone";
    /// A substream about to send `kXR_bind`.
    BIND = 0x01 => "kXR_ExpBind";
    GPF = 0x02 => "kXR_ExpGPF";
    /// A main stream about to log in (what XrdCl sends).
    LOGIN = 0x03 => "kXR_ExpLogin";
    /// A third-party-copy context.
    TPC = 0x04 => "kXR_ExpTPC";
    GPFA = 0x08 => "kXR_ExpGPFA";
}

impl Expect {
    /// The low nibble, which is what the server looks at (`kXR_ExpMask`).
    #[doc(alias = "kXR_ExpMask")]
    pub const fn kind(self) -> Expect {
        Expect(self.0 & 0x0f)
    }
}

simple_request! {
    /// `kXR_protocol` (3006): version and capability exchange, sent right
    /// after the handshake (`ClientProtocolRequest`, PROTOCOL.md §5.1). XrdCl
    /// sends `clientpv` 0x520 (0x511 for 5.5), `flags` secreqs|bifreqs and
    /// `expect` Login or Bind.
    Protocol = PROTOCOL "kXR_protocol" {
        /// The client's protocol version (bytes 4-7), e.g. 0x511 for 5.1.1.
        clientpv: u32 = 4,
        /// What the server should return (byte 8).
        flags: ProtocolFlags = 8,
        /// What the client sends next (byte 9).
        expect: Expect = 9,
    }
}

wire_newtype! {
    /// `ClientLoginRequest::ability` (byte 17), `XLoginAbility` (PROTOCOL.md
    /// §5.2). XrdCl sends `FULLURL | READRDOK | LCLFILE | REDIRFLAGS` (0xC5)
    /// plus IP bits.
    flags LoginAbility(u8);
    /// Includes [`LoginAbility::FULLURL`].
    MULTIPR = 3 => "kXR_multipr";
    FULLURL = 1 => "kXR_fullurl";
    READRDOK = 4 => "kXR_readrdok";
    HASIPV64 = 8 => "kXR_hasipv64";
    ONLYPRV4 = 16 => "kXR_onlyprv4";
    ONLYPRV6 = 32 => "kXR_onlyprv6";
    LCLFILE = 64 => "kXR_lclfile";
    REDIRFLAGS = 128 => "kXR_redirflags";
}

wire_newtype! {
    /// `ClientLoginRequest::ability2` (byte 16), `XLoginAbility2`.
    flags LoginAbility2(u8);
    ECREDIR = 1 => "kXR_ecredir";
}

wire_newtype! {
    /// `ClientLoginRequest::capver` (byte 18): the login version in the low 6
    /// bits (`kXR_vermask`; 5 is the 2019 TLS-capable client) and the async
    /// capability bit (`XLoginCapVer`, PROTOCOL.md §5.2). XrdCl sends `0x85`.
    flags Capver(u8);
    ASYNCAP = 0x80 => "kXR_asyncap";
}

impl Capver {
    /// `version` (masked to 6 bits) with [`Capver::ASYNCAP`] if `asyncap`.
    pub const fn new(version: u8, asyncap: bool) -> Capver {
        Capver((version & 0x3f) | if asyncap { 0x80 } else { 0 })
    }

    /// The login version (`capver & kXR_vermask`). With version 0 the
    /// server returns no session id.
    #[doc(alias = "kXR_vermask")]
    pub const fn version(self) -> u8 {
        self.0 & 0x3f
    }
}

simple_request! {
    /// `kXR_login` (3007): names the client and opens a session
    /// (`ClientLoginRequest`, PROTOCOL.md §5.2).
    Login = LOGIN "kXR_login" {
        /// The client's process id (bytes 4-7).
        pid: i32 = 4,
        /// Bytes 8-15: NUL-padded, **not** necessarily NUL-terminated; see
        /// [`Login::username`] and [`Login::pack_username`].
        username: [u8; 8] = 8,
        /// Byte 16.
        ability2: LoginAbility2 = 16,
        /// Byte 17.
        ability: LoginAbility = 17,
        /// Byte 18.
        capver: Capver = 18,
    }
    payload
        /// An optional CGI string (`xrd.cc=..&xrd.tz=..&…`). The server parses
        /// it only if longer than 8 bytes and skips its **first byte**, so a
        /// client should start it with `&`.
        cgi => cgi_str;
}

impl Login {
    /// The user name: `username` up to its first NUL (all 8 bytes if none).
    pub fn username(&self) -> &[u8] {
        until_nul(&self.username)
    }

    /// `name` as the 8-byte field: truncated to 8 bytes, NUL-padded.
    pub fn pack_username(name: &str) -> [u8; 8] {
        let mut out = [0u8; 8];
        let n = name.len().min(8);
        out[..n].copy_from_slice(&name.as_bytes()[..n]);
        out
    }
}

simple_request! {
    /// `kXR_auth` (3000): one round of authentication (`ClientAuthRequest`,
    /// PROTOCOL.md §5.3). A server with no security layer rejects it after
    /// login with `kXR_InvalidRequest`.
    Auth = AUTH "kXR_auth" {
        /// Bytes 16-19: the 4-character protocol id (`"unix"`, `"host"`),
        /// NUL-padded; see [`Auth::credtype_name`].
        credtype: [u8; 4] = 16,
    }
    payload
        /// The credentials, e.g. `"unix\0user group\0"` for `unix`.
        credentials;
}

impl Auth {
    /// `credtype` up to its first NUL.
    pub fn credtype_name(&self) -> &[u8] {
        until_nul(&self.credtype)
    }
}

simple_request! {
    /// `kXR_bind` (3024): attaches this new connection to a logged-in session
    /// as a substream; sent after the handshake and `kXR_protocol`, without
    /// login (`ClientBindRequest`, PROTOCOL.md §5.4). The reply is one
    /// pathid byte.
    Bind = BIND "kXR_bind" {
        /// Bytes 4-19: the 16 opaque bytes of the main stream's login reply.
        sessid: [u8; 16] = 4,
    }
}

simple_request! {
    /// `kXR_endsess` (3023): ends an earlier session, e.g. the one a client
    /// had before it reconnected (`ClientEndsessRequest`, PROTOCOL.md §5.5).
    Endsess = ENDSESS "kXR_endsess" {
        /// Bytes 4-19: the session's 16 opaque bytes.
        sessid: [u8; 16] = 4,
    }
}

simple_request! {
    /// `kXR_ping` (3011): answered with an empty `kXR_ok`
    /// (`ClientPingRequest`, PROTOCOL.md §5.6).
    Ping = PING "kXR_ping" {}
}

simple_request! {
    /// `kXR_set` (3018): `appid <text>`, `monitor …` or `cache …`
    /// (`ClientSetRequest`, PROTOCOL.md §5.6).
    Set = SET "kXR_set" {
        /// Byte 19; should be zero.
        modifier: u8 = 19,
    }
    payload
        /// The command text.
        data => text;
}

wire_newtype! {
    /// `ClientSigverRequest::flags` (byte 7), `XSecFlags`.
    flags SigverFlags(u8);
    /// The next request's payload was not hashed.
    NODATA = 1 => "kXR_nodata";
}

wire_newtype! {
    /// `ClientSigverRequest::crypto` (byte 16), `XSecCrypto`: the hash in the
    /// low nibble plus the RSA-key bit.
    flags SigverCrypto(u8);
    SHA256 = 0x01 => "kXR_SHA256";
    RSA_KEY = 0x80 => "kXR_rsaKey";
}

impl SigverCrypto {
    /// The hash type (`crypto & kXR_HashMask`).
    #[doc(alias = "kXR_HashMask")]
    pub const fn hash(self) -> u8 {
        self.0 & 0x0f
    }
}

simple_request! {
    /// `kXR_sigver` (3029): the signature of the request that follows it,
    /// which must have id `expectrid`; it gets no response of its own
    /// (`ClientSigverRequest`, PROTOCOL.md §5.6). The hash covers `seqno`
    /// (8 bytes), the next request's 24-byte header and, unless
    /// [`SigverFlags::NODATA`], its payload.
    ///
    /// Decoding fails with [`DecodeError::LengthTooLarge`] for a signature
    /// over 64 bytes ([`MAX_SIGNATURE`]).
    Sigver = SIGVER "kXR_sigver" {
        /// Bytes 4-5: the id of the signed request that follows.
        expectrid: crate::codes::RequestId = 4,
        /// Byte 6: security version (`kXR_secver_0` = 0).
        version: u8 = 6,
        /// Byte 7.
        flags: SigverFlags = 7,
        /// Bytes 8-15: strictly increasing per session.
        seqno: u64 = 8,
        /// Byte 16.
        crypto: SigverCrypto = 16,
    }
    payload
        /// The signature, at most 64 bytes.
        signature;
    check Sigver::check_len;
}

impl Sigver {
    fn check_len(&self) -> Result<(), DecodeError> {
        if self.signature.len() > MAX_SIGNATURE {
            return Err(DecodeError::LengthTooLarge {
                what: "kXR_sigver signature",
                value: self.signature.len() as u64,
                max: MAX_SIGNATURE as u64,
            });
        }
        Ok(())
    }
}
