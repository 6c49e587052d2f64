//! Text whose secrets an encoding hides from the patterns: percent-encoding in URLs and
//! form bodies.

/// `text` with its `%XX` escapes (and `+` as a blank) decoded, when it has any and the
/// result is text.
pub(super) fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut escapes = 0;
    let mut at = 0;
    while at < bytes.len() {
        let hex = |byte: u8| char::from(byte).to_digit(16);
        match bytes[at] {
            b'%' => {
                let high = bytes.get(at + 1).and_then(|byte| hex(*byte));
                let low = bytes.get(at + 2).and_then(|byte| hex(*byte));
                if let (Some(high), Some(low)) = (high, low) {
                    out.push(u8::try_from(high * 16 + low).ok()?);
                    escapes += 1;
                    at += 3;
                    continue;
                }
                out.push(b'%');
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        at += 1;
    }
    if escapes == 0 {
        return None;
    }
    String::from_utf8(out).ok()
}
