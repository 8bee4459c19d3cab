//! The summary stream (`xrd.report`): one XML document per packet,
//! `<statistics tod=... ver=... src=... tos=... pgm=... ins=... pid=...
//! site=...>` holding a `<stats id="...">` element per section (`info`,
//! `buff`, `link`, `poll`, `proc`, `xrootd`, `ofs`, `oss`, `sched`,
//! `sgen`, a cache's `cache`), each of small elements of numbers.
//!
//! Sources: `XrdStats.cc` (the document and the `info`, `proc` and `sgen`
//! sections), `XrdLinkCtl.cc` / `XrdBuffer.cc` / `XrdScheduler.cc` /
//! `XrdPollE.cc` / `XrdXrootdStats.cc` / `XrdOfsStats.cc` (the others),
//! and packets of the stock 5.5.3 seen on loopback. PROTOCOL.md §17.7.
//!
//! [`Element`] reads and writes the small subset of XML these documents
//! use: elements, double-quoted attributes, text, and the five predefined
//! entities; no comments, processing instructions, CDATA or DTDs.

use std::borrow::Cow;
use std::fmt::Write;

use crate::error::DecodeError;

/// Deepest nesting [`Element::parse`] accepts (the stock's documents go 4
/// deep).
pub const MAX_DEPTH: usize = 16;
/// Most elements [`Element::parse`] accepts in one document.
pub const MAX_ELEMENTS: usize = 8192;

/// An XML element: its name, attributes, the text before its first child
/// (trimmed of nothing: as sent, entities decoded) and its children.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element<'a> {
    /// The tag name.
    pub name: Cow<'a, str>,
    /// Attributes in document order.
    pub attrs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The text directly inside the element, before and between its
    /// children, concatenated.
    pub text: Cow<'a, str>,
    /// Child elements in document order.
    pub children: Vec<Element<'a>>,
}

impl<'a> Element<'a> {
    /// An element with a name and nothing else.
    pub fn new(name: impl Into<Cow<'a, str>>) -> Element<'a> {
        Element {
            name: name.into(),
            ..Element::default()
        }
    }

    /// Adds an attribute (builder style).
    pub fn attr(mut self, k: impl Into<Cow<'a, str>>, v: impl Into<Cow<'a, str>>) -> Self {
        self.attrs.push((k.into(), v.into()));
        self
    }

    /// Adds a child (builder style).
    pub fn child(mut self, c: Element<'a>) -> Self {
        self.children.push(c);
        self
    }

    /// Adds a child `<name>value</name>` (builder style).
    pub fn leaf(self, name: &'a str, value: impl ToString) -> Self {
        let mut c = Element::new(name);
        c.text = Cow::Owned(value.to_string());
        self.child(c)
    }

    /// The value of attribute `k`.
    pub fn get_attr(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == k).map(|(_, v)| &**v)
    }

