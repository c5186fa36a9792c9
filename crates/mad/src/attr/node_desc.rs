//! NodeDescription (SMP attribute 0x10, IBA Vol 1, 14.2.5.2): 64 bytes of
//! text, NUL-padded.

use std::borrow::Cow;

use core::fmt;

use crate::bytes;
use crate::Result;

/// NodeDescription, parsed.
///
/// The raw 64 bytes are kept, so `emit` reproduces the input even when the
/// text is not UTF-8 or has bytes after the first NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeDescription {
    raw: [u8; 64],
}

impl NodeDescription {
    /// Size of NodeDescription on the wire.
    pub const LEN: usize = 64;

    /// A description holding `text`, truncated to 64 bytes (at a character
    /// boundary) and NUL-padded.
    pub fn new(text: &str) -> NodeDescription {
        let mut end = text.len().min(Self::LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut raw = [0u8; 64];
        raw[..end].copy_from_slice(&text.as_bytes()[..end]);
        NodeDescription { raw }
    }

    /// A description from its raw bytes.
    pub const fn from_raw(raw: [u8; 64]) -> NodeDescription {
        NodeDescription { raw }
    }

    /// Parses the first [`NodeDescription::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<NodeDescription> {
        Ok(NodeDescription {
            raw: *bytes::array::<{ Self::LEN }>(buf)?,
        })
    }

    /// Bytes [`NodeDescription::emit`] writes: [`NodeDescription::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the raw 64 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`NodeDescription::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        *bytes::array_mut::<{ Self::LEN }>(buf) = self.raw;
    }

    /// The raw 64 bytes.
    pub const fn as_bytes(&self) -> &[u8; 64] {
        &self.raw
    }

    /// The bytes up to (not including) the first NUL.
    pub fn text_bytes(&self) -> &[u8] {
        let end = self.raw.iter().position(|&b| b == 0).unwrap_or(Self::LEN);
        &self.raw[..end]
    }

    /// The text up to the first NUL, with invalid UTF-8 replaced by U+FFFD.
    pub fn as_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.text_bytes())
    }
}

impl Default for NodeDescription {
    fn default() -> Self {
        NodeDescription { raw: [0; 64] }
    }
}

impl fmt::Display for NodeDescription {
    /// The text as [`NodeDescription::as_str`] returns it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl fmt::Debug for NodeDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeDescription({:?})", self.as_str())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::check_round_trip;

    #[test]
    fn test_deconstruct() {
        let mut raw = [0u8; 64];
        raw[..20].copy_from_slice(b"Switch1 ibsim switch");
        raw[40] = b'x'; // junk after the NUL is kept but not shown
        let nd = NodeDescription::parse(&raw).unwrap();
        assert_eq!(nd.as_str(), "Switch1 ibsim switch");
        assert_eq!(nd.to_string(), "Switch1 ibsim switch");
        assert_eq!(nd.text_bytes(), b"Switch1 ibsim switch");
        assert_eq!(nd.as_bytes(), &raw);
        assert_eq!(
            format!("{nd:?}"),
            "NodeDescription(\"Switch1 ibsim switch\")"
        );
        let mut out = [0u8; 64];
        nd.emit(&mut out);
        assert_eq!(out, raw);
    }

    #[test]
    fn test_construct() {
        let nd = NodeDescription::new("Hca1 HCA-1");
        let mut expected = [0u8; 64];
        expected[..10].copy_from_slice(b"Hca1 HCA-1");
        assert_eq!(nd.as_bytes(), &expected);
        assert_eq!(nd.buffer_len(), 64);
        assert_eq!(NodeDescription::default().as_str(), "");
    }

    #[test]
    fn test_full_and_truncated_text() {
        let full = NodeDescription::from_raw([b'a'; 64]);
        assert_eq!(full.as_str().len(), 64);
        let long = "é".repeat(40); // 80 bytes; 64 is a char boundary
        assert_eq!(NodeDescription::new(&long).as_str().len(), 64);
        let odd = format!("x{}", "é".repeat(40)); // boundary at 63
        let nd = NodeDescription::new(&odd);
        assert_eq!(nd.text_bytes().len(), 63);
        assert_eq!(nd.as_bytes()[63], 0);
    }

    #[test]
    fn test_invalid_utf8() {
        let mut raw = [0u8; 64];
        raw[..3].copy_from_slice(&[b'a', 0xff, b'b']);
        let nd = NodeDescription::from_raw(raw);
        assert_eq!(nd.as_str(), "a\u{fffd}b");
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            NodeDescription::LEN,
            NodeDescription::parse,
            NodeDescription::emit,
            77,
        );
    }
}
