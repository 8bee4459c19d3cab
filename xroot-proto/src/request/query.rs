//! `kXR_query` (PROTOCOL.md §7.7).

use crate::header::FHandle;

wire_newtype! {
    /// `ClientQueryRequest::infotype` (bytes 4-5), `XQueryType`: what is asked.
    code QueryCode(u16);
    /// Statistics letters → XML.
    STATS = 1 => "kXR_QStats";
    /// Prepare status.
    PREP = 2 => "kXR_QPrep";
    /// `path[?cks.type=alg]` → `"<alg> <hex>\0"`.
    CKSUM = 3 => "kXR_Qcksum";
    /// Extended attributes of a path.
    XATTR = 4 => "kXR_Qxattr";
    /// Space usage → `oss.*` CGI text.
    SPACE = 5 => "kXR_Qspace";
    /// Cancel a checksum computation.
    CKSCAN = 6 => "kXR_Qckscan";
    /// Whitespace-separated keys → one `value\n` line per key; also how this
    /// project's extensions are negotiated ([`crate::ext`]).
    CONFIG = 7 => "kXR_Qconfig";
    /// By handle.
    VISA = 8 => "kXR_Qvisa";
    /// By handle.
    FINFO = 9 => "kXR_QFinfo";
    /// `path[?cgi]` → plugin text.
    FSINFO = 10 => "kXR_QFSinfo";
    OPAQUE = 16 => "kXR_Qopaque";
    OPAQUF = 32 => "kXR_Qopaquf";
    /// By handle.
    OPAQUG = 64 => "kXR_Qopaqug";
}

simple_request! {
    /// `kXR_query` (3001) (`ClientQueryRequest`, PROTOCOL.md §7.7). An empty
    /// `args` routes the query to the by-handle handler, where only
    /// [`QueryCode::FINFO`], [`QueryCode::OPAQUG`] and [`QueryCode::VISA`]
    /// are valid.
    Query = QUERY "kXR_query" {
        /// Bytes 4-5.
        infotype: QueryCode = 4,
        /// Bytes 8-11: the file of a by-handle query.
        fhandle: FHandle = 8,
    }
    payload
        /// The arguments: a path with CGI, keys, or text. Unlike other
        /// request payloads, the stock clients (xrdfs, XrdCl 5.5.3) end
        /// these with a NUL counted in `dlen` (seen in the golden vectors
        /// `query_config*` and `query_checksum`); a server strips it.
        args => args_str;
}
