//! A server-sent-events decoder (the WHATWG "event stream" parsing rules),
//! fed with arbitrary byte chunks as they come off the socket.
//!
//! Handles events split across chunks at any byte, `\n`, `\r\n` and `\r`
//! line ends (also a `\r\n` split between two chunks), multi-line `data:`,
//! comment lines (`: keep-alive`), fields without a value, and UTF-8 split
//! across chunks (lines are cut on ASCII bytes only, then decoded whole).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `"message"` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("event stream line is not valid UTF-8")]
    InvalidUtf8,
    #[error("event stream line longer than {0} bytes")]
    LineTooLong(usize),
}

/// Longest line accepted; a bound so a broken server cannot grow memory
/// without limit. Tool arguments stream as many small events, so 8 MiB is
/// far above any legitimate single line.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a leading `\n` belongs to it.
    pending_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = bytes;
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while !rest.is_empty() {
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                None => {
                    self.extend_line(rest)?;
                    break;
                }
                Some(end) => {
                    self.extend_line(&rest[..end])?;
                    let line = std::mem::take(&mut self.line);
                    self.process_line(&line, out)?;
                    if rest[end] == b'\r' {
                        match rest.get(end + 1) {
                            Some(b'\n') => rest = &rest[end + 2..],
                            Some(_) => rest = &rest[end + 1..],
                            None => {
                                self.pending_cr = true;
                                rest = &[];
                            }
                        }
                    } else {
                        rest = &rest[end + 1..];
                    }
                }
            }
        }
        Ok(())
    }

    /// End of input. The standard drops an event not closed by a blank
    /// line; we dispatch it instead, because some OpenAI-compatible servers
    /// close the connection right after their last `data:` line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > MAX_LINE {
            return Err(SseError::LineTooLong(MAX_LINE));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        if line.starts_with(':') {
            return Ok(()); // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter to reconnecting browsers, not to us.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event: event.unwrap_or_else(|| "message".to_string()),
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], cut: usize) -> Vec<SseEvent> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        for piece in input.chunks(cut.max(1)) {
            dec.push(piece, &mut out).expect("valid");
        }
        dec.finish(&mut out).expect("valid");
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn any_split_gives_the_same_events() {
        let input = "event: a\r\ndata: {\"x\":\"é😀\"}\r\n\r\n: ping\n\ndata: line1\ndata: line2\n\nevent:b\rdata\r\rdata:  two spaces\n\n";
        let expected = vec![
            ev("a", "{\"x\":\"é😀\"}"),
            ev("message", "line1\nline2"),
            ev("b", ""),
            ev("message", " two spaces"),
        ];
        for cut in 1..input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), cut),
                expected,
                "cut every {cut} bytes"
            );
        }
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.push(b"data: a\r", &mut out).expect("ok");
        dec.push(b"\n\r", &mut out).expect("ok");
        dec.push(b"\ndata: b\n\n", &mut out).expect("ok");
        assert_eq!(out, vec![ev("message", "a"), ev("message", "b")]);
    }

    #[test]
    fn unterminated_last_event_is_dispatched_at_eof() {
        assert_eq!(
            decode_in_pieces(b"data: [DONE]", 4),
            vec![ev("message", "[DONE]")]
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        assert_eq!(
            dec.push(b"data: \xff\xfe\n\n", &mut out),
            Err(SseError::InvalidUtf8)
        );
    }
}
