//! Numbers in text as C's `strtoull(s, &end, 0)` reads them: the one reader the netfile
//! parser, the node-name-map reader and the `umad` tools' option parsing share.

/// C's `isspace` in the C locale.
pub fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `strtoull(s, &end, 0)`: the value and the number of bytes consumed (0 = no number).
pub fn strtoull(s: &[u8]) -> (u64, usize) {
    let mut i = 0;
    while i < s.len() && c_isspace(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digit = |b: u8, radix: u32| (b as char).to_digit(radix);
    let (radix, start) = if s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).is_some_and(|&b| digit(b, 16).is_some())
    {
        (16, i + 2)
    } else if s.get(i) == Some(&b'0') {
        (8, i)
    } else {
        (10, i)
    };
    let mut j = start;
    let mut value: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(j).and_then(|&b| digit(b, radix)) {
        match value
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        j += 1;
    }
    if j == start {
        return (0, 0);
    }
    if overflow {
        return (u64::MAX, j);
    }
    (if neg { value.wrapping_neg() } else { value }, j)
}