    /// The first child named `name`.
    pub fn find(&self, name: &str) -> Option<&Element<'a>> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The `<stats id="id">` child (a section of a summary document).
    pub fn section(&self, id: &str) -> Option<&Element<'a>> {
        self.children
            .iter()
            .find(|c| c.name == "stats" && c.get_attr("id") == Some(id))
    }

    /// The text of the descendant reached by `path` (child names), parsed
    /// as a number: `section("link")?.number(&["num"])`.
    pub fn number(&self, path: &[&str]) -> Option<i64> {
        let mut e = self;
        for p in path {
            e = e.find(p)?;
        }
        e.text.trim().parse().ok()
    }

    /// Parses a document: one root element, optionally preceded by an XML
    /// declaration and surrounded by whitespace and NULs. Errors
    /// ([`DecodeError::Malformed`]): anything else, an unclosed or
    /// mismatched tag, an unknown entity, nesting deeper than
    /// [`MAX_DEPTH`] or more than [`MAX_ELEMENTS`] elements. Memory: in
    /// proportion to the input.
    pub fn parse(doc: &'a str) -> Result<Element<'a>, DecodeError> {
        let mut p = Parser {
            s: doc,
            pos: 0,
            count: 0,
        };
        p.skip_ws();
        if p.rest().starts_with("<?") {
            let end = p
                .rest()
                .find("?>")
                .ok_or_else(|| bad("unclosed declaration"))?;
            p.pos += end + 2;
            p.skip_ws();
        }
        let root = p.element(0)?;
        p.skip_ws();
        if !p.rest().is_empty() {
            return Err(bad("content after the root element"));
        }
        Ok(root)
    }

    /// Writes the element, escaping text and attribute values, with no
    /// whitespace added.
    pub fn write(&self, out: &mut String) {
        let _ = write!(out, "<{}", self.name);
        for (k, v) in &self.attrs {
            let _ = write!(out, " {k}=\"");
            escape(v, true, out);
            out.push('"');
        }
        out.push('>');
        escape(&self.text, false, out);
        for c in &self.children {
            c.write(out);
        }
        let _ = write!(out, "</{}>", self.name);
    }

    /// The element written out ([`Element::write`]).
    pub fn to_xml(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

/// Appends `text` with `<`, `>` and `&` escaped, and in an attribute
/// value (`attr`) `"` too; quotes in text are left as they are, as the
/// stock server writes them (`<lp>"/"</lp>`).
pub fn escape(text: &str, attr: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' if attr => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

fn bad(detail: &str) -> DecodeError {
    DecodeError::malformed("summary XML", detail)
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    count: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn skip_ws(&mut self) {
        let r = self.rest();
        let t = r.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
        self.pos += r.len() - t.len();
    }

    fn name(&mut self) -> Result<&'a str, DecodeError> {
        let r = self.rest();
        let end = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
            .unwrap_or(r.len());
        if end == 0 {
            return Err(bad("expected a name"));
        }
        self.pos += end;
        Ok(&r[..end])
    }

    fn element(&mut self, depth: usize) -> Result<Element<'a>, DecodeError> {
        if depth >= MAX_DEPTH {
            return Err(bad("nested too deep"));
        }
        self.count += 1;
        if self.count > MAX_ELEMENTS {
            return Err(bad("too many elements"));
        }
        if !self.rest().starts_with('<') {
            return Err(bad("expected '<'"));
        }
        self.pos += 1;
        let name = self.name()?;
        let mut e = Element::new(name);
        loop {
            self.skip_ws();
            let r = self.rest();
            if let Some(tail) = r.strip_prefix("/>") {
                let _ = tail;
                self.pos += 2;
                return Ok(e);
            }
            if r.starts_with('>') {
                self.pos += 1;
                break;
            }
            let k = self.name()?;
            self.skip_ws();
            if !self.rest().starts_with("=\"") {
                return Err(bad("expected =\" after an attribute name"));
            }
            self.pos += 2;
            let end = self
                .rest()
                .find('"')
                .ok_or_else(|| bad("unclosed attribute"))?;
            let v = unescape(&self.rest()[..end])?;
            self.pos += end + 1;
            e.attrs.push((Cow::Borrowed(k), v));
        }
        let mut text: Cow<'a, str> = Cow::Borrowed("");
        loop {
            let r = self.rest();
            let lt = r.find('<').ok_or_else(|| bad("unclosed element"))?;
            if lt > 0 {
                let t = unescape(&r[..lt])?;
                text = if text.is_empty() {
                    t
                } else {
                    Cow::Owned(format!("{text}{t}"))
                };
                self.pos += lt;
            }
            if self.rest().starts_with("</") {
                self.pos += 2;
                let close = self.name()?;
                if close != name {
                    return Err(bad("mismatched closing tag"));
                }
                self.skip_ws();
                if !self.rest().starts_with('>') {
                    return Err(bad("expected '>'"));
                }
                self.pos += 1;
                e.text = text;
                return Ok(e);
            }
            let c = self.element(depth + 1)?;
            e.children.push(c);
        }
    }
}

fn unescape(s: &str) -> Result<Cow<'_, str>, DecodeError> {
    if !s.contains('&') {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let semi = rest[i..]
            .find(';')
            .ok_or_else(|| bad("unterminated entity"))?;
        out.push(match &rest[i + 1..i + semi] {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => return Err(bad("unknown entity")),
        });
        rest = &rest[i + semi + 1..];
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}
